package dialect

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loopguard/loopguard/core"
)

// emptyCluster stands in for a nil *Cluster: nothing is known. It is never written to.
var emptyCluster, _ = core.NewCluster(core.ClusterProfile{})

// ServiceBase fills what a LoadBalancer Service says on any cloud: the object, layer 4, the
// listener protocols, the binding from externalTrafficPolicy, placement and hairpin facts.
// It returns ErrNotExposed for Services of other types. A nil Cluster means nothing is known
// about the cluster; the zero NodeFilter is the service controller's default.
func ServiceBase(provider string, svc *corev1.Service, c *core.Cluster, behindLB core.NodeFilter) (core.Exposure, Overrides, error) {
	if c == nil {
		c = emptyCluster
	}
	ref := core.ObjectRef{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		typ := string(svc.Spec.Type)
		if typ == "" {
			typ = string(corev1.ServiceTypeClusterIP) // the API server's default
		}
		return core.Exposure{}, Overrides{}, &core.KindError{Kind: core.ErrNotExposed, Object: ref, Msg: "type is " + typ + ", not LoadBalancer"}
	}
	ov, errs := ReadOverrides(svc)
	// A dialect adds a few reasons (scope, configuration, interception, the cloud's default)
	// and Apply one per declaration: room for them up front instead of a growth per Service.
	e := core.Exposure{Object: ref, Provider: provider, Layer: core.Layer4, Reasons: make([]core.Reason, 0, 4+ov.declared())}
	for i, p := range svc.Spec.Ports {
		proto, err := ParseProtocol(string(p.Protocol))
		if err != nil {
			errs = append(errs, field.NotSupported(field.NewPath("spec", "ports").Index(i).Child("protocol"), p.Protocol, []string{"TCP", "UDP", "SCTP"}))
			continue
		}
		e.Protocols |= proto
	}
	e.Binding = core.NodePortCluster
	if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		e.Binding = core.NodePortLocal
	}
	e.InterceptMasquerades = KubeProxyMasquerades(c.Profile.ProxyMode, svc.Spec.ExternalTrafficPolicy)
	e.Placement = c.Placement(svc, ov.Clients, behindLB)
	e.Hairpin = hairpinFacts(c)
	if err := Invalid(ref, errs); err != nil {
		return core.Exposure{}, Overrides{}, err
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
func KubeProxyMasquerades(m core.ProxyMode, policy corev1.ServiceExternalTrafficPolicy) core.Fact {
	switch m {
	case core.ProxyModeIPTables, core.ProxyModeNFTables, core.ProxyModeIPVS:
		return FactOf(policy != corev1.ServiceExternalTrafficPolicyLocal)
	}
	return core.Unknown
}

// IngressBase fills what an Ingress says on any cloud: layer 7, HTTP (and HTTPS when it has
// TLS), the binding and placement of its backend Services.
func IngressBase(provider string, ing *networkingv1.Ingress, c *core.Cluster, behindLB core.NodeFilter) (core.Exposure, Overrides, error) {
	if c == nil {
		c = emptyCluster
	}
	ref := core.ObjectRef{Kind: "Ingress", Namespace: ing.Namespace, Name: ing.Name}
	ov, errs := ReadOverrides(ing)
	if err := Invalid(ref, errs); err != nil {
		return core.Exposure{}, Overrides{}, err
	}
	e := core.Exposure{Object: ref, Provider: provider, Layer: core.Layer7, Protocols: core.HTTP}
	if len(ing.Spec.TLS) > 0 {
		e.Protocols |= core.HTTPS
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
func IngressBinding(backends []*corev1.Service) core.Binding {
	if len(backends) == 0 {
		return core.BindingUnknown
	}
	for _, s := range backends {
		if s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
			return core.NodePortCluster
		}
	}
	return core.NodePortLocal
}

// Codes of the rules this package cites; Rules lists the rules.
const (
	CodeOfferNodeSeparation core.Code = "offer-node-separation"
	CodeOfferDNSSteering    core.Code = "offer-dns-steering"
	CodeOfferThroughLB      core.Code = "offer-through-lb"
	CodeThroughLBLoops      core.Code = "through-lb-would-loop"
	CodeClientsUndeclared   core.Code = "clients-undeclared"
	CodeOverride            core.Code = "loopguard-annotation"
)

// Rules lists the rules of the offers every cloud can make and of loopguard's own
// annotations, for documentation and for tests that check every emitted code is documented.
func Rules() []core.Rule {
	return []core.Rule{ruleOverride, ruleOfferNodeSeparation, ruleOfferDNSSteering, ruleClientsUndeclared, ruleOfferThroughLB, ruleThroughLBLoops}
}

// Rule returns one of this package's rules by its code, for a dialect that cites it with a
// message of its own (Rule(CodeOfferDNSSteering).Because(...)). The rules are values: what it
// returns is a copy. An unknown code gives a Rule with only the code.
func Rule(c core.Code) core.Rule {
	for _, r := range Rules() {
		if r.Code == c {
			return r
		}
	}
	return core.Rule{Code: c}
}

// Rules for the offers every cloud can make.
var (
	ruleOfferNodeSeparation = core.Rule{Code: CodeOfferNodeSeparation, Summary: "Keep traffic on the LB without source NAT, and keep clients off every node that runs a backend: externalTrafficPolicy Local (or direct-to-Pod) plus required pod anti-affinity on kubernetes.io/hostname.",
		Source: "docs/sources.md#vke-ip-mode (Proxy mode: client and server Pods must not share a node); docs/sources.md#loopback"}
	ruleOfferDNSSteering = core.Rule{Code: CodeOfferDNSSteering, Summary: "Make in-cluster clients use the Service name, or rewrite the name they use to the Service in CoreDNS (rewrite plugin); the LB is not used for them.",
		Source: "docs/sources.md#serving-paths (tke-guide docs/faq/clb-loopback.md)"}
	ruleOfferThroughLB = core.Rule{Code: CodeOfferThroughLB, Summary: "Stop the nodes intercepting the LB address, so in-cluster traffic reaches the load balancer and gets what the backends need from it (KEP-1860 ipMode Proxy).",
		Source: "docs/sources.md#lb-dependence; docs/sources.md#serving-paths"}
	ruleThroughLBLoops = core.Rule{Code: CodeThroughLBLoops, Summary: "Through the load balancer, a connection can loop unless the LB replaces the client's source address or clients are kept off the backends' nodes: turn on LB source NAT first.",
		Source: "docs/sources.md#serving-paths; docs/sources.md#loopback"}
	ruleClientsUndeclared = core.Rule{Code: CodeClientsUndeclared, Summary: "No in-cluster clients are declared (profile clients or the loopguard.io/clients annotation), so they cannot be kept apart from the backends.",
		Source: "docs/sources.md#loopback"}
)

// ThroughLBOffer is the through-lb remedy for an intercepted exposure, with the dialect's
// action (how this cloud stops the interception). It is unmet while the path through the LB
// would loop: without LB source NAT and without clients kept apart.
func ThroughLBOffer(e *core.Exposure, action string) core.Offer {
	o := core.Offer{
		Remedy: core.ThroughLB,
		Path:   core.PathProxy,
		Action: action,
		Costs:  core.Costs{ClientIP: core.ClientIPKept},
		Reason: ruleOfferThroughLB.Reason(),
	}
	if e.LBSourceNAT == core.Yes {
		o.Costs.ClientIP = e.SourceBehindLBNAT().ClientIP
	}
	if e.LBSourceNAT != core.Yes && e.Placement.Separated != core.Yes {
		kind := core.PreconditionUnsupported
		if e.LBSourceNAT == core.Unknown {
			kind = core.PreconditionUnknown
		}
		o.Unmet = append(o.Unmet, core.Precondition{Kind: kind, Reason: ruleThroughLBLoops.Reason()})
	}
	return o
}

// NodeSeparationOffer is the node-separation remedy for an exposure with the given backend
// labels (a Service selector). It is unmet when no clients are declared.
func NodeSeparationOffer(e *core.Exposure, backendLabels map[string]string) core.Offer {
	// One concatenation: appending the second clause copied the first again.
	etp := ""
	if e.Binding == core.NodePortCluster {
		etp = "; set spec.externalTrafficPolicy: Local"
	}
	action := "add a required podAntiAffinity (topologyKey kubernetes.io/hostname) to the client Pods against " + PodsLabelled(backendLabels) + etp
	o := core.Offer{
		Remedy: core.NodeSeparation,
		Path:   core.PathProxy,
		Action: action,
		Costs:  core.Costs{ClientIP: core.ClientIPKept, SchedulingChange: true},
		Reason: ruleOfferNodeSeparation.Reason(),
	}
	if e.Placement.ClientNodes == nil {
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnknown, Reason: ruleClientsUndeclared.Reason()})
	}
	if len(backendLabels) == 0 {
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnsupported,
			Reason: ruleOfferNodeSeparation.Because("the backends have no selector labels to keep clients apart from")})
	}
	return o
}

