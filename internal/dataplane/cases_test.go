package dataplane

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
	"github.com/loopguard/loopguard/internal/netlab"
)

// A case is one connection described twice: to the model (an Exposure or HairpinFacts, filled
// the way a dialect fills them) and to the kernel (a netlab Scenario). The two descriptions
// are built from the same dimensions, side by side, so a reader can check the translation.
type kcase struct {
	name   string
	family family
	dims   dims

	// Exactly one of exposure and hairpin is set.
	exposure *core.Exposure
	hairpin  *core.HairpinFacts
	scenario netlab.Scenario

	// notExpressible says why the case cannot be built in netlab at all (a seed row about
	// something the lab has no stand-in for). Counted as skipped, with this reason.
	notExpressible string
	// sourceAbstains says why the model's "unknown" source is by design for this case (the
	// dialect leaves a fact unknown on purpose); only connectivity is then compared.
	sourceAbstains string
	// seed quotes the seed-table row the case checks, if any.
	seed string
}

type family string

const (
	familyLB          family = "lb"           // a Pod dials its cluster's LB address
	familyServiceName family = "service-name" // a Pod dials the Service's ClusterIP
	familySelf        family = "self"         // a Pod dials its own Service (seed 002)
	familySeed        family = "seed"         // a seed-table row
)

// dims are the knobs of one case. Not every knob means something in every family.
type dims struct {
	intercept  interception
	lbSNAT     bool
	binding    binding
	placement  placement
	attachment attachment
	// Pod-to-own-Service knobs.
	selfMasquerade bool
	bridgeHairpin  bool
	bridgeNF       bool
}

// interception is what the nodes' service proxy does with the LB address (DOMAIN.md §2).
type interception int

const (
	// interceptNone: kube-proxy programs ClusterIP and NodePort but nothing for the LB
	// address, so nodes route it to the LB (KEP-1860 ipMode Proxy).
	interceptNone interception = iota
	// interceptIPTables: kube-proxy iptables mode DNATs the LB address before routing.
	interceptIPTables
	// interceptIPVSStandIn: VIP on kube-ipvs0 + a userspace proxy (netlab's IPVS stand-in).
	interceptIPVSStandIn
	// interceptProxyNoLocalVIP: a node proxy for the Service port with the VIP not bound
	// locally (TKE IPVS mode without prevent-loopback, DOMAIN.md §3.1).
	interceptProxyNoLocalVIP
	// interceptIPVS: real IPVS, only where /proc/net/ip_vs exists.
	interceptIPVS
)

var interceptions = []interception{interceptNone, interceptIPTables, interceptIPVSStandIn, interceptProxyNoLocalVIP, interceptIPVS}

func (i interception) String() string {
	return [...]string{"none", "iptables", "ipvs-stand-in", "proxy-no-local-vip", "ipvs"}[i]
}

func (i interception) lab() netlab.Intercept {
	return [...]netlab.Intercept{netlab.InterceptNone, netlab.InterceptIPTables, netlab.InterceptIPVSStandIn,
		netlab.InterceptProxyWithoutLocalVIP, netlab.InterceptIPVS}[i]
}

// facts is what a dialect says about this interception: Intercept, and InterceptMasquerades
// from dialect.KubeProxyMasquerades for the proxy mode that programs it (what dialect.ServiceBase
// does). The stand-in is the exception: it is a userspace proxy, which core's
// InterceptMasquerades doc says shows a node address; netlab says it reproduces "the VIP is
// local", not IPVS's source. Real IPVS's source is checked by interceptIPVS.
func (i interception) facts(policy corev1.ServiceExternalTrafficPolicy) (intercept, masquerades core.Fact) {
	switch i {
	case interceptNone:
		return core.No, dialect.KubeProxyMasquerades(core.ProxyModeIPTables, policy)
	case interceptIPTables:
		return core.Yes, dialect.KubeProxyMasquerades(core.ProxyModeIPTables, policy)
	case interceptIPVSStandIn:
		return core.Yes, core.Yes
	case interceptProxyNoLocalVIP:
		return core.No, dialect.KubeProxyMasquerades(core.ProxyModeIPVS, policy)
	case interceptIPVS:
		return core.Yes, dialect.KubeProxyMasquerades(core.ProxyModeIPVS, policy)
	}
	panic(fmt.Sprintf("interception %d", i))
}

// binding is which addresses the LB sends to, with the externalTrafficPolicy it implies.
type binding int

