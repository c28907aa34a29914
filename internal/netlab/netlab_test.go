package netlab

import (
	"flag"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	// Most cases wait out a client timeout rather than use the CPU, so run them all at once
	// unless the caller chose a -test.parallel of their own.
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", "32")
	}
	os.Exit(Main(m))
}

// twoNodes is the topology of TESTING.md §1: nodes n1 and n2 routed through the LB namespace,
// a client Pod and a backend Pod (the Service's only endpoint), the LB DNATing VIP:80 straight
// to backend:8080. externalTrafficPolicy is Local because the measured topology DNATed
// without masquerade, which is what kube-proxy does for Pod traffic to an LB IP under Local;
// TestBeyondTheTable shows what Cluster changes.
func twoNodes(net PodNetwork, bridgeNetfilter bool, intercept Intercept, clientNode, backendNode string) Scenario {
	return Scenario{
		Nodes: []Node{
			{Name: "n1", PodNetwork: net, BridgeNetfilter: bridgeNetfilter, Intercept: intercept, SelfMasquerade: true},
			{Name: "n2", PodNetwork: net, BridgeNetfilter: bridgeNetfilter, Intercept: intercept, SelfMasquerade: true},
		},
		Pods:    []Pod{{Name: "client", Node: clientNode}, {Name: "backend", Node: backendNode}},
		Service: Service{Endpoint: "backend", ExternalTrafficPolicy: TrafficPolicyLocal},
		Client:  "client",
	}
}

// ownService is a Pod calling its own Service's ClusterIP (DOMAIN.md §6, seed 002).
func ownService(net PodNetwork, bridgeNetfilter, selfMasquerade, hairpin bool) Scenario {
	return Scenario{
		Nodes:   []Node{{Name: "n1", PodNetwork: net, BridgeNetfilter: bridgeNetfilter, SelfMasquerade: selfMasquerade}},
		Pods:    []Pod{{Name: "app", Node: "n1", Hairpin: hairpin}},
		Service: Service{Endpoint: "app"},
		Client:  "app",
		Dial:    DialClusterIP,
	}
}

func with(sc Scenario, change func(*Scenario)) Scenario {
	sc.Nodes = slices.Clone(sc.Nodes)
	sc.Pods = slices.Clone(sc.Pods)
	change(&sc)
	return sc
}

var (
	clientPod = Origin{Kind: OriginPod, Name: "client"}
	lbAddress = Origin{Kind: OriginLB}
	node1     = Origin{Kind: OriginNode, Name: "n1"}
	node2     = Origin{Kind: OriginNode, Name: "n2"}
	bridge1   = Origin{Kind: OriginNodeBridge, Name: "n1"}
)

// want is an outcome: connected or not, the source the backend saw, who answered the SYN in
// place of the dialed address, and which node proxy carried the connection. Addresses and
// outcomes only, never packet counts (TESTING.md §1 pitfalls).
type want struct {
	connected     bool
	source        Origin
	stray         func(*Lab) []netip.AddrPort
	interceptedBy string
}

// fromBackend: the backend's own reply reached the client unchanged (backend:8080).
func fromBackend(l *Lab) []netip.AddrPort {
	return []netip.AddrPort{netip.AddrPortFrom(l.PodAddr(l.Scenario().Service.Endpoint), l.Scenario().Service.TargetPort)}
}

// fromNodePort: the reply was un-NATed on a node to its NodePort, then delivered locally.
func fromNodePort(node string) func(*Lab) []netip.AddrPort {
	return func(l *Lab) []netip.AddrPort {
		return []netip.AddrPort{netip.AddrPortFrom(l.NodeAddr(node), l.Scenario().Service.NodePort)}
	}
}

type labCase struct {
	name string
	sc   Scenario
	want want
}