// DNSSteeringOffer is the DNS-steering remedy: clients use service (namespace/name) instead of
// the LB address. hosts are names clients use today (Ingress rules), for the CoreDNS snippet.
func DNSSteeringOffer(e *core.Exposure, serviceNamespace, serviceName string, hosts []string) core.Offer {
	target := serviceName + "." + serviceNamespace + ".svc.cluster.local"
	action := "point in-cluster clients at " + target + " instead of the LB address"
	if len(hosts) > 0 {
		var sb strings.Builder
		for _, h := range hosts {
			fmt.Fprintf(&sb, "rewrite name exact %s %s\n", h, target)
		}
		action += "; or add to the CoreDNS Corefile (rewrite plugin):\n" + sb.String()
	}
	return core.Offer{
		Remedy: core.DNSSteering,
		// The LB address is no longer used, so the KEP-1860 path does not change.
		Path:   core.PathUnknown,
		Action: action,
		Costs:  core.Costs{LosesLBFeatures: true, ClientIP: core.ClientIPKept, ClientChange: true},
		Reason: ruleOfferDNSSteering.Reason(),
	}
}

// PodsLabelled names the Pods a selector picks, for actions: "Pods labelled app=web,tier=x".
func PodsLabelled(m map[string]string) string {
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

// Values of core.AnnotationBackendExpects.
var backendExpectsValues = []string{"proxy-protocol", "proxy-protocol-v1", "proxy-protocol-v2", "tls", "l7-routing", "client-address", "none"}

// ruleOverride explains a fact that came from a loopguard.io annotation.
var ruleOverride = core.Rule{Code: CodeOverride, Summary: "A loopguard.io annotation on the object declares this fact.",
	Source: "docs/annotations.md"}

// Overrides are the facts declared by loopguard.io annotations on one object.
type Overrides struct {
	Scope       core.Scope
	LBSourceNAT core.Fact
	Access      core.ClientAccess
	// Clients is nil when the object declares no client selector.
	Clients labels.Selector
	// Needs is nil when the object does not declare what its backends need from the LB.
	Needs *core.LBDependence
}

var annotationsPath = field.NewPath("metadata", "annotations")

// AnnotationPath is the field path of one annotation, for error messages.
func AnnotationPath(key string) *field.Path { return annotationsPath.Key(key) }

// ReadOverrides parses the loopguard.io annotations of an object.
func ReadOverrides(obj metav1.Object) (Overrides, field.ErrorList) {
	var o Overrides
	var errs field.ErrorList
	ann := obj.GetAnnotations()
	if v, ok := ann[core.AnnotationLBScope]; ok {
		switch core.Scope(v) {
		case core.Private, core.Public:
			o.Scope = core.Scope(v)
		default:
			errs = append(errs, field.NotSupported(AnnotationPath(core.AnnotationLBScope), v, []string{string(core.Private), string(core.Public)}))
		}
	}
	if _, ok := ann[core.AnnotationLBSourceNAT]; ok {
		f, err := BoolAnnotation(ann, core.AnnotationLBSourceNAT)
		if err != nil {
			errs = append(errs, err)
		}
		o.LBSourceNAT = f
	}
	if v, ok := ann[core.AnnotationClientAccess]; ok {
		switch v {
		case "lb-address":
			o.Access = core.AccessLBAddress
		case string(core.AccessServiceName):
			o.Access = core.AccessServiceName
		default:
			errs = append(errs, field.NotSupported(AnnotationPath(core.AnnotationClientAccess), v, []string{"lb-address", string(core.AccessServiceName)}))
		}
	}
	if v, ok := ann[core.AnnotationBackendExpects]; ok {
		needs, err := parseBackendExpects(v)
		if err != nil {
			errs = append(errs, err)
		} else {
			o.Needs = needs
		}
	}
	if v, ok := ann[core.AnnotationClients]; ok {
		sel, err := labels.Parse(v)
		if err != nil {
			errs = append(errs, field.Invalid(AnnotationPath(core.AnnotationClients), v, "not a label selector: "+err.Error()))
		} else {
			o.Clients = sel
		}
	}
	return o, errs
}

// declared is how many reasons Apply adds.
func (o *Overrides) declared() int {
	n := 0
	if o.Scope != core.ScopeUnknown {
		n++
	}
	if o.LBSourceNAT != core.Unknown {
		n++
	}
	if o.Needs != nil {
		n++
	}
	return n
}

// Apply writes the declared facts over a dialect's, with a reason for each.
func (o *Overrides) Apply(e *core.Exposure) {
	if o.Scope != core.ScopeUnknown {
		e.Scope = o.Scope
		e.Reasons = append(e.Reasons, ruleOverride.Because(core.AnnotationLBScope+": "+string(o.Scope)))
	}
	if o.LBSourceNAT != core.Unknown {
		e.LBSourceNAT = o.LBSourceNAT
		e.Reasons = append(e.Reasons, ruleOverride.Because(core.AnnotationLBSourceNAT+": "+boolString(o.LBSourceNAT)))
	}
	if o.Access != core.AccessLBAddress {
		e.Access = o.Access
	}
	if o.Needs != nil {
		// A declaration is the whole answer: what it does not name, the backends do not need.
		e.Needs = *o.Needs
		if e.Needs.ProxyHeader == core.No && e.ProxyProtocol == core.Yes {
			// The LB's own header cannot be declared away; the dialect read it.
			e.Needs.ProxyHeader = core.Yes
		}
		e.Reasons = append(e.Reasons, ruleOverride.Because(core.AnnotationBackendExpects+": "+o.Needs.String()))
	}
}

// parseBackendExpects reads AnnotationBackendExpects.
func parseBackendExpects(v string) (*core.LBDependence, *field.Error) {
	d := &core.LBDependence{ProxyHeader: core.No, TLS: core.No, L7Routing: core.No}
	none := false
	for _, item := range strings.Split(v, ",") {
		switch item = strings.TrimSpace(item); item {
		case "proxy-protocol":
			d.ProxyHeader = core.Yes
		case "proxy-protocol-v1", "proxy-protocol-v2":
			if d.ProxyVersion != "" && d.ProxyVersion != item[len(item)-2:] {
				return nil, field.Invalid(AnnotationPath(core.AnnotationBackendExpects), v, "name one PROXY protocol version")
			}
			d.ProxyHeader, d.ProxyVersion = core.Yes, item[len(item)-2:]
		case "tls":
			d.TLS = core.Yes
		case "l7-routing":
			d.L7Routing = core.Yes
		case "client-address":
			d.ClientAddress = core.Yes
		case "none":
			none = true
		default:
			return nil, field.NotSupported(AnnotationPath(core.AnnotationBackendExpects), item, backendExpectsValues)
		}
	}
	if none && (d.Any() == core.Yes || d.ClientAddress == core.Yes) {
		return nil, field.Invalid(AnnotationPath(core.AnnotationBackendExpects), v, "none cannot be combined with another value")
	}
	return d, nil
}

func boolString(f core.Fact) string {
	if f == core.Yes {
		return "true"
	}
	return "false"
}

// BoolAnnotation reads an annotation that must be exactly "true" or "false". Cloud controllers
// compare these strings literally, so "True", "1" or a typo like "ture" would be silently read
// as false by them; loopguard refuses them instead. A missing annotation is Unknown.
func BoolAnnotation(ann map[string]string, key string) (core.Fact, *field.Error) {
	v, ok := ann[key]
	if !ok {
		return core.Unknown, nil
	}
	switch v {
	case "true":
		return core.Yes, nil
	case "false":
		return core.No, nil
	}
	hint := ""
	if l := strings.ToLower(strings.TrimSpace(v)); l == "true" || l == "false" {
		hint = " (values are case-sensitive)"
	}
	fe := field.NotSupported(AnnotationPath(key), v, []string{"true", "false"})
	fe.Detail += hint
	return core.Unknown, fe
}

// F is a field step of an edit path; K selects a list element by its keys.
func F(name string) core.PathElem         { return core.PathElem{Field: name} }
func K(keys map[string]any) core.PathElem { return core.PathElem{Keys: keys} }

// TypedFromUnstructured converts a live Service or Ingress read as unstructured into the typed
// object dialects read.
func TypedFromUnstructured(u *unstructured.Unstructured) (runtime.Object, error) {
	var obj runtime.Object
	switch u.GetKind() {
	case "Service":
		obj = &corev1.Service{}
	case "Ingress":
		obj = &networkingv1.Ingress{}
	default:
		return nil, &core.KindError{Kind: core.ErrUnsupported, Msg: "cannot convert kind " + u.GetKind()}
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// Invalid builds a *core.InvalidError naming every field at fault; it returns nil when errs is
// empty, so a dialect can collect errors and return Invalid(ref, errs) whatever they are.
func Invalid(obj core.ObjectRef, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return &core.InvalidError{Object: obj, Errs: errs}
}

type hairpinKey struct{}

// hairpinFacts is the profile's HairpinFacts, derived once per Cluster and shared by its
// exposures (core.Exposure.Hairpin: do not modify): one per Service was a few per cent of
// what evaluating 10,000 Services allocated.
func hairpinFacts(c *core.Cluster) *core.HairpinFacts {
	h, _ := c.Memo(hairpinKey{}, func() any { return c.Profile.HairpinFacts() }).(*core.HairpinFacts)
	return h
}

// FactOf converts a known boolean to a Fact.
func FactOf(b bool) core.Fact {
	if b {
		return core.Yes
	}
	return core.No
}

// ParseProtocol maps a Kubernetes or cloud protocol name to a Protocols bit.
func ParseProtocol(s string) (core.Protocols, error) {
	switch strings.ToUpper(s) {
	case "TCP", "":
		// Kubernetes defaults a ServicePort's protocol to TCP.
		return core.TCP, nil
	case "UDP":
		return core.UDP, nil
	case "SCTP":
		return core.SCTP, nil
	case "HTTP":
		return core.HTTP, nil
	case "HTTPS":
		return core.HTTPS, nil
	}
	return 0, fmt.Errorf("unsupported protocol %q", s)
}
