package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/loopguard/loopguard/adapters/verify"
	"github.com/loopguard/loopguard/internal/cluster"
	"github.com/loopguard/loopguard/internal/cluster/machinelb"
)

// lbNamespace holds the exposures LoadBalancer and Verify share.
const lbNamespace = "shop"

// exposure is one LoadBalancer Service of the shop namespace: how its load balancer forwards,
// what it declares to loopguard, and what must come of it.
type exposure struct {
	name        string
	annotations map[string]string
	targetPort  int32 // 8080 plain, 8081 PROXY protocol required
	// wantIPMode is the ipMode the status must carry once the CCM (the cloud, then loopguard's
	// decorator) wrote it.
	wantIPMode corev1.LoadBalancerIPMode
	// from each node: the connections' outcome, whether they reached the LB, and whose address
	// the backend saw (client: the client Pod's; router: the LB's own; node: an address of the
	// client's node's Pod range, the node's bridge; "" not checked); src is the PROXY header's.
	want map[string]path
	// verify: what loopguard predicts from the backend's node and from the other.
	verifyBackendNode, verifyOtherNode verify.Behaviour
}

type path struct {
	outcome    string
	reachedLB  bool
	peer, src  string
	whyInTable string
}

func private(m map[string]string) map[string]string {
	m["loopguard.io/lb-scope"] = "private"
	return m
}

// exposures are the cases of TESTING-style labs (the kernel lab's and HAProxy's), on real parts.
var exposures = []exposure{
	{
		// The loop: the LB keeps the client's address (kernel DNAT), the cloud publishes ipMode
		// Proxy, and loopguard cannot tell whether the backends need the LB, so the cloud's
		// Proxy stands (docs/ccm.md): kube-proxy leaves the address alone, a client on the
		// backend's node gets the backend's answer from an address it did not dial.
		name: "loop",
		annotations: private(map[string]string{machinelb.AnnotationForwarding: string(machinelb.DNAT),
			machinelb.AnnotationIPMode: "Proxy", "loopguard.io/lb-source-nat": "false"}),
		targetPort: 8080, wantIPMode: corev1.LoadBalancerIPModeProxy,
		want: map[string]path{
			backendNode: {outcome: "timeout", reachedLB: true},
			otherNode:   {outcome: "ok", reachedLB: true, peer: "client"},
		},
		verifyBackendNode: verify.Loops, verifyOtherNode: verify.Works,
	},
	{
		// The same, declared to need nothing from the LB: loopguard's decorator publishes
		// ipMode VIP over the cloud's Proxy, kube-proxy intercepts the address, and no
		// connection leaves the node for the LB.
		name: "vip",
		annotations: private(map[string]string{machinelb.AnnotationForwarding: string(machinelb.DNAT),
			machinelb.AnnotationIPMode: "Proxy", "loopguard.io/lb-source-nat": "false", "loopguard.io/backend-expects": "none"}),
		targetPort: 8080, wantIPMode: corev1.LoadBalancerIPModeVIP,
		want: map[string]path{
			backendNode: {outcome: "ok", reachedLB: false, peer: "node"},
			otherNode:   {outcome: "ok", reachedLB: false},
		},
		verifyBackendNode: verify.Works, verifyOtherNode: verify.Works,
	},
	{
		// The LB replaces the client's address (DNAT and MASQUERADE): through the LB from
		// anywhere, the backend sees the LB's address.
		name: "snat",
		annotations: private(map[string]string{machinelb.AnnotationForwarding: string(machinelb.DNATMasquerade),
			machinelb.AnnotationIPMode: "Proxy", "loopguard.io/lb-source-nat": "true"}),
		targetPort: 8080, wantIPMode: corev1.LoadBalancerIPModeProxy,
		want: map[string]path{
			backendNode: {outcome: "ok", reachedLB: true, peer: "router"},
			otherNode:   {outcome: "ok", reachedLB: true, peer: "router"},
		},
		verifyBackendNode: verify.Works, verifyOtherNode: verify.Works,
	},
	{
		// HAProxy with PROXY protocol v2 in front of a backend that requires it: the cloud
		// publishes no ipMode (the API server defaults it to VIP), loopguard's decorator
		// publishes Proxy (through-lb), so in-cluster clients reach the LB, which adds the
		// header naming them.
		name: "proxy",
		annotations: private(map[string]string{machinelb.AnnotationForwarding: string(machinelb.ProxyV2),
			"loopguard.io/lb-source-nat": "true", "loopguard.io/backend-expects": "proxy-protocol-v2"}),
		targetPort: 8081, wantIPMode: corev1.LoadBalancerIPModeProxy,
		want: map[string]path{
			backendNode: {outcome: "ok", reachedLB: true, peer: "router", src: "client"},
			otherNode:   {outcome: "ok", reachedLB: true, peer: "router", src: "client"},
		},
		verifyBackendNode: verify.Works, verifyOtherNode: verify.Works,
	},
	{
		// The same with loopguard turned off for the Service (loopguard.io/ignore): the
		// defaulted VIP stands, kube-proxy answers for the LB without the header, and the
		// backend closes every in-cluster connection: the other direction of the failure.
		name: "break",
		annotations: private(map[string]string{machinelb.AnnotationForwarding: string(machinelb.ProxyV2),
			"loopguard.io/lb-source-nat": "true", "loopguard.io/backend-expects": "proxy-protocol-v2", "loopguard.io/ignore": "true"}),
		targetPort: 8081, wantIPMode: corev1.LoadBalancerIPModeVIP,
		want: map[string]path{
			backendNode: {outcome: "closed", reachedLB: false},
			otherNode:   {outcome: "closed", reachedLB: false},
		},
		verifyBackendNode: verify.ProtocolError, verifyOtherNode: verify.ProtocolError,
	},
}

