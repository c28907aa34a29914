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
