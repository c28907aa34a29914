package core

// Code is a stable identifier of a rule. Codes never change meaning once released; they are
// listed with their sources in docs/reasons.md, which a test keeps in step with Rules.
type Code string

// Reason is one step of an explanation: which rule applied, what it means for this object, and
// the document the rule comes from.
type Reason struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Source  string `json:"source"`
}

// Rule is a documented rule. Dialects declare their own rules the same way and list them from
// a Rules function, so that docs/reasons.md covers every code any package can emit.
type Rule struct {
	Code    Code
	Summary string
	Source  string
}

// Because returns a Reason for this rule with a message about the object at hand.
func (r Rule) Because(message string) Reason {
	return Reason{Code: r.Code, Message: message, Source: r.Source}
}

// Rule is the core's rule with this code, or a Rule with only the code when the core has none
// (a dialect's code: the dialect's Rules list it). Rules are values: this is a copy.
func (c Code) Rule() Rule {
	if r, ok := rulesByCode[c]; ok {
		return r
	}
	return Rule{Code: c}
}

var rulesByCode = func() map[Code]Rule {
	m := map[Code]Rule{}
	for _, r := range Rules() {
		m[r.Code] = r
	}
	return m
}()

// Reason returns the rule's own summary as a Reason; it does not allocate.
func (r Rule) Reason() Reason { return Reason{Code: r.Code, Message: r.Summary, Source: r.Source} }

// Sources cited by the core's rules.
const (
	srcSeedTKE     = "docs/sources.md#tke-guide (TKE CLB loopback guide)"
	srcSeedTKEL4   = "docs/sources.md#tke-guide §3 layer-4 quick reference"
	srcSeedTKEL7   = "docs/sources.md#tke-guide §4 layer-7 quick reference"
	srcSeedHairpin = "docs/sources.md#hairpin (Pod to its own Service, Kubernetes 1.34 + Cilium 1.20)"
	srcDomainProb  = "docs/sources.md#loopback (probability, derived from tke-guide docs/faq/clb-loopback.md)"
	srcDomainSrc   = "docs/sources.md#source-address (what the backend sees as source address)"
	srcDomainPaths = "docs/sources.md#serving-paths (the two serving paths)"
	srcTestingLab  = "docs/sources.md#kernel-lab (measured in network namespaces)"
	srcDependence  = "docs/sources.md#lb-dependence (what backends need from the LB)"
)

