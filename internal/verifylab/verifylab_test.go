package verifylab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/adapters/verify"
	"github.com/loopguard/loopguard/adapters/verify/probe"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
	"github.com/loopguard/loopguard/internal/netlab"
	"github.com/loopguard/loopguard/internal/proxylab"
)

func TestMain(m *testing.M) { os.Exit(proxylab.Main(m)) }

const (
	clientNode = "n1"
	otherNode  = "n2"
	clientPod  = "client"
	backendPod = "backend"
)

// scenario is one client placement against one exposure, built with real parts.
type scenario struct {
	name   string
	ipMode corev1.LoadBalancerIPMode
	// lbSNAT: the LB replaces the client's address (kernel MASQUERADE, or HAProxy connecting
	// from its own address when it sends a header).
	lbSNAT bool
	// backendNode is where the backend runs; the client is always on n1, so n1 is "a node
	// holding a backend" and n2 "a node holding none" in verify's terms.
	backendNode string
	// header is what the backend requires, and the LB sends.
	header proxylab.ProxyProtocol
	// nodePortLocal: the LB sends to the backend node's NodePort under externalTrafficPolicy
	// Local, instead of straight to the Pod.
	nodePortLocal bool
	// want is what the probe must see, asserted on its own besides the agreement with the
	// model, so that a model and a probe wrong the same way still fail.
	want verify.Behaviour
}

// scenarios cover both failure directions and their fixes, from both placements, direct to
// Pod (the binding where the LB's pick is the backend's node itself) and, for the loop, through
// the backend node's NodePort under externalTrafficPolicy Local.
var scenarios = []scenario{
	// The loop: an LB that keeps the client's address, landing on the client's node.
	{name: "loop/kernel-lb/client-on-backend-node", ipMode: corev1.LoadBalancerIPModeProxy, backendNode: clientNode, want: verify.Loops},
	{name: "loop/kernel-lb/client-on-other-node", ipMode: corev1.LoadBalancerIPModeProxy, backendNode: otherNode, want: verify.Works},
	{name: "loop/kernel-lb/nodeport-local/client-on-backend-node", ipMode: corev1.LoadBalancerIPModeProxy, backendNode: clientNode, nodePortLocal: true, want: verify.Loops},
	{name: "loop/kernel-lb/nodeport-local/client-on-other-node", ipMode: corev1.LoadBalancerIPModeProxy, backendNode: otherNode, nodePortLocal: true, want: verify.Works},
	{name: "loop/transparent-proxy-lb/client-on-backend-node", ipMode: corev1.LoadBalancerIPModeProxy, backendNode: clientNode, header: proxylab.ProxyV1, want: verify.Loops},
	// Its fixes: LB source NAT, or ipMode VIP (the node answers for the LB).
	{name: "fix/lb-snat/client-on-backend-node", ipMode: corev1.LoadBalancerIPModeProxy, lbSNAT: true, backendNode: clientNode, want: verify.Works},
	{name: "fix/ipmode-vip/client-on-backend-node", ipMode: corev1.LoadBalancerIPModeVIP, backendNode: clientNode, want: verify.Works},
	// The other direction: ipMode VIP skips the LB's PROXY header, and the backend requires it.
	{name: "proxy-header/ipmode-vip/client-on-backend-node", ipMode: corev1.LoadBalancerIPModeVIP, lbSNAT: true, backendNode: clientNode, header: proxylab.ProxyV2, want: verify.ProtocolError},
	{name: "proxy-header/ipmode-vip/client-on-other-node", ipMode: corev1.LoadBalancerIPModeVIP, lbSNAT: true, backendNode: otherNode, header: proxylab.ProxyV1, want: verify.ProtocolError},
	// Its fix: ipMode Proxy sends the connection through the LB, which adds the header.
	{name: "fix/ipmode-proxy/proxy-header/client-on-backend-node", ipMode: corev1.LoadBalancerIPModeProxy, lbSNAT: true, backendNode: clientNode, header: proxylab.ProxyV2, want: verify.Works},
}

// exposure is what a dialect fills for the scenario (as internal/dataplane's real-component
// cases do): kube-proxy intercepts the LB address exactly when ipMode is VIP, the LB replaces
// the source when it SNATs, the backend needs the header the LB sends.
func (s *scenario) exposure(mode core.ProxyMode) *core.Exposure {
	h := core.HairpinFacts{Dataplane: core.DataplaneKubeProxy, SelfMasquerade: core.Yes, Attachment: core.AttachmentBridge, BridgeHairpin: core.Yes, BridgeNetfilter: core.Yes}
	e := &core.Exposure{
		Object:               core.ObjectRef{Kind: "Service", Namespace: "verifylab", Name: "svc"},
		Provider:             "netlab",
		Scope:                core.Private,
		Layer:                core.Layer4,
		Protocols:            core.TCP,
		Hairpin:              &h,
		Intercept:            dialect.FactOf(s.ipMode == corev1.LoadBalancerIPModeVIP),
		InterceptMasquerades: dialect.KubeProxyMasquerades(mode, s.policy()),
		LBSourceNAT:          dialect.FactOf(s.lbSNAT),
		ProxyProtocol:        dialect.FactOf(s.header != proxylab.ProxyNone),
		Binding:              core.DirectToPod,
		Placement: core.Placement{
			NodesBehindLB: 2,
			Backends:      []core.NodeBackends{{Node: s.backendNode, Count: 1}},
			Separated:     core.No,
		},
	}
	if s.nodePortLocal {
		e.Binding = core.NodePortLocal
	}
	switch s.header {
	case proxylab.ProxyV1:
		e.Needs.ProxyHeader, e.Needs.ProxyVersion = core.Yes, "v1"
	case proxylab.ProxyV2:
		e.Needs.ProxyHeader, e.Needs.ProxyVersion = core.Yes, "v2"
	default:
		e.Needs.ProxyHeader = core.No
	}
	return e
}