const (
	bindNodePortCluster binding = iota
	bindNodePortLocal
	// bindDirectToPod keeps the Kubernetes default policy, Cluster: TKE direct access and
	// VKE pass-through do not change it, and it decides kube-proxy's masquerade.
	bindDirectToPod
)

var bindings = []binding{bindNodePortCluster, bindNodePortLocal, bindDirectToPod}

func (b binding) String() string {
	return [...]string{"nodeport-cluster", "nodeport-local", "direct-to-pod"}[b]
}

func (b binding) core() core.Binding {
	return [...]core.Binding{core.NodePortCluster, core.NodePortLocal, core.DirectToPod}[b]
}

func (b binding) policy() corev1.ServiceExternalTrafficPolicy {
	if b == bindNodePortLocal {
		return corev1.ServiceExternalTrafficPolicyLocal
	}
	return corev1.ServiceExternalTrafficPolicyCluster
}

func (b binding) labPolicy() netlab.TrafficPolicy {
	if b == bindNodePortLocal {
		return netlab.TrafficPolicyLocal
	}
	return netlab.TrafficPolicyCluster
}

// placement is where the LB lands this connection. The client Pod always runs on n1; the
// backend Pod runs where the LB lands (for NodePort bindings the LB targets that node).
type placement int

const (
	// lbPicksClientNode: the declared client's node holds every backend the LB can pick
	// (declared probability 1).
	lbPicksClientNode placement = iota
	// lbPicksOtherNode: the LB can only pick another node (declared probability 0 where
	// the model can say so).
	lbPicksOtherNode
)

var placements = []placement{lbPicksClientNode, lbPicksOtherNode}

func (p placement) String() string { return [...]string{"client-node", "other-node"}[p] }

func (p placement) backendNode() string { return [...]string{clientNode, otherNode}[p] }

// attachment is how Pods hang off their node.
type attachment int

const (
	attachBridgeNF   attachment = iota // Linux bridge, bridge-nf-call-iptables=1
	attachBridgeNoNF                   // Linux bridge, bridge-nf-call-iptables=0
	attachRouted                       // /32 routes and proxy ARP
)

var attachments = []attachment{attachBridgeNF, attachBridgeNoNF, attachRouted}

func (a attachment) String() string {
	return [...]string{"bridge-nf-on", "bridge-nf-off", "routed"}[a]
}

const (
	clientNode = "n1"
	otherNode  = "n2"
	clientPod  = "client"
	backendPod = "backend"
	selfPod    = "app"
)