// The codes of the core's rules. Rules lists the rules; Code.Rule looks one up.
const (
	CodeServiceName           Code = "service-name-access"
	CodePublicLB              Code = "public-lb"
	CodeScopeUnknown          Code = "lb-scope-unknown"
	CodeIntercepted           Code = "node-intercepts-vip"
	CodeInterceptUnknown      Code = "intercept-unknown"
	CodeThroughLB             Code = "through-lb"
	CodeLBSourceNAT           Code = "lb-source-nat"
	CodeSourceNATUnknown      Code = "lb-source-nat-unknown"
	CodeSameNodeLoop          Code = "same-node-loop"
	CodeNodeSeparated         Code = "clients-separated"
	CodeClusterPolicy         Code = "nodeport-cluster-any-node"
	CodeBackendShare          Code = "backend-share"
	CodeBindingUnknown        Code = "binding-unknown"
	CodePlacementUnknown      Code = "placement-unknown"
	CodeSingleNode            Code = "always-loops"
	CodeL4NoRetry             Code = "l4-no-retry"
	CodeL7Retry               Code = "l7-retry-delay"
	CodeDeclaredClients       Code = "declared-clients"
	CodeVIPSkipsProxyHeader   Code = "vip-skips-proxy-header"
	CodeVIPSkipsTLS           Code = "vip-skips-lb-tls"
	CodeVIPSkipsL7            Code = "vip-skips-lb-l7"
	CodeSourceNodePort        Code = "source-nodeport-masquerade"
	CodeBridgeNetfilterOff    Code = "bridge-netfilter-off"
	CodeSourceClientPod       Code = "source-client-pod"
	CodeSourceInterceptMasq   Code = "source-node-address"
	CodeSourceLBProxyProtocol Code = "source-lb-proxy-protocol"
	CodeSourceLBLostTCP       Code = "source-lb-tcp"
	CodeSourceLBLostUDP       Code = "source-lb-udp"
	CodeSourceLBXFF           Code = "source-lb-xff"
	CodeHairpinSocketLB       Code = "hairpin-cilium-socket-lb"
	CodeHairpinCilium         Code = "hairpin-cilium-loopback"
	CodeHairpinNoMasq         Code = "hairpin-no-masquerade"
	CodeHairpinMasqRouted     Code = "hairpin-masquerade"
	CodeHairpinBridgeOff      Code = "hairpin-bridge-port-off"
	CodeHairpinBridgeOn       Code = "hairpin-bridge-port-on"
	CodeHairpinUnknown        Code = "hairpin-unknown"
	CodeKubeletHairpinDead    Code = "kubelet-hairpin-mode-unused"
	CodeDecideNoLoop          Code = "decide-no-loop"
	CodeDecideChosen          Code = "decide-chosen"
	CodeDecideRanked          Code = "decide-ranked-lower"
	CodeDecideUnmet           Code = "decide-precondition-unmet"
	CodeDecideTicket          Code = "decide-needs-ticket"
	CodeDecideDisruptive      Code = "decide-disruptive"
	CodeDecideL7NoIntercept   Code = "decide-l7-no-intercept"
	CodeDecideTentative       Code = "decide-tentative"
	CodeDecideKeepsOffLB      Code = "decide-keeps-traffic-off-lb"
	CodeDecideNothing         Code = "decide-nothing-offered"
	CodeDecideFailsLeast      Code = "decide-fails-least"
	CodeDecideClientAddress   Code = "decide-keeps-client-address"
)

