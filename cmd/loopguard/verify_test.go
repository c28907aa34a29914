package main

import (
	"encoding/json"
	"net"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loopguard/loopguard/adapters/verify"
	"github.com/loopguard/loopguard/adapters/verify/probe"
	"github.com/loopguard/loopguard/core"
)

// TestProbeCommand runs the hidden probe subcommand, as a probe Pod does, against a real
// listener and a closed port, and reads its JSON.
func TestProbeCommand(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Read(make([]byte, 4096))
			c.Write([]byte("HTTP/1.0 200 OK\r\n\r\n"))
			c.Close()
		}
	}()
	closed, _ := net.Listen("tcp4", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	closed.Close()

	stdout, stderr, code := runCLI(t, "", "probe", "--connections", "2", ln.Addr().String(), closedAddr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep probe.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if len(rep.Targets) != 2 || rep.Targets[0].Count(probe.OK) != 2 || rep.Targets[1].Count(probe.Refused) != 2 || len(rep.Targets[0].Attempts) != 2 {
		t.Errorf("report %+v", rep)
	}
	if _, stderr, code := runCLI(t, "", "probe", "--connections", "500", "a:1"); code != exitInput || !strings.Contains(stderr, "connections: 500") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

func TestVerifyUsage(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"names need a namespace": {[]string{"verify", "--image", "x", "checkout"}, "need -n NAMESPACE"},
		"no image":               {[]string{"verify"}, "--image is required"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, stderr, code := runCLI(t, "", tc.args...)
			if code != exitInput || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q, want 2 and %q", code, stderr, tc.want)
			}
		})
	}
}

// TestVerifyLive runs verify against a real API server holding the example's objects. Their
// Services have no LB address (no cloud controller writes status here), so there is nothing to
// probe: verify says so, exits 3 and creates no Pod. (The Pods' lifecycle is tested in
// adapters/verify, which plays the kubelet.)
func TestVerifyLive(t *testing.T) {
	lc := newLiveCluster(t)
	stdout, stderr, code := lc.run(t, "verify", "--all", "--image", "example.invalid/loopguard:test", "-o", "json")
	if code != exitBlocked {
		t.Fatalf("exit %d, want 3\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	var rep VerifyReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if rep.Kind != VerifyReportKind || len(rep.Exposures) == 0 || rep.Summary.Errors != len(rep.Exposures) {
		t.Fatalf("report %+v", rep)
	}
	for _, e := range rep.Exposures {
		if !strings.Contains(e.Error, "no address") {
			t.Errorf("%v: error %q", e.Object, e.Error)
		}
	}
	if _, stderr, code := lc.run(t, "verify", "--image", "x", "nosuch"); code != exitInput || !strings.Contains(stderr, `no LoadBalancer Service "nosuch"`) {
		t.Errorf("exit %d: %s", code, stderr)
	}
	c, err := kubernetes.NewForConfig(lc.cfg)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := c.CoreV1().Pods(lc.ns).List(t.Context(), metav1.ListOptions{LabelSelector: verify.LabelManagedBy + "=" + verify.ManagedBy})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("probe Pods: %v %v", pods, err)
	}
}

// TestVerifyRenderGolden renders a verify report the way a run on a cluster prints it: a loop
// seen from the backend's node, none from the other node, and a placement that could not run.
// docs/verify.md shows this output.
func TestVerifyRenderGolden(t *testing.T) {
	t.Chdir(repoRoot)
	e := &core.Exposure{
		Object: core.ObjectRef{Kind: "Service", Namespace: "shop", Name: "checkout"}, Provider: "kubernetes",
		Scope: core.Private, Layer: core.Layer4, Protocols: core.TCP, ProxyProtocol: core.No,
		Intercept: core.No, LBSourceNAT: core.No, Binding: core.DirectToPod,
		Placement: core.Placement{NodesBehindLB: 3, Backends: []core.NodeBackends{{Node: "node-a", Count: 1}}, Separated: core.No},
	}
	addr := "192.0.2.10:80"
	placement := func(side verify.Side, node string, counts map[probe.Outcome]int) verify.PlacementReport {
		p := verify.PlacementReport{Side: side, Node: node, Predicted: verify.Predict(e, node)}
		o := verify.Observe(probe.TargetReport{Target: addr, Counts: counts})
		p.Observed = &o
		p.Agree, p.Why = verify.Agree(p.Predicted, o)
		p.Path = verify.PathFor(e, node, "node-a", addr, p.Predicted)
		p.Mermaid = p.Path.Mermaid()
		return p
	}
	fixed := *e
	fixed.Object.Name, fixed.LBSourceNAT = "payments", core.Yes
	rep := VerifyReport{APIVersion: ReportAPIVersion, Kind: VerifyReportKind, Exposures: []verify.ExposureReport{
		{Object: e.Object, Addresses: []string{addr}, Assessment: core.RiskAtRisk, Placements: []verify.PlacementReport{
			placement(verify.BackendNode, "node-a", map[probe.Outcome]int{probe.Timeout: 5}),
			placement(verify.OtherNode, "node-b", map[probe.Outcome]int{probe.OK: 5}),
		}},
		{Object: fixed.Object, Addresses: []string{"192.0.2.11:443"}, Assessment: core.Assess(&fixed).Risk, Placements: []verify.PlacementReport{
			{Side: verify.BackendNode, Node: "node-a", Predicted: verify.Predict(&fixed, "node-a"), Path: verify.PathFor(&fixed, "node-a", "node-a", "192.0.2.11:443", verify.Predict(&fixed, "node-a")),
				Error: `probe Pod did not start: probe Pod shop/loopguard-verify-payments-x7k2p on node node-a: container probe: ErrImagePull: failed to pull image "ghcr.io/loopguard/loopguard:v0.1.0"`},
			{Side: verify.OtherNode, Error: "every node a probe Pod may run on holds a backend", Predicted: verify.Prediction{Behaviour: verify.Unpredicted}},
		}},
	}, Summary: VerifySummary{Exposures: 2, Agree: 2, Errors: 2}}
	var b strings.Builder
	if err := renderVerify(&b, "table", &rep, false); err != nil {
		t.Fatal(err)
	}
	golden(t, "verify.table", b.String())
	b.Reset()
	if err := renderVerify(&b, "yaml", &rep, false); err != nil {
		t.Fatal(err)
	}
	golden(t, "verify.yaml", b.String())
}
