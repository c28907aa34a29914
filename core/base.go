package core

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Helpers for dialects: the cloud-independent parts of an exposure and of the offers every
// cloud can make. A dialect starts from ServiceBase or IngressBase, adds its cloud's facts,
// then applies the object's Overrides last so loopguard.io annotations win.

// emptyCluster stands in for a nil *Cluster: nothing is known. It is never written to.
var emptyCluster, _ = NewCluster(ClusterProfile{})

// ServiceBase fills what a LoadBalancer Service says on any cloud: the object, layer 4, the
// listener protocols, the binding from externalTrafficPolicy, placement and hairpin facts.
// It returns ErrNotExposed for Services of other types. A nil Cluster means nothing is known
// about the cluster; the zero NodeFilter is the service controller's default.
func ServiceBase(provider string, svc *corev1.Service, c *Cluster, behindLB NodeFilter) (Exposure, Overrides, error) {
	if c == nil {
		c = emptyCluster
	}
	ref := ObjectRef{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		typ := string(svc.Spec.Type)
		if typ == "" {
			typ = string(corev1.ServiceTypeClusterIP) // the API server's default
		}
		return Exposure{}, Overrides{}, &KindError{Kind: ErrNotExposed, Object: ref, Msg: "type is " + typ + ", not LoadBalancer"}
	}
	ov, errs := ReadOverrides(svc)
	// A dialect adds a few reasons (scope, configuration, interception): room for them up
	// front instead of three growths per Service.
	e := Exposure{Object: ref, Provider: provider, Layer: Layer4, Reasons: make([]Reason, 0, 4)}
	for i, p := range svc.Spec.Ports {
		proto, err := ParseProtocol(string(p.Protocol))
		if err != nil {
			errs = append(errs, field.NotSupported(field.NewPath("spec", "ports").Index(i).Child("protocol"), p.Protocol, []string{"TCP", "UDP", "SCTP"}))
			continue
		}
		e.Protocols |= proto
	}
	e.Binding = NodePortCluster
	if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		e.Binding = NodePortLocal
	}
	e.InterceptMasquerades = KubeProxyMasquerades(c.Profile.ProxyMode, svc.Spec.ExternalTrafficPolicy)
	e.Placement = c.Placement(svc, ov.Clients, behindLB)
	e.Hairpin = c.Profile.HairpinFacts()
	if err := Invalid(ref, errs); err != nil {
		return Exposure{}, Overrides{}, err
	}
	return e, ov, nil
}

// KubeProxyMasquerades says whether kube-proxy gives intercepted LB traffic a node source
// address. In iptables and nftables mode its external-destination chain (KUBE-EXT) marks
// traffic for masquerade under externalTrafficPolicy Cluster, while under Local traffic from
// Pods short-circuits to the service chain with the Pod's address kept (pkg/proxy/iptables
// proxier.go "masquerade traffic for ... external destinations" / "pod traffic for ...";
// measured in the dataplane lab, internal/netlab row04). In ipvs mode KUBE-LOAD-BALANCER
// returns early only for Local services and marks the rest for masquerade
// (pkg/proxy/ipvs proxier.go). So the seeds' "real source IP can be obtained" with
// intra-cluster forwarding holds for in-cluster clients under Local. eBPF dataplanes and
// unknown modes are Unknown.
func KubeProxyMasquerades(m ProxyMode, policy corev1.ServiceExternalTrafficPolicy) Fact {
	switch m {
	case ProxyModeIPTables, ProxyModeNFTables, ProxyModeIPVS:
		return FactOf(policy != corev1.ServiceExternalTrafficPolicyLocal)
	}
	return Unknown
}

// IngressBase fills what an Ingress says on any cloud: layer 7, HTTP (and HTTPS when it has
// TLS), the binding and placement of its backend Services.
func IngressBase(provider string, ing *networkingv1.Ingress, c *Cluster, behindLB NodeFilter) (Exposure, Overrides, error) {
	if c == nil {
		c = emptyCluster
	}
	ref := ObjectRef{Kind: "Ingress", Namespace: ing.Namespace, Name: ing.Name}
	ov, errs := ReadOverrides(ing)
	if err := Invalid(ref, errs); err != nil {
		return Exposure{}, Overrides{}, err
	}
	e := Exposure{Object: ref, Provider: provider, Layer: Layer7, Protocols: HTTP}
	if len(ing.Spec.TLS) > 0 {
		e.Protocols |= HTTPS
	}
	backends := c.IngressBackends(ing)
	e.Binding = IngressBinding(backends)
	if len(backends) > 0 {
		e.Placement = c.IngressPlacement(backends, ov.Clients, behindLB)
	}
	return e, ov, nil
}

// IngressBinding is NodePortLocal when every known backend Service has
// externalTrafficPolicy Local, NodePortCluster when one has Cluster, unknown with none known.
func IngressBinding(backends []*corev1.Service) Binding {
	if len(backends) == 0 {
		return BindingUnknown
	}
	for _, s := range backends {
		if s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
			return NodePortCluster
		}
	}
	return NodePortLocal
}