// runCases runs each case in its own lab, all in parallel (with each other and with the other
// tests calling runCases): labs share nothing but the sandbox.
func runCases(t *testing.T, cases []labCase) {
	t.Parallel()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			Require(t)
			t.Parallel()
			ctx := t.Context()
			l, err := Build(ctx, c.sc)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := l.Close(); err != nil {
					t.Error(err)
				}
			}()
			r := l.Connect(ctx)
			t.Log(r)
			var bad []string
			if r.Connected != c.want.connected {
				bad = append(bad, "connected: got "+yes(r.Connected)+", want "+yes(c.want.connected))
			}
			if c.want.connected && r.Source != c.want.source {
				bad = append(bad, "source: got "+r.Source.String()+" ("+r.SourceSeen.String()+"), want "+c.want.source.String())
			}
			var wantStray []netip.AddrPort
			if c.want.stray != nil {
				wantStray = c.want.stray(l)
			}
			if !slices.Equal(r.StrayReplies, wantStray) {
				bad = append(bad, "SYN-ACKs from elsewhere: got "+fmtAddrs(r.StrayReplies)+", want "+fmtAddrs(wantStray))
			}
			if r.InterceptedBy != c.want.interceptedBy {
				bad = append(bad, "intercepted by: got "+quote(r.InterceptedBy)+", want "+quote(c.want.interceptedBy))
			}
			if len(bad) > 0 {
				t.Errorf("%s\n%s", strings.Join(bad, "\n"), r.Detail)
				t.Log(l.Dump(ctx))
			}
		})
	}
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func quote(s string) string { return `"` + s + `"` }

func fmtAddrs(a []netip.AddrPort) string {
	if len(a) == 0 {
		return "none"
	}
	var s []string
	for _, x := range a {
		s = append(s, x.String())
	}
	return strings.Join(s, ",")
}

// TestObservedOutcomes reproduces every row of TESTING.md §1 "Observed outcomes"; the row
// number is the subtest's prefix.
func TestObservedOutcomes(t *testing.T) {
	runCases(t, []labCase{
		// Row 1: LB DNAT, no SNAT, client on the backend's node: hangs until timeout; the
		// client gets a SYN-ACK from backend:8080 and answers RST (DOMAIN.md §1).
		{"row01/LB_DNAT_no_SNAT/client_on_backend_node/bridge",
			twoNodes(PodNetworkBridge, true, InterceptNone, "n1", "n1"),
			want{connected: false, stray: fromBackend}},
		{"row01/LB_DNAT_no_SNAT/client_on_backend_node/routed",
			twoNodes(PodNetworkRouted, true, InterceptNone, "n1", "n1"),
			want{connected: false, stray: fromBackend}},
		// Row 2: same, client on another node: works, backend sees the client Pod.
		{"row02/LB_DNAT_no_SNAT/client_on_other_node",
			twoNodes(PodNetworkBridge, true, InterceptNone, "n2", "n1"),
			want{connected: true, source: clientPod}},
		// Row 3: LB DNAT + SNAT: works, backend sees the LB address (DOMAIN.md §7).
		{"row03/LB_DNAT_and_SNAT/client_on_backend_node",
			with(twoNodes(PodNetworkBridge, true, InterceptNone, "n1", "n1"), func(s *Scenario) { s.LB.SourceNAT = true }),
			want{connected: true, source: lbAddress}},
		// Row 4: the node DNATs the VIP before routing (kube-proxy iptables): works, client Pod.
		{"row04/node_DNATs_VIP_iptables/bridge_netfilter_on",
			twoNodes(PodNetworkBridge, true, InterceptIPTables, "n1", "n1"),
			want{connected: true, source: clientPod}},
		{"row04/node_DNATs_VIP_iptables/routed",
			twoNodes(PodNetworkRouted, false, InterceptIPTables, "n1", "n1"),
			want{connected: true, source: clientPod}},
		// Row 5: same on a bridge node with bridge-nf-call-iptables=0: fails like row 1 (the
		// backend's reply is bridged straight to the client, never un-DNATed).
		{"row05/node_DNATs_VIP_iptables/bridge_netfilter_off",
			twoNodes(PodNetworkBridge, false, InterceptIPTables, "n1", "n1"),
			want{connected: false, stray: fromBackend}},
		// Row 6: node proxy on the VIP, VIP not local on the node: fails (the packet goes to
		// the LB, which lands it on the client's node: row 1 again; the proxy sees nothing).
		{"row06/node_proxy_VIP_not_local",
			twoNodes(PodNetworkBridge, true, InterceptProxyWithoutLocalVIP, "n1", "n1"),
			want{connected: false, stray: fromBackend}},
		// Row 7: node proxy, VIP bound to a local interface (IPVS style, stand-in): works, the
		// backend sees the address the node proxy dials from.
		{"row07/IPVSStandIn_VIP_on_kube-ipvs0/routed_same_node",
			twoNodes(PodNetworkRouted, false, InterceptIPVSStandIn, "n1", "n1"),
			want{connected: true, source: node1, interceptedBy: "n1"}},
		{"row07/IPVSStandIn_VIP_on_kube-ipvs0/bridge_other_node",
			twoNodes(PodNetworkBridge, true, InterceptIPVSStandIn, "n1", "n2"),
			want{connected: true, source: node1, interceptedBy: "n1"}},
		{"row07/IPVSStandIn_VIP_on_kube-ipvs0/bridge_same_node",
			twoNodes(PodNetworkBridge, true, InterceptIPVSStandIn, "n1", "n1"),
			want{connected: true, source: bridge1, interceptedBy: "n1"}},
		// Row 8: Pod → own Service without masquerade: fails; source = destination = the Pod
		// and the Pod's kernel drops it as a martian, so nothing answers at all.
		{"row08/own_Service_no_masquerade/bridge_hairpin_netfilter_on",
			ownService(PodNetworkBridge, true, false, true),
			want{connected: false}},
		{"row08/own_Service_no_masquerade/bridge_hairpin_netfilter_off",
			ownService(PodNetworkBridge, false, false, true),
			want{connected: false}},
		{"row08/own_Service_no_masquerade/routed",
			ownService(PodNetworkRouted, false, false, false),
			want{connected: false}},
		// Row 9: on a bridge with br_netfilter on, it needs BOTH masquerade and hairpin; the
		// backend sees the node's bridge address.
		{"row09/own_Service/bridge_netfilter_on/masquerade_and_hairpin",
			ownService(PodNetworkBridge, true, true, true),
			want{connected: true, source: Origin{Kind: OriginNodeBridge, Name: "n1"}}},
		{"row09/own_Service/bridge_netfilter_on/masquerade_without_hairpin",
			ownService(PodNetworkBridge, true, true, false),
			want{connected: false}},
		{"row09/own_Service/bridge_netfilter_on/hairpin_without_masquerade",
			ownService(PodNetworkBridge, true, false, true),
			want{connected: false}},
		// Row 10: routed node, or br_netfilter off: masquerade alone is enough; the backend
		// sees the address of the node interface the packet left by (the node's own address
		// when routed, its bridge address on a bridge).
		{"row10/own_Service_masquerade/routed",
			ownService(PodNetworkRouted, false, true, false),
			want{connected: true, source: Origin{Kind: OriginNode, Name: "n1"}}},
		{"row10/own_Service_masquerade/bridge_netfilter_off_no_hairpin",
			ownService(PodNetworkBridge, false, true, false),
			want{connected: true, source: Origin{Kind: OriginNodeBridge, Name: "n1"}}},
	})
}