func (x exposure) service() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: lbNamespace, Name: x.name, Annotations: x.annotations},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer,
			// Local: the LB sends only to the backend's node (its health check), so every case
			// is deterministic: no connection is spread over nodes.
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Selector:              map[string]string{"app": "backend"},
			Ports:                 []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(x.targetPort)}},
		},
	}
}

// waitLB waits until the Service's status carries an address with the ipMode the case wants,
// the LB answers through its own path (a connection from the router, where the LB is), and
// every node's kube-proxy has the address programmed exactly when the ipMode is VIP.
func (e *clusterEnv) waitLB(t *testing.T, ns, name string, want corev1.LoadBalancerIPMode) string {
	t.Helper()
	var vip string
	eventually(t, ns+"/"+name+": ipMode "+string(want), 60*time.Second, func() (bool, string) {
		svc, err := e.kube.CoreV1().Services(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		in := svc.Status.LoadBalancer.Ingress
		if len(in) != 1 || in[0].IP == "" || in[0].IPMode == nil || *in[0].IPMode != want {
			return false, fmt.Sprintf("%+v", svc.Status.LoadBalancer)
		}
		vip = in[0].IP
		return true, ""
	})
	eventually(t, ns+"/"+name+": the LB at "+vip+" answers", 30*time.Second, func() (bool, string) {
		a := e.routerGet(t, vip+":80")
		return a.Outcome == "ok", fmt.Sprintf("%+v", a)
	})
	for _, node := range e.c.Nodes() {
		eventually(t, fmt.Sprintf("%s: kube-proxy on %s programs %s iff ipMode VIP", name, node, vip), 30*time.Second, func() (bool, string) {
			has := e.kubeProxyHas(t, node, vip)
			return has == (want == corev1.LoadBalancerIPModeVIP), fmt.Sprintf("programmed: %v", has)
		})
	}
	return vip
}

// routerGet is one HTTP request from the router namespace (the LB's own, where no kube-proxy
// runs): the load balancer's path, whatever the nodes do.
func (e *clusterEnv) routerGet(t *testing.T, addr string) attempt {
	ctx := t.Context()
	c, err := e.c.DialRouter(ctx, addr)
	if err != nil {
		return attempt{Outcome: "error", Error: err.Error()}
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.0\r\nHost: lb\r\n\r\n")
	b, err := io.ReadAll(c)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "loopguard-backend ") {
			return attempt{Outcome: "ok", Answer: l}
		}
	}
	return attempt{Outcome: "closed", Error: fmt.Sprint(err)}
}