func (s *scenario) lab(kp string, mode proxylab.Mode) proxylab.Scenario {
	node := func(name string) netlab.Node {
		return netlab.Node{Name: name, Intercept: netlab.InterceptExternal, SelfMasquerade: true, BridgeNetfilter: true}
	}
	net := netlab.Scenario{
		Nodes:   []netlab.Node{node(clientNode), node(otherNode)},
		Pods:    []netlab.Pod{{Name: clientPod, Node: clientNode, Hairpin: true}, {Name: backendPod, Node: s.backendNode, Hairpin: true}},
		Service: netlab.Service{Endpoint: backendPod, ExternalServer: true, ExternalTrafficPolicy: netlab.TrafficPolicyCluster},
		Client:  clientPod,
		LB:      netlab.LoadBalancer{Backend: netlab.BackendDirectToPod, SourceNAT: s.lbSNAT && s.header == proxylab.ProxyNone},
	}
	if s.nodePortLocal {
		net.Service.ExternalTrafficPolicy = netlab.TrafficPolicyLocal
		net.LB.Backend, net.LB.TargetNode = netlab.BackendNodePort, s.backendNode
	}
	return proxylab.Scenario{KubeProxy: kp, Mode: mode, IPMode: s.ipMode, Net: net, LBProxy: s.header,
		LBTransparent: !s.lbSNAT && s.header != proxylab.ProxyNone, BackendExpects: s.header}
}

func (s *scenario) policy() corev1.ServiceExternalTrafficPolicy {
	if s.nodePortLocal {
		return corev1.ServiceExternalTrafficPolicyLocal
	}
	return corev1.ServiceExternalTrafficPolicyCluster
}

// connections per scenario: enough to see that a verdict is not a fluke, few enough that the
// loop cases (each waits out its connect or read timeout) stay cheap.
const connections = 3

func TestVerifyIPTables(t *testing.T) { testVerify(t, proxylab.ModeIPTables, core.ProxyModeIPTables) }
func TestVerifyNFTables(t *testing.T) { testVerify(t, proxylab.ModeNFTables, core.ProxyModeNFTables) }

func testVerify(t *testing.T, mode proxylab.Mode, coreMode core.ProxyMode) {
	label := fmt.Sprintf("verify (kube-proxy %%s %s)", mode)
	kp, version, err := proxylab.KubeProxyBinary(proxylab.EnvKubeProxy)
	if err == nil {
		err = proxylab.Available()
	}
	if err != nil {
		fmt.Printf(label+": 0 scenarios, 0 agree; all %d skipped: %v\n", "v1.37.2", len(scenarios), err)
		if errors.Is(err, proxylab.ErrNoBinary) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	label = fmt.Sprintf(label, version)
	var (
		mu                sync.Mutex
		ran, agree, wrong int
		outcomes          = map[probe.Outcome]int{}
	)
	start := time.Now()
	t.Run("scenario", func(t *testing.T) {
		for i := range scenarios {
			s := &scenarios[i]
			t.Run(s.name, func(t *testing.T) {
				t.Parallel()
				predicted := verify.Predict(s.exposure(coreMode), clientNode)
				l, err := proxylab.Build(t.Context(), s.lab(kp, mode))
				if err != nil {
					t.Fatalf("harness: %v", err)
				}
				defer func() {
					if err := l.Close(); err != nil {
						t.Errorf("harness: %v", err)
					}
				}()
				podNS := l.Net().PodNetns(clientPod)
				rep, err := probe.Run(t.Context(), probe.Spec{
					Targets:     []string{l.VIP().String()},
					Connections: connections,
					ProxyCheck:  true,
					Dial: func(ctx context.Context, network, address string) (c net.Conn, err error) {
						err = netlab.InNetns(podNS, func() error {
							var d net.Dialer
							c, err = d.DialContext(ctx, network, address)
							return err
						})
						return c, err
					},
				})
				if err != nil {
					t.Fatalf("probe: %v", err)
				}
				observed := verify.Observe(rep.Targets...)
				ok, why := verify.Agree(predicted, observed)
				t.Logf("predicted %+v; observed %+v; attempts %+v; proxy check %+v", predicted, observed, rep.Targets[0].Attempts, rep.Targets[0].ProxyCheck)
				mu.Lock()
				defer mu.Unlock()
				ran++
				for o, n := range observed.Counts {
					outcomes[o] += n
				}
				if ok {
					agree++
				} else {
					t.Errorf("model and probe disagree: %s\n%s", why, l.Logs())
				}
				if observed.Behaviour != s.want {
					wrong++
					t.Errorf("probe observed %s, the lab is built for %s (%s)", observed.Behaviour, s.want, why)
				}
			})
		}
	})
	var kinds []string
	for _, o := range probe.Outcomes {
		if outcomes[o] > 0 {
			kinds = append(kinds, fmt.Sprintf("%d %s", outcomes[o], o))
		}
	}
	fmt.Printf("%s: %d scenarios, %d agree, %d disagree, %d not what the lab was built for; connections: %s; wall %v\n",
		label, ran, agree, ran-agree, wrong, strings.Join(kinds, ", "), time.Since(start).Round(10*time.Millisecond))
}