// TestBeyondTheTable covers knobs TESTING.md §1 does not tabulate: NodePort backends,
// externalTrafficPolicy, and the proxy variants when the LB does not land on the client's
// node.
func TestBeyondTheTable(t *testing.T) {
	nodePort := func(clientNode, backendNode, lbTarget string, policy TrafficPolicy, lbSNAT bool) Scenario {
		return with(twoNodes(PodNetworkBridge, true, InterceptNone, clientNode, backendNode), func(s *Scenario) {
			s.LB.Backend = BackendNodePort
			s.LB.TargetNode = lbTarget
			s.LB.SourceNAT = lbSNAT
			s.Service.ExternalTrafficPolicy = policy
		})
	}
	cluster := func(sc Scenario) Scenario {
		return with(sc, func(s *Scenario) { s.Service.ExternalTrafficPolicy = TrafficPolicyCluster })
	}
	runCases(t, []labCase{
		// kube-proxy masquerades intercepted LB traffic under externalTrafficPolicy Cluster
		// (KUBE-EXT chain), so the backend sees the node, and the masquerade also brings the
		// reply back through the node even with br_netfilter off.
		{"iptables_intercept/policy_Cluster/bridge_netfilter_on",
			cluster(twoNodes(PodNetworkBridge, true, InterceptIPTables, "n1", "n1")),
			want{connected: true, source: bridge1}},
		{"iptables_intercept/policy_Cluster/bridge_netfilter_off",
			cluster(twoNodes(PodNetworkBridge, false, InterceptIPTables, "n1", "n1")),
			want{connected: true, source: bridge1}},
		{"iptables_intercept/policy_Cluster/backend_on_other_node",
			cluster(twoNodes(PodNetworkBridge, true, InterceptIPTables, "n1", "n2")),
			want{connected: true, source: node1}},
		{"iptables_intercept/policy_Local/backend_on_other_node",
			twoNodes(PodNetworkBridge, true, InterceptIPTables, "n1", "n2"),
			want{connected: true, source: clientPod}},
		// Only the node that intercepts matters: the client's. A backend node that intercepts
		// does not help a client on a node that does not.
		{"intercept_only_on_backend_node/client_node_routes_to_LB",
			with(twoNodes(PodNetworkBridge, true, InterceptNone, "n1", "n1"), func(s *Scenario) {
				s.Nodes[1].Intercept = InterceptIPTables
				s.LB.Backend, s.LB.TargetNode = BackendNodePort, "n1"
			}),
			want{connected: false, stray: fromNodePort("n1")}},
		// The proxy without a local VIP is not just "failing": it is never used. When the LB
		// lands elsewhere the connection works through the LB.
		{"proxy_VIP_not_local/client_on_other_node",
			twoNodes(PodNetworkBridge, true, InterceptProxyWithoutLocalVIP, "n2", "n1"),
			want{connected: true, source: clientPod}},

		// NodePort backends: what matters is the node the LB lands on, not where the Pod
		// is (DOMAIN.md §1: about 1/N per connection under Cluster).
		{"NodePort/policy_Cluster/LB_lands_on_client_node/pod_there",
			nodePort("n1", "n1", "n1", TrafficPolicyCluster, false),
			want{connected: false, stray: fromNodePort("n1")}},
		{"NodePort/policy_Cluster/LB_lands_on_client_node/pod_elsewhere",
			nodePort("n1", "n2", "n1", TrafficPolicyCluster, false),
			want{connected: false, stray: fromNodePort("n1")}},
		{"NodePort/policy_Cluster/LB_lands_on_other_node/pod_on_client_node",
			nodePort("n1", "n1", "n2", TrafficPolicyCluster, false),
			want{connected: true, source: node2}},
		{"NodePort/policy_Local/LB_lands_on_client_node",
			nodePort("n1", "n1", "n1", TrafficPolicyLocal, false),
			want{connected: false, stray: fromNodePort("n1")}},
		{"NodePort/policy_Local/LB_lands_on_other_node_with_the_pod",
			nodePort("n2", "n1", "n1", TrafficPolicyLocal, false),
			want{connected: true, source: clientPod}},
		// Local with no endpoint on the node the LB picked: the LB kept the client's source,
		// a Pod address, so kube-proxy's "pod traffic for external destinations" rule
		// (-s <cluster CIDR> -j KUBE-SVC) sends it cluster-wide instead of dropping it, and the
		// reply is un-NATed on the client's node: the loop again.
		{"NodePort/policy_Local/LB_lands_on_client_node_without_endpoint",
			nodePort("n2", "n1", "n2", TrafficPolicyLocal, false),
			want{connected: false, stray: fromNodePort("n2")}},
		// With LB SNAT the source is no Pod, so the same node drops it ("has no local
		// endpoints"): nothing answers.
		{"NodePort/LB_SNAT/policy_Local/LB_lands_on_node_without_endpoint",
			nodePort("n2", "n1", "n2", TrafficPolicyLocal, true),
			want{connected: false}},
		{"NodePort/LB_SNAT/policy_Cluster/LB_lands_on_client_node",
			nodePort("n1", "n1", "n1", TrafficPolicyCluster, true),
			want{connected: true, source: bridge1}},
		{"NodePort/LB_SNAT/policy_Local/LB_lands_on_client_node",
			nodePort("n1", "n1", "n1", TrafficPolicyLocal, true),
			want{connected: true, source: lbAddress}},
	})
}

// TestRealIPVS runs kube-proxy IPVS mode for real where the kernel has IPVS. It does not on
// the machine TESTING.md was measured on, so there it skips with the reason.
func TestRealIPVS(t *testing.T) {
	Require(t)
	if err := IPVSAvailable(); err != nil {
		t.Skipf("real IPVS: %v", err)
	}
	runCases(t, []labCase{
		{"VIP_on_kube-ipvs0/client_on_backend_node",
			twoNodes(PodNetworkRouted, false, InterceptIPVS, "n1", "n1"),
			// UNVERIFIED (no IPVS on the machine this was written on): IPVS masquerade
			// forwarding rewrites only the destination, so the backend should see the client
			// Pod, and on a routed node the reply passes back through the node's IPVS.
			want{connected: true, source: clientPod}},
	})
}
