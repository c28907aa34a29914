package netlab

import (
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// Scenario is one cluster, one Service with one endpoint, one LB, and one connection to open.
// The zero value of every knob is documented; a translator from another model should still
// set each knob explicitly.
type Scenario struct {
	// Nodes are the cluster's nodes, each its own network namespace routed through the LB
	// namespace (the LB namespace is also the VPC router, docs/sources.md#kernel-lab).
	Nodes []Node
	// Pods are attached to their node by the node's PodNetwork.
	Pods []Pod
	// Service is the Kubernetes Service (type LoadBalancer) that kube-proxy programs on every
	// node.
	Service Service
	// LB is the cloud load balancer in front of Service.
	LB LoadBalancer
	// Client is the name of the Pod that opens the connection. For Pod-to-own-Service
	// (docs/sources.md#hairpin) it equals Service.Endpoint.
	Client string
	// Dial says which address the client connects to.
	Dial Destination
	// Timeout bounds the whole exchange (connect + read the server's report). Zero means
	// DefaultTimeout. Avoid exactly 1 s or 3 s: they land on a SYN retransmission
	// (docs/sources.md#kernel-lab, pitfalls).
	Timeout time.Duration
}

// DefaultTimeout is the client's default timeout: long enough for one SYN retransmission
// (at 1 s), short enough to keep failing cases cheap, and away from the 1 s and 3 s
// retransmission points.
const DefaultTimeout = 1500 * time.Millisecond

// Node is one cluster node.
type Node struct {
	Name string
	// PodNetwork is how this node's Pods are attached (zero: PodNetworkBridge).
	PodNetwork PodNetwork
	// BridgeNetfilter is net.bridge.bridge-nf-call-iptables in this node's namespace. It is
	// per namespace and 1 by default in the kernel, so the harness always writes it
	// (docs/sources.md#kernel-lab). It only matters with PodNetworkBridge: with it on, iptables sees
	// bridged frames (seed 002 and docs/sources.md#how-it-is-tested rows 5 and 9).
	BridgeNetfilter bool
	// Intercept is what this node's service proxy does with the LB VIP (zero: InterceptNone,
	// the packet is routed out to the LB).
	Intercept Intercept
	// SelfMasquerade is kube-proxy's first rule in every endpoint chain, "-s <endpoint> -j
	// KUBE-MARK-MASQ" (seed 002 §3; docs/sources.md#hairpin). Real kube-proxy always programs it; turn it
	// off only to show what it prevents.
	SelfMasquerade bool
}

// PodNetwork is how a node attaches its Pods.
type PodNetwork int

const (
	// PodNetworkBridge attaches Pods to a Linux bridge cni0 holding the Pod CIDR's first
	// address, like kubenet or flannel's bridge plugin.
	PodNetworkBridge PodNetwork = iota
	// PodNetworkRouted gives each Pod a /32 with a route on the node and proxy ARP on the
	// node's end of the veth (gateway 169.254.1.1), like Calico or a VPC-CNI.
	PodNetworkRouted
)

func (p PodNetwork) String() string {
	switch p {
	case PodNetworkBridge:
		return "bridge"
	case PodNetworkRouted:
		return "routed"
	}
	return fmt.Sprintf("PodNetwork(%d)", int(p))
}

// Intercept is what a node's service proxy does with traffic for the LB VIP (docs/sources.md#serving-paths:
// "VIP" mode intercepts, "Proxy" mode does not).
type Intercept int

const (
	// InterceptNone: no rule for the VIP; the node routes the packet to the LB (KEP-1860
	// ipMode Proxy, or TKE IPVS mode without prevent-loopback, docs/sources.md#tke-risk).
	InterceptNone Intercept = iota
	// InterceptIPTables: kube-proxy iptables mode, nat PREROUTING/OUTPUT DNAT of VIP:port to
	// the endpoint before routing (the KUBE-EXT chain, with its masquerade rule under
	// externalTrafficPolicy Cluster).
	InterceptIPTables
	// InterceptIPVSStandIn: the VIP is bound to a port-less bridge named kube-ipvs0 (dummy
	// links are missing here) and a userspace TCP proxy in the node namespace forwards VIP:port
	// to the endpoint. A stand-in for kube-proxy IPVS mode (docs/sources.md#kernel-lab): the backend sees
	// the node address the proxy dials from, not what real IPVS would show.
	InterceptIPVSStandIn
	// InterceptProxyWithoutLocalVIP: the same userspace proxy listens on the Service port,
	// but the VIP is not bound to any local interface, so the kernel routes VIP packets to
	// the LB and the proxy never sees them (why kube-proxy IPVS binds LB IPs to kube-ipvs0).
	InterceptProxyWithoutLocalVIP
	// InterceptIPVS: real IPVS through ipvsadm (masquerade forwarding), VIP on kube-ipvs0,
	// and kube-proxy's KUBE-LOAD-BALANCER chain, which masquerades LB traffic except under
	// externalTrafficPolicy Local. Runs only where /proc/net/ip_vs exists and ipvsadm is
	// installed; NOT exercised on the machine this was written on, which has no IPVS.
	InterceptIPVS
	// InterceptExternal: netlab programs no service-proxy rules at all on this node, neither
	// for the VIP nor for ClusterIP or NodePort; the caller runs a real service proxy in the
	// node's namespace (internal/proxylab runs the real kube-proxy there, see
	// Lab.NodeNetns).
	InterceptExternal
)

func (i Intercept) String() string {
	switch i {
	case InterceptNone:
		return "none"
	case InterceptIPTables:
		return "iptables"
	case InterceptIPVSStandIn:
		return "ipvs-stand-in"
	case InterceptProxyWithoutLocalVIP:
		return "proxy-without-local-vip"
	case InterceptIPVS:
		return "ipvs"
	case InterceptExternal:
		return "external"
	}
	return fmt.Sprintf("Intercept(%d)", int(i))
}

// Pod is one Pod.
type Pod struct {
	Name string
	Node string
	// Hairpin is hairpin_mode on this Pod's bridge port: may the bridge send a frame back
	// out of the port it came in on (seed 002 §2). Only meaningful with PodNetworkBridge.
	Hairpin bool
}

// Service is the Kubernetes Service in front of the backend. It has exactly one endpoint so
// every path ends at one known Pod and outcomes are deterministic.
type Service struct {
	// ClusterIP; zero means DefaultClusterIP.
	ClusterIP netip.Addr
	// Port is the Service port, also the LB listener port; zero means 80.
	Port uint16
	// TargetPort is where the backend Pod's server listens; zero means 8080.
	TargetPort uint16
	// NodePort; zero means 30080.
	NodePort uint16
	// Endpoint is the name of the backend Pod (the only endpoint).
	Endpoint string
	// ExternalTrafficPolicy decides kube-proxy's masquerade for NodePort and intercepted LB
	// traffic (zero: TrafficPolicyCluster, the Kubernetes default).
	ExternalTrafficPolicy TrafficPolicy
	// ExternalServer: netlab starts no server in the endpoint Pod; the caller runs one on
	// TargetPort (internal/proxylab runs HAProxy there, with or without accept-proxy).
	// Lab.Connect needs netlab's server, so a caller that sets this dials by itself.
	ExternalServer bool
}

// TrafficPolicy is a Service's externalTrafficPolicy.
type TrafficPolicy int

const (
	// TrafficPolicyCluster: kube-proxy masquerades all external traffic (NodePort and
	// intercepted LB IP) "in case we cross nodes" (kube-proxy iptables proxier, KUBE-EXT
	// chain), so the backend sees a node address.
	TrafficPolicyCluster TrafficPolicy = iota
	// TrafficPolicyLocal: NodePort traffic goes only to endpoints on the receiving node (it
	// is dropped when there are none), source kept; Pod traffic to the LB IP short-circuits
	// to the cluster-wide chain without masquerade.
	TrafficPolicyLocal
)

func (p TrafficPolicy) String() string {
	switch p {
	case TrafficPolicyCluster:
		return "Cluster"
	case TrafficPolicyLocal:
		return "Local"
	}
	return fmt.Sprintf("TrafficPolicy(%d)", int(p))
}

// LoadBalancer is the cloud LB: it holds the VIP and DNATs VIP:Service.Port to the backend
// it picks for this connection.
type LoadBalancer struct {
	// VIP; zero means DefaultVIP.
	VIP netip.Addr
	// SourceNAT makes the LB MASQUERADE to its own address ("LB SNAT", docs/sources.md#serving-paths, §3.2).
	SourceNAT bool
	// Backend is how the LB reaches the Service (zero: BackendDirectToPod, the topology of
	// docs/sources.md#kernel-lab).
	Backend BackendBinding
	// TargetNode is, for BackendNodePort, the node whose NodePort the LB sends this
	// connection to. The LB's choice is forced so a test can say "lands on the client's
	// node" or "another node" (docs/sources.md#loopback: probability about 1/N per connection).
	TargetNode string
	// External: netlab holds the VIP and routes in the LB namespace but writes no DNAT or
	// source NAT rule there; the caller runs a real load balancer in it (Lab.LBNetns), such
	// as HAProxy in TCP mode. SourceNAT must then be false: what the LB does with the source
	// is the caller's LB's business.
	External bool
}

// BackendBinding is what the LB has registered as its backend.
type BackendBinding int

const (
	// BackendDirectToPod: the LB forwards to the Pod's address and TargetPort (VPC-CNI
	// "direct access", docs/sources.md#tke-risk last row).
	BackendDirectToPod BackendBinding = iota
	// BackendNodePort: the LB forwards to TargetNode's address and the NodePort; that node's
	// kube-proxy DNATs to the endpoint.
	BackendNodePort
)

func (b BackendBinding) String() string {
	switch b {
	case BackendDirectToPod:
		return "direct-to-pod"
	case BackendNodePort:
		return "nodeport"
	}
	return fmt.Sprintf("BackendBinding(%d)", int(b))
}

// Destination is what the client dials.
type Destination int

const (
	// DialLB connects to LB.VIP:Service.Port.
	DialLB Destination = iota
	// DialClusterIP connects to Service.ClusterIP:Service.Port.
	DialClusterIP
)

func (d Destination) String() string {
	switch d {
	case DialLB:
		return "lb"
	case DialClusterIP:
		return "cluster-ip"
	}
	return fmt.Sprintf("Destination(%d)", int(d))
}

// Address plan. Everything is private (RFC 1918 / link-local) and only ever assigned inside
// namespaces the lab created. Node i (1-based, in Scenario order) gets:
//
//	node ↔ LB link   10.10.i.2/24 on the node's eth0, 10.10.i.1/24 on the LB's vpc<i>
//	Pod CIDR         10.244.i.0/24; the bridge holds 10.244.i.1; Pods get .2, .3, … in order
//	routed gateway   169.254.1.1 (answered by proxy ARP, never assigned; Calico's convention)
var (
	// DefaultVIP is the LB's address when LoadBalancer.VIP is zero.
	DefaultVIP = netip.MustParseAddr("10.10.0.100")
	// DefaultClusterIP is the Service's ClusterIP when Service.ClusterIP is zero.
	DefaultClusterIP = netip.MustParseAddr("10.96.0.10")
	// ClusterCIDR holds every Pod address; kube-proxy's "not from a Pod → masquerade" rule
	// for ClusterIP traffic uses it like --cluster-cidr.
	ClusterCIDR = netip.MustParsePrefix("10.244.0.0/16")

	routedGateway = netip.MustParseAddr("169.254.1.1")
)

const (
	maxNodes       = 200
	maxPodsPerNode = 200
)

// withDefaults returns a copy of s with zero knobs replaced by their documented defaults.
func (s Scenario) withDefaults() Scenario {
	if !s.Service.ClusterIP.IsValid() {
		s.Service.ClusterIP = DefaultClusterIP
	}
	if s.Service.Port == 0 {
		s.Service.Port = 80
	}
	if s.Service.TargetPort == 0 {
		s.Service.TargetPort = 8080
	}
	if s.Service.NodePort == 0 {
		s.Service.NodePort = 30080
	}
	if !s.LB.VIP.IsValid() {
		s.LB.VIP = DefaultVIP
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	return s
}

// Validate reports every way s cannot be built, joined.
func (s Scenario) Validate() error {
	s = s.withDefaults()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if len(s.Nodes) == 0 {
		bad("no nodes")
	}
	if len(s.Nodes) > maxNodes {
		bad("%d nodes: at most %d fit the address plan", len(s.Nodes), maxNodes)
	}
	nodes := map[string]Node{}
	for _, n := range s.Nodes {
		switch {
		case n.Name == "":
			bad("a node has no name")
		case nodes[n.Name].Name != "":
			bad("node %q twice", n.Name)
		}
		nodes[n.Name] = n
		if n.PodNetwork != PodNetworkBridge && n.PodNetwork != PodNetworkRouted {
			bad("node %q: unknown %v", n.Name, n.PodNetwork)
		}
		if n.Intercept < InterceptNone || n.Intercept > InterceptExternal {
			bad("node %q: unknown %v", n.Name, n.Intercept)
		}
	}
	pods := map[string]Pod{}
	perNode := map[string]int{}
	for _, p := range s.Pods {
		switch {
		case p.Name == "":
			bad("a Pod has no name")
		case pods[p.Name].Name != "":
			bad("Pod %q twice", p.Name)
		}
		pods[p.Name] = p
		n, ok := nodes[p.Node]
		if !ok {
			bad("Pod %q: unknown node %q", p.Name, p.Node)
			continue
		}
		perNode[p.Node]++
		if perNode[p.Node] > maxPodsPerNode {
			bad("node %q: more than %d Pods", p.Node, maxPodsPerNode)
		}
		if p.Hairpin && n.PodNetwork != PodNetworkBridge {
			bad("Pod %q: hairpin is a bridge port setting, node %q is %v", p.Name, p.Node, n.PodNetwork)
		}
	}
	if _, ok := pods[s.Service.Endpoint]; !ok {
		bad("Service endpoint %q is not a Pod", s.Service.Endpoint)
	}
	if _, ok := pods[s.Client]; !ok {
		bad("client %q is not a Pod", s.Client)
	}
	if s.Service.ExternalTrafficPolicy != TrafficPolicyCluster && s.Service.ExternalTrafficPolicy != TrafficPolicyLocal {
		bad("unknown %v", s.Service.ExternalTrafficPolicy)
	}
	ports := map[uint16]string{}
	for _, p := range []struct {
		name string
		port uint16
	}{{"port", s.Service.Port}, {"targetPort", s.Service.TargetPort}, {"nodePort", s.Service.NodePort}} {
		if other, dup := ports[p.port]; dup {
			// One number for two roles would make a rule for one match traffic for the other.
			bad("Service %s and %s are both %d", other, p.name, p.port)
		}
		ports[p.port] = p.name
	}
	if !s.LB.VIP.Is4() || !s.Service.ClusterIP.Is4() {
		bad("VIP %v and ClusterIP %v must be IPv4", s.LB.VIP, s.Service.ClusterIP)
	}
	for _, a := range []netip.Addr{s.LB.VIP, s.Service.ClusterIP} {
		if inPlan(a) {
			bad("%v collides with the lab's address plan (10.10.1-254.0/24, 10.244.0.0/16, 169.254.1.1)", a)
		}
		if !a.IsPrivate() {
			// Keep every address inside private ranges, even though the sandbox has no uplink.
			bad("%v is not a private address", a)
		}
	}
	if s.LB.VIP == s.Service.ClusterIP {
		bad("VIP and ClusterIP are both %v", s.LB.VIP)
	}
	if s.LB.External && s.LB.SourceNAT {
		bad("LB SourceNAT is netlab's MASQUERADE rule; an External LB does its own source NAT")
	}
	switch s.LB.Backend {
	case BackendDirectToPod:
		if s.LB.TargetNode != "" {
			bad("LB TargetNode %q is only for BackendNodePort; direct-to-Pod goes to the endpoint", s.LB.TargetNode)
		}
	case BackendNodePort:
		if _, ok := nodes[s.LB.TargetNode]; !ok {
			bad("LB TargetNode %q is not a node", s.LB.TargetNode)
		}
	default:
		bad("unknown %v", s.LB.Backend)
	}
	if s.Dial != DialLB && s.Dial != DialClusterIP {
		bad("unknown %v", s.Dial)
	}
	if s.Timeout < 0 {
		bad("negative timeout")
	}
	return errors.Join(errs...)
}

// inPlan reports whether a is one of the addresses the lab assigns or routes itself.
func inPlan(a netip.Addr) bool {
	if !a.Is4() {
		return false
	}
	if ClusterCIDR.Contains(a) || a == routedGateway {
		return true
	}
	b := a.As4()
	return b[0] == 10 && b[1] == 10 && b[2] >= 1 && b[2] <= maxNodes
}

func nodeLinkAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 10, byte(i), 2}) }
func lbLinkAddr(i int) netip.Addr   { return netip.AddrFrom4([4]byte{10, 10, byte(i), 1}) }
func bridgeAddr(i int) netip.Addr   { return netip.AddrFrom4([4]byte{10, 244, byte(i), 1}) }
func podCIDR(i int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(i), 0}), 24)
}
func podAddr(node, j int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, 244, byte(node), byte(j + 2)})
}