// The core's rules: physics that holds on every cloud.
var (
	ruleServiceName      = Rule{CodeServiceName, "Clients use the Service name or ClusterIP, which never touches the load balancer.", srcSeedTKE + " quick check"}
	rulePublicLB         = Rule{CodePublicLB, "Public load balancers do not loop: the LB sees the node's public egress address, which the node does not hold.", srcSeedTKE + " quick check"}
	ruleScopeUnknown     = Rule{CodeScopeUnknown, "Whether the load balancer is private or public is not known; only private LBs can loop.", srcDomainPaths}
	ruleIntercepted      = Rule{CodeIntercepted, "The node rewrites traffic for the LB address to a backend before routing; the packet never reaches the LB, so it cannot loop (path VIP).", srcSeedTKEL4}
	ruleInterceptUnknown = Rule{CodeInterceptUnknown, "Whether nodes intercept traffic for the LB address is not known (service proxy mode, ipMode, node kind).", srcDomainPaths}
	ruleThroughLB        = Rule{CodeThroughLB, "In-cluster traffic to the LB address leaves the node and reaches the load balancer (path Proxy).", srcDomainPaths}
	ruleLBSourceNAT      = Rule{CodeLBSourceNAT, "The load balancer replaces the client's source address, so replies return through it and cannot short-circuit on the node.", srcSeedTKEL4 + "; " + srcSeedTKEL7}
	ruleSourceNATUnknown = Rule{CodeSourceNATUnknown, "Whether the load balancer replaces the client's source address is not known.", srcDomainPaths}
	ruleSameNodeLoop     = Rule{CodeSameNodeLoop, "The LB keeps the client's source address; when it picks a backend on the client's own node, the reply is delivered straight to the client from the backend's address and the connection fails.", srcSeedTKE + "; " + srcTestingLab}
	ruleNodeSeparated    = Rule{CodeNodeSeparated, "Scheduling keeps clients off every node that runs a backend, and the LB only sends to those nodes, so no connection can loop.", "docs/sources.md#vke-ip-mode (VKE Proxy mode restriction); " + srcDomainProb}
	ruleClusterPolicy    = Rule{CodeClusterPolicy, "With NodePort on every node and externalTrafficPolicy Cluster, any node can receive the connection: about 1/N per connection whatever the placement.", srcDomainProb}
	ruleBackendShare     = Rule{CodeBackendShare, "With externalTrafficPolicy Local or direct-to-Pod backends, a connection loops with the share of backends on the client's node.", srcDomainProb}
	ruleBindingUnknown   = Rule{CodeBindingUnknown, "Which nodes the LB sends to (externalTrafficPolicy, direct-to-Pod) is not known, so the loop probability is unknown.", srcDomainProb}
	rulePlacementUnknown = Rule{CodePlacementUnknown, "Where backends run is not known (no EndpointSlices or node count), so the loop probability is unknown.", srcDomainProb}
	ruleSingleNode       = Rule{CodeSingleNode, "Every connection lands on the client's node (one node, or every backend beside the client): the connection always fails.", srcSeedTKE + " (single node)"}
	ruleL4NoRetry        = Rule{CodeL4NoRetry, "A layer-4 listener does not retry another backend: a looping connection fails, so clients see intermittent failures.", srcSeedTKE}
	ruleL7Retry          = Rule{CodeL7Retry, "A layer-7 listener times out on the looping backend after about 4 s and retries another: clients see a ~4 s delay.", srcSeedTKE}
	ruleDeclaredClients  = Rule{CodeDeclaredClients, "The probability for declared clients uses the nodes they run on now; it is not a guarantee unless scheduling keeps them apart.", srcDomainProb}

	ruleVIPSkipsProxyHeader = Rule{CodeVIPSkipsProxyHeader, "The backends expect a PROXY protocol header that only the load balancer adds; the node intercepts the LB address, so in-cluster connections arrive without it and are rejected.", srcDependence + "; kubernetes/kubernetes#66607; " + srcTestingLab + " (HAProxy accept-proxy)"}
	ruleVIPSkipsTLS         = Rule{CodeVIPSkipsTLS, "The load balancer terminates TLS and the backends speak plain text; intercepted in-cluster clients speak TLS straight to the plain port.", srcDependence}
	ruleVIPSkipsL7          = Rule{CodeVIPSkipsL7, "The backends rely on the load balancer's layer-7 rules (routing or rewriting by host, path or header); intercepted in-cluster traffic skips them.", srcDependence}

	ruleSourceNodePort        = Rule{CodeSourceNodePort, "kube-proxy masquerades every NodePort connection under externalTrafficPolicy Cluster: the backend sees the address of the node the LB picked.", srcDomainSrc + "; " + srcTestingLab + " (internal/dataplane)"}
	ruleBridgeNetfilterOff    = Rule{CodeBridgeNetfilterOff, "On a bridge with net.bridge.bridge-nf-call-iptables off, a backend on the client's node replies straight over the bridge; the node never reverses its DNAT and the connection fails. Kubernetes requires the setting on.", srcTestingLab + " (internal/dataplane); Kubernetes network plugin requirements"}
	ruleSourceClientPod       = Rule{CodeSourceClientPod, "The backend sees the client Pod's address.", srcDomainSrc}
	ruleSourceInterceptMasq   = Rule{CodeSourceInterceptMasq, "The node forwards intercepted traffic from its own address; the backend sees a node address.", srcDomainSrc + "; " + srcTestingLab}
	ruleSourceLBProxyProtocol = Rule{CodeSourceLBProxyProtocol, "The backend sees the LB's address; the client address arrives in the PROXY protocol header.", srcDomainSrc}
	ruleSourceLBLostTCP       = Rule{CodeSourceLBLostTCP, "The backend sees the LB's address; TCP clients' addresses can be recovered only by turning on the PROXY protocol.", srcDomainSrc}
	ruleSourceLBLostUDP       = Rule{CodeSourceLBLostUDP, "The backend sees the LB's address; for UDP the client address is lost.", srcDomainSrc}
	ruleSourceLBXFF           = Rule{CodeSourceLBXFF, "The backend sees the LB's address; the client address is in the X-Forwarded-For header.", srcDomainSrc}

	ruleHairpinSocketLB    = Rule{CodeHairpinSocketLB, "Cilium's socket LB in the Pod connects straight to the backend; no packet hairpins (speculative in the seed: not measured).", srcSeedHairpin + " §3"}
	ruleHairpinCilium      = Rule{CodeHairpinCilium, "Cilium rewrites the source of a Pod's traffic to its own Service to 169.254.42.1 (fe80::1); the backend sees that address and network policy is skipped for it.", srcSeedHairpin + " §3, §5"}
	ruleHairpinNoMasq      = Rule{CodeHairpinNoMasq, "Without a source rewrite, the Pod receives a packet from itself on eth0 and drops it as martian: calls to its own Service fail.", srcSeedHairpin + " §2; " + srcTestingLab}
	ruleHairpinMasqRouted  = Rule{CodeHairpinMasqRouted, "kube-proxy's self-masquerade rule rewrites the source to a node address; on a routed node (or with br_netfilter off) that is enough.", srcSeedHairpin + " §3; " + srcTestingLab}
	ruleHairpinBridgeOff   = Rule{CodeHairpinBridgeOff, "On a bridge with br_netfilter on, the bridge will not send the packet back out the port it came in: the CNI must set hairpinMode: true.", srcSeedHairpin + " §2, §3; " + srcTestingLab}
	ruleHairpinBridgeOn    = Rule{CodeHairpinBridgeOn, "Self-masquerade plus bridge port hairpin: calls to its own Service work; the backend sees the node's bridge address.", srcSeedHairpin + " §3; " + srcTestingLab}
	ruleHairpinUnknown     = Rule{CodeHairpinUnknown, "Whether a Pod can call its own Service is not known (self-masquerade rule, Pod attachment, bridge hairpin).", srcSeedHairpin}
	ruleKubeletHairpinDead = Rule{CodeKubeletHairpinDead, "kubelet's hairpinMode is read by nothing since kubenet was removed in 1.24; hairpin is the CNI's job (bridge plugin hairpinMode: true).", srcSeedHairpin + " §3"}
)