// Rules for the offers every cloud can make.
var (
	RuleOfferNodeSeparation = Rule{"offer-node-separation",
		"Keep traffic on the LB without source NAT, and keep clients off every node that runs a backend: externalTrafficPolicy Local (or direct-to-Pod) plus required pod anti-affinity on kubernetes.io/hostname.",
		"docs/sources.md#vke-ip-mode (Proxy mode: client and server Pods must not share a node); docs/sources.md#loopback"}
	RuleOfferDNSSteering = Rule{"offer-dns-steering",
		"Make in-cluster clients use the Service name, or rewrite the name they use to the Service in CoreDNS (rewrite plugin); the LB is not used for them.",
		"docs/sources.md#serving-paths (tke-guide docs/faq/clb-loopback.md)"}
	RuleOfferThroughLB = Rule{"offer-through-lb",
		"Stop the nodes intercepting the LB address, so in-cluster traffic reaches the load balancer and gets what the backends need from it (KEP-1860 ipMode Proxy).",
		"docs/sources.md#lb-dependence; docs/sources.md#serving-paths"}
	RuleThroughLBLoops = Rule{"through-lb-would-loop",
		"Through the load balancer, a connection can loop unless the LB replaces the client's source address or clients are kept off the backends' nodes: turn on LB source NAT first.",
		"docs/sources.md#serving-paths; docs/sources.md#loopback"}
	RuleClientsUndeclared = Rule{"clients-undeclared",
		"No in-cluster clients are declared (profile clients or the loopguard.io/clients annotation), so they cannot be kept apart from the backends.",
		"docs/sources.md#loopback"}
)

// ThroughLBOffer is the through-lb remedy for an intercepted exposure, with the dialect's
// action (how this cloud stops the interception). It is unmet while the path through the LB
// would loop: without LB source NAT and without clients kept apart.
func ThroughLBOffer(e *Exposure, action string) Offer {
	o := Offer{
		Remedy: ThroughLB,
		Path:   PathProxy,
		Action: action,
		Costs:  Costs{ClientIP: ClientIPKept},
		Reason: RuleOfferThroughLB.Reason(),
	}
	if e.LBSourceNAT == Yes {
		o.Costs.ClientIP = lbSource(e).ClientIP
	}
	if e.LBSourceNAT != Yes && e.Placement.Separated != Yes {
		kind := PreconditionUnsupported
		if e.LBSourceNAT == Unknown {
			kind = PreconditionUnknown
		}
		o.Unmet = append(o.Unmet, Precondition{Kind: kind, Reason: RuleThroughLBLoops.Reason()})
	}
	return o
}

// NodeSeparationOffer is the node-separation remedy for an exposure with the given backend
// labels (a Service selector). It is unmet when no clients are declared.
func NodeSeparationOffer(e *Exposure, backendLabels map[string]string) Offer {
	var b strings.Builder
	b.WriteString("add a required podAntiAffinity (topologyKey kubernetes.io/hostname) to the client Pods against ")
	b.WriteString(formatLabels(backendLabels))
	if e.Binding == NodePortCluster {
		b.WriteString("; set spec.externalTrafficPolicy: Local")
	}
	o := Offer{
		Remedy: NodeSeparation,
		Path:   PathProxy,
		Action: b.String(),
		Costs:  Costs{ClientIP: ClientIPKept, SchedulingChange: true},
		Reason: RuleOfferNodeSeparation.Reason(),
	}
	if e.Placement.ClientNodes == nil {
		o.Unmet = append(o.Unmet, Precondition{Kind: PreconditionUnknown, Reason: RuleClientsUndeclared.Reason()})
	}
	if len(backendLabels) == 0 {
		o.Unmet = append(o.Unmet, Precondition{Kind: PreconditionUnsupported,
			Reason: RuleOfferNodeSeparation.Because("the backends have no selector labels to keep clients apart from")})
	}
	return o
}

// DNSSteeringOffer is the DNS-steering remedy: clients use service (namespace/name) instead of
// the LB address. hosts are names clients use today (Ingress rules), for the CoreDNS snippet.
func DNSSteeringOffer(e *Exposure, serviceNamespace, serviceName string, hosts []string) Offer {
	target := fmt.Sprintf("%s.%s.svc.cluster.local", serviceName, serviceNamespace)
	action := "point in-cluster clients at " + target + " instead of the LB address"
	if len(hosts) > 0 {
		var sb strings.Builder
		for _, h := range hosts {
			fmt.Fprintf(&sb, "rewrite name exact %s %s\n", h, target)
		}
		action += "; or add to the CoreDNS Corefile (rewrite plugin):\n" + sb.String()
	}
	return Offer{
		Remedy: DNSSteering,
		// The LB address is no longer used, so the KEP-1860 path does not change.
		Path:   PathUnknown,
		Action: action,
		Costs:  Costs{LosesLBFeatures: true, ClientIP: ClientIPKept, ClientChange: true},
		Reason: RuleOfferDNSSteering.Reason(),
	}
}

func formatLabels(m map[string]string) string {
	if len(m) == 0 {
		return "the backend Pods"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return "Pods labelled " + strings.Join(parts, ",")
}