// allCases is the whole enumeration: the cross product for a Pod dialing the LB, the same
// Pods dialing the Service name, the cross product for a Pod dialing its own Service, and the
// seed rows.
func allCases() []kcase {
	var out []kcase
	for _, ic := range interceptions {
		for _, snat := range []bool{false, true} {
			for _, b := range bindings {
				for _, p := range placements {
					for _, a := range attachments {
						d := dims{intercept: ic, lbSNAT: snat, binding: b, placement: p, attachment: a}
						out = append(out, lbCase(familyLB, d))
					}
				}
			}
		}
	}
	for _, p := range placements {
		for _, a := range attachments {
			out = append(out, serviceNameCase(dims{placement: p, attachment: a}))
		}
	}
	for _, masq := range []bool{false, true} {
		for _, hp := range []bool{false, true} {
			for _, nf := range []bool{false, true} {
				for _, a := range []attachment{attachBridgeNF, attachRouted} {
					out = append(out, selfCase(familySelf, dims{selfMasquerade: masq, bridgeHairpin: hp, bridgeNF: nf, attachment: a}))
				}
			}
		}
	}
	return append(out, seedCases()...)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// lbCase is a client Pod on n1 dialing the LB address.
func lbCase(f family, d dims) kcase {
	name := fmt.Sprintf("%s/intercept=%v/lb-snat=%s/%v/lb-picks=%v/%v", f, d.intercept, onOff(d.lbSNAT), d.binding, d.placement, d.attachment)
	e := baseExposure(d)
	e.Intercept, e.InterceptMasquerades = d.intercept.facts(d.binding.policy())
	e.LBSourceNAT = dialect.FactOf(d.lbSNAT)
	e.Binding = d.binding.core()
	e.Placement = placementFor(d)

	sc := twoNodeScenario(d)
	sc.LB = netlab.LoadBalancer{SourceNAT: d.lbSNAT}
	switch d.binding {
	case bindNodePortCluster, bindNodePortLocal:
		sc.LB.Backend, sc.LB.TargetNode = netlab.BackendNodePort, d.placement.backendNode()
	case bindDirectToPod:
		sc.LB.Backend = netlab.BackendDirectToPod
	}
	sc.Dial = netlab.DialLB
	return kcase{name: name, family: f, dims: d, exposure: &e, scenario: sc}
}

// serviceNameCase is a client Pod on n1 dialing the Service's ClusterIP (seeds 000/001 quick
// check: "access by Service name or ClusterIP: no risk").
func serviceNameCase(d dims) kcase {
	name := fmt.Sprintf("%s/backend-on=%v/%v", familyServiceName, d.placement, d.attachment)
	e := baseExposure(d)
	e.Access = core.AccessServiceName
	e.Intercept, e.InterceptMasquerades = interceptNone.facts(d.binding.policy())
	e.LBSourceNAT = core.No
	e.Binding = d.binding.core()
	e.Placement = placementFor(d)
	sc := twoNodeScenario(d)
	sc.Dial = netlab.DialClusterIP
	return kcase{name: name, family: familyServiceName, dims: d, exposure: &e, scenario: sc}
}

// baseExposure is what dialect.ServiceBase fills for a private layer-4 TCP LoadBalancer Service
// on a kube-proxy cluster, including the hairpin facts of the profile.
func baseExposure(d dims) core.Exposure {
	h := hairpinFacts(d.attachment, true, d.attachment != attachRouted, d.attachment != attachBridgeNoNF)
	return core.Exposure{
		Object:        core.ObjectRef{Kind: "Service", Namespace: "netlab", Name: "svc"},
		Provider:      "netlab",
		Scope:         core.Private,
		Layer:         core.Layer4,
		Protocols:     core.TCP,
		ProxyProtocol: core.No,
		Hairpin:       &h,
	}
}

// placementFor declares the client Pod on n1 and one backend where the LB lands. Under
// externalTrafficPolicy Cluster the LB can pick any node behind it, so "the LB can only pick
// the backend's node" is NodesBehindLB 1; the lab forces the LB's pick the same way
// (netlab.LoadBalancer.TargetNode). Scheduling does not keep clients apart (Separated No).
func placementFor(d dims) core.Placement {
	pl := core.Placement{
		NodesBehindLB: 2,
		Backends:      []core.NodeBackends{{Node: d.placement.backendNode(), Count: 1}},
		ClientNodes:   []string{clientNode},
		Separated:     core.No,
	}
	if d.binding == bindNodePortCluster {
		pl.NodesBehindLB = 1
		pl.LBNodes = []string{d.placement.backendNode()}
	}
	return pl
}

// twoNodeScenario is the lab for a client Pod on n1 and the backend where the LB lands. Both
// nodes run the same service proxy and Pod network, as nodes of one cluster do. Bridge ports
// have hairpin on (flannel's default; it only matters to a Pod calling itself).
func twoNodeScenario(d dims) netlab.Scenario {
	node := func(name string) netlab.Node {
		n := netlab.Node{Name: name, Intercept: d.intercept.lab(), SelfMasquerade: true, BridgeNetfilter: d.attachment != attachBridgeNoNF}
		if d.attachment == attachRouted {
			n.PodNetwork = netlab.PodNetworkRouted
		}
		return n
	}
	hp := d.attachment != attachRouted
	return netlab.Scenario{
		Nodes: []netlab.Node{node(clientNode), node(otherNode)},
		Pods: []netlab.Pod{
			{Name: clientPod, Node: clientNode, Hairpin: hp},
			{Name: backendPod, Node: d.placement.backendNode(), Hairpin: hp},
		},
		Service: netlab.Service{Endpoint: backendPod, ExternalTrafficPolicy: d.binding.labPolicy()},
		Client:  clientPod,
	}
}

// hairpinFacts is what core.ClusterProfile.HairpinFacts says for a kube-proxy cluster with
// this attachment. Bridge facts are Unknown on a routed node: no dialect claims them there.
func hairpinFacts(a attachment, selfMasquerade, bridgeHairpin, bridgeNF bool) core.HairpinFacts {
	h := core.HairpinFacts{Dataplane: core.DataplaneKubeProxy, SelfMasquerade: dialect.FactOf(selfMasquerade)}
	switch a {
	case attachRouted:
		h.Attachment = core.AttachmentRouted
	default:
		h.Attachment = core.AttachmentBridge
		h.BridgeHairpin = dialect.FactOf(bridgeHairpin)
		h.BridgeNetfilter = dialect.FactOf(bridgeNF)
	}
	return h
}

// selfCase is a Pod dialing its own Service's ClusterIP on a one-node cluster (DOMAIN.md §6).
// attachment here is bridge or routed; bridge netfilter is its own knob.
func selfCase(f family, d dims) kcase {
	att := "bridge"
	if d.attachment == attachRouted {
		att = "routed"
	}
	name := fmt.Sprintf("%s/self-masq=%s/hairpin=%s/bridge-nf=%s/%s", f, onOff(d.selfMasquerade), onOff(d.bridgeHairpin), onOff(d.bridgeNF), att)
	h := hairpinFacts(d.attachment, d.selfMasquerade, d.bridgeHairpin, d.bridgeNF)
	n := netlab.Node{Name: clientNode, BridgeNetfilter: d.bridgeNF, SelfMasquerade: d.selfMasquerade}
	if d.attachment == attachRouted {
		n.PodNetwork = netlab.PodNetworkRouted
	}
	sc := netlab.Scenario{
		Nodes:   []netlab.Node{n},
		Pods:    []netlab.Pod{{Name: selfPod, Node: clientNode, Hairpin: d.bridgeHairpin}},
		Service: netlab.Service{Endpoint: selfPod},
		Client:  selfPod,
		Dial:    netlab.DialClusterIP,
	}
	return kcase{name: name, family: f, dims: d, hairpin: &h, scenario: sc}
}

// seedCases are the rows of the seed tables that say something about packets, each built the
// way the cloud's dialect describes that setup. Rows the lab has no stand-in for are listed
// too, as not expressible, so the count of what is not checked is visible.
func seedCases() []kcase {
	var out []kcase
	lb := func(name, seed string, d dims, change func(*kcase)) {
		c := lbCase(familySeed, d)
		c.name, c.seed = "seed/"+name, seed
		if change != nil {
			change(&c)
		}
		out = append(out, c)
	}
	self := func(name, seed string, d dims, change func(*kcase)) {
		c := selfCase(familySeed, d)
		c.name, c.seed = "seed/"+name, seed
		if change != nil {
			change(&c)
		}
		out = append(out, c)
	}
	none := func(name, seed, why string) {
		out = append(out, kcase{name: "seed/" + name, family: familySeed, seed: seed, notExpressible: why})
	}

	// TKE (seeds 000/001, DOMAIN.md §3.1). A TKE Service binds NodePorts with
	// externalTrafficPolicy Cluster unless it says otherwise; GlobalRouter nodes are bridge
	// nodes with br_netfilter on, VPC-CNI (needed for direct access) is routed. Each row is
	// checked where it bites: the client on the node the LB picks.
	tke := dims{binding: bindNodePortCluster, placement: lbPicksClientNode, attachment: attachBridgeNF}
	with := func(d dims, f func(*dims)) dims { f(&d); return d }
	lb("tke/iptables-mode/no-risk", "kube-proxy iptables mode + private CLB + Service: none (DNAT happens before routing)",
		with(tke, func(d *dims) { d.intercept = interceptIPTables }), nil)
	lb("tke/ipvs-mode/not-intercepted/at-risk", "regular/native node + IPVS + private CLB + Service + access via LB IP: AT RISK",
		with(tke, func(d *dims) { d.intercept = interceptProxyNoLocalVIP }), nil)
	lb("tke/ipvs-mode/prevent-loopback/resolved", "IPVS + prevent-loopback enabled (intra-cluster forwarding): resolved",
		with(tke, func(d *dims) { d.intercept = interceptIPVSStandIn }), func(c *kcase) {
			// The dialect's own facts for IPVS with prevent-loopback, not the stand-in's.
			c.exposure.InterceptMasquerades = dialect.KubeProxyMasquerades(core.ProxyModeIPVS, corev1.ServiceExternalTrafficPolicyCluster)
		})
	lb("tke/ipvs-mode/l4-snat/resolved", "IPVS + CLB layer-4 listener SNAT on: resolved",
		with(tke, func(d *dims) { d.intercept, d.lbSNAT = interceptProxyNoLocalVIP, true }), nil)
	lb("tke/direct-access/still-loops", "direct-to-Pod CLB (direct-access): still loops when client and server Pod share a node",
		with(tke, func(d *dims) {
			d.intercept, d.binding, d.attachment = interceptProxyNoLocalVIP, bindDirectToPod, attachRouted
		}), nil)
	out = append(out, func() kcase {
		c := serviceNameCase(dims{placement: lbPicksClientNode, attachment: attachBridgeNF})
		c.name, c.family, c.seed = "seed/tke/service-name/no-risk", familySeed, "access by Service name or ClusterIP: none (never touches the CLB)"
		return c
	}())
	none("tke/public-clb", "public CLB (Service or Ingress): none", "the lab's LB has private addresses only; no public egress NAT to stand in for")
	none("tke/super-node", "super node (+ private CLB Service or Ingress): none", "netlab has no super node (a VM per Pod, no kube-proxy)")
	none("tke/ingress-l7", "private CLB + Ingress (layer 7) + access via LB IP: AT RISK; layer-7 SNAT resolves it", "netlab's LB is a layer-4 DNAT; no layer-7 retry to observe")

	// VKE (seed 003, DOMAIN.md §4): VPC-CNI Pods (routed), eBPF service forwarding, CLB
	// pass-through to Pod ENIs, no source NAT. iptables DNAT stands in for the eBPF VIP mode.
	vke := dims{binding: bindDirectToPod, attachment: attachRouted}
	lb("vke/vip/no-loop", "VIP: kube-proxy redirects traffic for the CLB IP:port to backend Pods (no loop)",
		with(vke, func(d *dims) { d.intercept, d.placement = interceptIPTables, lbPicksClientNode }), func(c *kcase) {
			c.exposure.InterceptMasquerades = dialect.KubeProxyMasquerades(core.ProxyModeEBPF, corev1.ServiceExternalTrafficPolicyCluster)
			c.sourceAbstains = "VKE forwards with eBPF: the dialect leaves InterceptMasquerades unknown (dialect.KubeProxyMasquerades(ebpf) is Unknown) and iptables DNAT stands in for eBPF"
		})
	lb("vke/proxy/same-node-loops", "Proxy: the client Pod and the server Pod must not run on the same node",
		with(vke, func(d *dims) { d.intercept, d.placement = interceptNone, lbPicksClientNode }), nil)
	lb("vke/proxy/other-node-ok", "Proxy: all traffic goes through the CLB, which keeps the client's source address",
		with(vke, func(d *dims) { d.intercept, d.placement = interceptNone, lbPicksOtherNode }), nil)

	// Seed 002: a Pod calling its own Service through kube-proxy.
	self("002/plain-dnat-fails/bridge", "plain DNAT to itself: source = destination; the bridge will not send it back, Linux drops it as martian",
		dims{selfMasquerade: false, bridgeHairpin: true, bridgeNF: true, attachment: attachBridgeNF}, nil)
	self("002/plain-dnat-fails/routed", "plain DNAT to itself: Linux drops a packet from outside whose source is its own (martian)",
		dims{selfMasquerade: false, bridgeNF: true, attachment: attachRouted}, nil)
	self("002/bridge-plugin-default-hairpin-off-fails", "bridge plugin: hairpinMode defaults to false; even with kube-proxy's rule the bridge will not send it back",
		dims{selfMasquerade: true, bridgeHairpin: false, bridgeNF: true, attachment: attachBridgeNF}, nil)
	self("002/flannel-hairpin-on-works", "Flannel: its default manifest sets hairpinMode: true; kube-proxy's self-masquerade changes the source",
		dims{selfMasquerade: true, bridgeHairpin: true, bridgeNF: true, attachment: attachBridgeNF}, nil)
	self("002/kubelet-hairpin-mode-is-dead", "kubelet hairpinMode (hairpin-veth) is read by nothing since 1.24: hairpin is the CNI's job",
		dims{selfMasquerade: true, bridgeHairpin: false, bridgeNF: true, attachment: attachBridgeNF}, func(c *kcase) {
			c.hairpin.KubeletHairpinMode = "hairpin-veth"
		})
	none("002/cilium-tc-service-loopback", "Cilium tc LB: source rewritten to 169.254.42.1", "netlab has no Cilium dataplane (service-loopback is not checked against the kernel)")
	none("002/cilium-socket-lb", "Cilium socket LB in the Pod: connect() goes to the backend directly", "netlab has no Cilium dataplane")
	return out
}

// firstLine keeps skip reasons short enough to count by.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