// Rules lists the core's rules, for documentation and for tests that check every emitted code
// is documented.
func Rules() []Rule {
	return []Rule{
		ruleServiceName, rulePublicLB, ruleScopeUnknown, ruleIntercepted, ruleInterceptUnknown,
		ruleThroughLB, ruleLBSourceNAT, ruleSourceNATUnknown, ruleSameNodeLoop, ruleNodeSeparated,
		ruleClusterPolicy, ruleBackendShare, ruleBindingUnknown, rulePlacementUnknown,
		ruleSingleNode, ruleL4NoRetry, ruleL7Retry, ruleDeclaredClients,
		ruleVIPSkipsProxyHeader, ruleVIPSkipsTLS, ruleVIPSkipsL7,
		ruleSourceClientPod, ruleSourceNodePort, ruleBridgeNetfilterOff, ruleSourceInterceptMasq, ruleSourceLBProxyProtocol, ruleSourceLBLostTCP,
		ruleSourceLBLostUDP, ruleSourceLBXFF,
		ruleHairpinSocketLB, ruleHairpinCilium, ruleHairpinNoMasq, ruleHairpinMasqRouted,
		ruleHairpinBridgeOff, ruleHairpinBridgeOn, ruleHairpinUnknown, ruleKubeletHairpinDead,
		ruleDecideNoLoop, ruleDecideChosen, ruleDecideRanked, ruleDecideUnmet, ruleDecideTicket,
		ruleDecideDisruptive, ruleDecideL7NoIntercept, ruleDecideTentative, ruleDecideNothing, ruleDecideFailsLeast,
		ruleDecideKeepsOffLB, ruleDecideClientAddress,
	}
}