// testLoadBalancer: each exposure's status, kube-proxy's rules and the packets of real client
// Pods on both nodes.
func (e *clusterEnv) testLoadBalancer(t *testing.T) {
	e.namespace(t, lbNamespace)
	e.backend(t, lbNamespace)
	for _, x := range exposures {
		if _, err := e.kube.CoreV1().Services(lbNamespace).Create(t.Context(), x.service(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// In parallel: each case has a load balancer of its own; the subtests end before this
	// function's t.Run returns.
	for _, x := range exposures {
		t.Run(x.name, func(t *testing.T) {
			t.Parallel()
			vip := e.waitLB(t, lbNamespace, x.name, x.wantIPMode)
			e.countSYNs(t, vip)
			for _, node := range []string{backendNode, otherNode} {
				want := x.want[node]
				before := e.syns(t, vip)
				attempts, clientIP := e.dialFrom(t, lbNamespace, node, vip+":80", 3)
				reached := e.syns(t, vip) > before
				t.Logf("from %s (client %s): %+v; reached the LB: %v", node, clientIP, attempts, reached)
				for _, a := range attempts {
					if a.Outcome != want.outcome {
						t.Errorf("from %s: outcome %s (%s), want %s", node, a.Outcome, a.Error, want.outcome)
						continue
					}
					if err := checkAddr(a.answerField("peer"), want.peer, clientIP, node); err != nil {
						t.Errorf("from %s: the backend's TCP peer: %v (answer %q)", node, err, a.Answer)
					}
					if err := checkAddr(a.answerField("src"), want.src, clientIP, node); err != nil {
						t.Errorf("from %s: the PROXY header's client: %v (answer %q)", node, err, a.Answer)
					}
				}
				if reached != want.reachedLB {
					t.Errorf("from %s: reached the LB = %v, want %v", node, reached, want.reachedLB)
				}
			}
		})
	}
}

// checkAddr checks an address the backend reported against what a case wants.
func checkAddr(got, want, clientIP, clientNode string) error {
	switch want {
	case "":
		return nil
	case "client":
		if got != clientIP {
			return fmt.Errorf("%s, want the client Pod's %s", got, clientIP)
		}
	case "router":
		if got != cluster.RouterAddr.String() {
			return fmt.Errorf("%s, want the LB's own address %s", got, cluster.RouterAddr)
		}
	case "node":
		a, err := netip.ParseAddr(got)
		node := map[string]int{"node1": 1, "node2": 2}[clientNode]
		pods := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(node), 0}), 24)
		if err != nil || !pods.Contains(a) {
			return fmt.Errorf("%s, want an address of %s's Pod range %s", got, clientNode, pods)
		}
	}
	return nil
}

// verifyReport is the part of `loopguard verify -o json` the test reads.
type verifyReport struct {
	Exposures []verify.ExposureReport `json:"exposures"`
	Summary   struct {
		Agree, Disagree, Errors int
	} `json:"summary"`
}

// testVerify runs `loopguard verify` over the shop namespace: real probe Pods on the backend's
// node and on the other, and every placement's observation must agree with loopguard's
// prediction, which must be the case's. It logs the table docs/verify.md shows.
func (e *clusterEnv) testVerify(t *testing.T) {
	stdout, stderr, code := e.cliRun(t, "verify", "-n", lbNamespace, "--all", "--image", cliImage, "--profile", e.profile,
		"--connections", "3", "--start-timeout", "90s", "-q", "-o", "json")
	var rep verifyReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("verify exit %d: %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
	if code != 0 {
		t.Errorf("verify exit code %d, want 0 (every placement agrees)\nstderr:\n%s", code, stderr)
	}
	byName := map[string]verify.ExposureReport{}
	for _, x := range rep.Exposures {
		byName[x.Object.Name] = x
	}
	var table strings.Builder
	table.WriteString("| exposure | client on | node | predicted | observed | connections | agree |\n|---|---|---|---|---|---|---|\n")
	for _, x := range exposures {
		got, ok := byName[x.name]
		if !ok {
			t.Errorf("%s: not in verify's report", x.name)
			continue
		}
		if got.Error != "" {
			t.Errorf("%s: %s", x.name, got.Error)
		}
		for _, p := range got.Placements {
			want := map[verify.Side]verify.Behaviour{verify.BackendNode: x.verifyBackendNode, verify.OtherNode: x.verifyOtherNode}[p.Side]
			obs := "-"
			counts := ""
			if p.Observed != nil {
				obs = string(p.Observed.Behaviour)
				var parts []string
				for outcome, n := range p.Observed.Counts {
					parts = append(parts, fmt.Sprintf("%d %s", n, outcome))
				}
				slices.Sort(parts)
				counts = strings.Join(parts, ", ")
			}
			fmt.Fprintf(&table, "| %s | %s | %s | %s | %s | %s | %v |\n", x.name, p.Side, p.Node, p.Predicted.Behaviour, obs, counts, p.Agree)
			if p.Predicted.Behaviour != want {
				t.Errorf("%s from %s: predicted %s, want %s (%s)", x.name, p.Side, p.Predicted.Behaviour, want, p.Why)
			}
			if !p.Agree || p.Error != "" {
				t.Errorf("%s from %s (%s): predicted %s, observed %s: %s %s", x.name, p.Side, p.Node, p.Predicted.Behaviour, obs, p.Why, p.Error)
			}
		}
	}
	t.Logf("verify against the real cluster (kube-proxy %s nftables):\n%s", cluster.KubernetesVersion, table.String())
}
