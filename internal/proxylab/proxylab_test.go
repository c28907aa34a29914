package proxylab

import (
	"errors"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/internal/netlab"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// require skips where the lab cannot run and returns the current kube-proxy.
func require(t *testing.T) string {
	t.Helper()
	if err := Available(); err != nil {
		t.Skip(err)
	}
	kp, _, err := KubeProxyBinary(EnvKubeProxy)
	if errors.Is(err, ErrNoBinary) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// scenario: a client Pod on n1, the backend on backendNode, the LB straight to the Pod.
func scenario(kp string, mode Mode, ipMode corev1.LoadBalancerIPMode, backendNode string, proxy ProxyProtocol) Scenario {
	node := func(name string) netlab.Node {
		return netlab.Node{Name: name, Intercept: netlab.InterceptExternal, BridgeNetfilter: true}
	}
	return Scenario{
		KubeProxy: kp, Mode: mode, IPMode: ipMode, LBProxy: proxy, BackendExpects: proxy,
		Net: netlab.Scenario{
			Nodes:   []netlab.Node{node("n1"), node("n2")},
			Pods:    []netlab.Pod{{Name: "client", Node: "n1", Hairpin: true}, {Name: "backend", Node: backendNode, Hairpin: true}},
			Service: netlab.Service{Endpoint: "backend", ExternalServer: true},
			LB:      netlab.LoadBalancer{Backend: netlab.BackendDirectToPod},
			Client:  "client",
		},
	}
}

func transparent(sc Scenario) Scenario {
	sc.LBTransparent = true
	return sc
}

// TestBothDirections is the cases of the failure in both directions, in both modes: a
// PROXY-protocol backend behind an intercepting node (no header: rejected), the same through
// the LB (works, the header names the client), and the loop (no SNAT, same node), with a
// kernel-DNAT LB and with a transparent HAProxy that sends a header (on another node it
// works, the client's address both as the TCP peer and in the header).
func TestBothDirections(t *testing.T) {
	kp := require(t)
	for _, mode := range []Mode{ModeIPTables, ModeNFTables} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			cases := []struct {
				name string
				sc   Scenario
				want func(Result) bool
			}{
				{"vip/proxy-backend/rejected", scenario(kp, mode, corev1.LoadBalancerIPModeVIP, "n2", ProxyV2),
					func(r Result) bool { return r.Failure == FailureProtocolError && !r.ReachedLB }},
				{"proxy/proxy-backend/works", scenario(kp, mode, corev1.LoadBalancerIPModeProxy, "n2", ProxyV2),
					func(r Result) bool {
						return r.Connected && r.ReachedLB && r.PeerOrigin.Kind == netlab.OriginLB && r.HeaderSourceOrigin == netlab.Origin{Kind: netlab.OriginPod, Name: "client"}
					}},
				{"proxy/no-snat/same-node/loops", scenario(kp, mode, corev1.LoadBalancerIPModeProxy, "n1", ProxyNone),
					func(r Result) bool { return r.Failure == FailureLoop && r.ReachedLB }},
				// A PROXY header without source NAT: HAProxy as a transparent proxy.
				{"proxy/transparent/other-node/works", transparent(scenario(kp, mode, corev1.LoadBalancerIPModeProxy, "n2", ProxyV2)),
					func(r Result) bool {
						client := netlab.Origin{Kind: netlab.OriginPod, Name: "client"}
						return r.Connected && r.ReachedLB && r.PeerOrigin == client && r.HeaderSourceOrigin == client
					}},
				{"proxy/transparent/same-node/loops", transparent(scenario(kp, mode, corev1.LoadBalancerIPModeProxy, "n1", ProxyV1)),
					func(r Result) bool { return r.Failure == FailureLoop && r.ReachedLB }},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					l, err := Build(t.Context(), c.sc)
					if err != nil {
						t.Fatal(err)
					}
					defer func() {
						if err := l.Close(); err != nil {
							t.Error(err)
						}
					}()
					r := l.Connect(t.Context())
					t.Logf("%v", r)
					if !c.want(r) {
						t.Errorf("unexpected: %v\n%s", r, l.Logs())
					}
				})
			}
		})
	}
}

// TestSetIPMode switches one lab's Service between the paths, as the real-proxy cases of
// internal/dataplane do: after each switch every kube-proxy has followed, and the next
// connection takes the new path (a PROXY-protocol backend on the other node: rejected when the
// node intercepts, served through the LB), whatever the connections before it did.
func TestSetIPMode(t *testing.T) {
	kp := require(t)
	l, err := Build(t.Context(), scenario(kp, ModeIPTables, corev1.LoadBalancerIPModeVIP, "n2", ProxyV2))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}()
	for i, step := range []struct {
		ipMode corev1.LoadBalancerIPMode
		want   func(Result) bool
	}{
		{corev1.LoadBalancerIPModeVIP, func(r Result) bool { return r.Failure == FailureProtocolError && !r.ReachedLB }},
		{corev1.LoadBalancerIPModeProxy, func(r Result) bool { return r.Connected && r.ReachedLB }},
		{corev1.LoadBalancerIPModeVIP, func(r Result) bool { return r.Failure == FailureProtocolError && !r.ReachedLB }},
	} {
		if i > 0 {
			if err := l.SetIPMode(t.Context(), step.ipMode); err != nil {
				t.Fatal(err)
			}
		}
		for _, node := range []string{"n1", "n2"} {
			programmed, err := l.LBProgrammed(t.Context(), node)
			if err != nil {
				t.Fatal(err)
			}
			if want := step.ipMode == corev1.LoadBalancerIPModeVIP; programmed != want {
				t.Errorf("step %d (%s): node %s has the LB address programmed: %v, want %v", i, step.ipMode, node, programmed, want)
			}
		}
		if r := l.Connect(t.Context()); !step.want(r) {
			t.Errorf("step %d (%s): unexpected: %v\n%s", i, step.ipMode, r, l.Logs())
		}
	}
}
