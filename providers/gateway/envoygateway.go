package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/loopguard/loopguard/core"
)

// Envoy Gateway (github.com/envoyproxy/gateway), read at v1.9.1 unless a comment says
// otherwise: it generates one Service per Gateway in its own namespace, or one per GatewayClass
// when the class's EnvoyProxy merges its Gateways; ClientTrafficPolicies configure its
// listeners' PROXY protocol and client-IP detection.

// EnvoyGateway is Envoy Gateway.
const EnvoyGateway Implementation = "envoy-gateway"

// DefaultEnvoyGatewayNamespace is Envoy Gateway's default namespace (its Helm chart's and
// quickstart's).
const DefaultEnvoyGatewayNamespace = "envoy-gateway-system"

const (
	envoyGatewayController = "gateway.envoyproxy.io/gatewayclass-controller"
	envoyGatewayGroup      = "gateway.envoyproxy.io"
	kindEnvoyProxy         = "EnvoyProxy"
	kindClientTraffic      = "ClientTrafficPolicy"
	// internal/gatewayapi/translator.go OwningGateway*Label, OwningGatewayClassLabel: the
	// Service lives in Envoy Gateway's own namespace, so the Gateway's namespace is a label too.
	labelEGOwningName      = "gateway.envoyproxy.io/owning-gateway-name"
	labelEGOwningNamespace = "gateway.envoyproxy.io/owning-gateway-namespace"
	labelEGOwningClass     = "gateway.envoyproxy.io/owning-gatewayclass"
)

// CodeMergedGateways is the code of the rule about a Service shared by the class's Gateways.
const CodeMergedGateways core.Code = "gateway-merged-gateways"

var ruleMergedGateways = core.Rule{Code: CodeMergedGateways,
	Summary: "Envoy Gateway merges the GatewayClass's Gateways (EnvoyProxy mergeGateways): one proxy and one LoadBalancer Service serve them all, so they share the verdict and the fix, which goes on the class's EnvoyProxy (the Service's metadata comes from only one of the Gateways).",
	Source:  srcAttribution}

type envoyGatewayUnit struct{ base }

// envoyGatewayConfig is what the unit read for a Gateway: its EnvoyProxy, when known.
type envoyGatewayConfig struct {
	proxy *unstructured.Unstructured
}

func (envoyGatewayUnit) id() Implementation        { return EnvoyGateway }
func (envoyGatewayUnit) name() string              { return "Envoy Gateway" }
func (envoyGatewayUnit) controllerNames() []string { return []string{envoyGatewayController} }
func (envoyGatewayUnit) readsUnknown() bool        { return true }
func (envoyGatewayUnit) rules() []core.Rule        { return []core.Rule{ruleMergedGateways} }

func (envoyGatewayUnit) defaults(o *Options) {
	if o.EnvoyGatewayNamespace == "" {
		o.EnvoyGatewayNamespace = DefaultEnvoyGatewayNamespace
	}
}

func (envoyGatewayUnit) ownerByMarks(svc *corev1.Service) (Owner, bool) {
	if n, ns := svc.Labels[labelEGOwningName], svc.Labels[labelEGOwningNamespace]; n != "" && ns != "" {
		return Owner{Namespace: ns, Name: n, By: "labels " + labelEGOwningName + ", " + labelEGOwningNamespace}, true
	}
	return Owner{}, false
}

func (envoyGatewayUnit) classService(svc *corev1.Service) (string, string, bool) {
	class, ok := MergedClassOf(svc)
	return class, "label " + labelEGOwningClass + ", the EnvoyProxy's mergeGateways", ok
}

func (envoyGatewayUnit) resources() []schema.GroupVersionResource {
	return []schema.GroupVersionResource{
		{Group: envoyGatewayGroup, Version: "v1alpha1", Resource: "envoyproxies"},
		{Group: envoyGatewayGroup, Version: "v1alpha1", Resource: "clienttrafficpolicies"},
	}
}

// namespaces: Envoy Gateway generates the Services in its own namespace.
func (envoyGatewayUnit) namespaces(_ *unstructured.Unstructured, o Options) []string {
	return []string{o.EnvoyGatewayNamespace}
}

func (envoyGatewayUnit) read(v *view, c *core.Cluster, _ Options) {
	v.cfg = envoyGatewayConfig{proxy: envoyProxyOf(v.gw, v.class, c)}
}

func envoyProxy(v *view) *unstructured.Unstructured {
	cfg, _ := v.cfg.(envoyGatewayConfig)
	return cfg.proxy
}

func (envoyGatewayUnit) sharedByClass(v *view) bool {
	ep := envoyProxy(v)
	return ep != nil && mergeGatewaysOn(ep)
}

// service: internal/infrastructure/kubernetes/proxy/resource_provider.go: the Service is in
// Envoy Gateway's namespace, labelled with the owning Gateway; externalTrafficPolicy defaults
// to Local (api/v1alpha1/kubernetes_helpers.go); EnvoyProxy's envoyService annotations and
// labels are copied over the Gateway's.
func (envoyGatewayUnit) service(v *view, svc *corev1.Service, o Options) {
	gw := v.gw
	svc.Namespace = o.EnvoyGatewayNamespace
	svc.Name = envoyServiceName(gw.Namespace, gw.Name)
	svc.Labels[labelEGOwningName] = gw.Name
	svc.Labels[labelEGOwningNamespace] = gw.Namespace
	if v.shared {
		// The class's one Service, named after the class (translator.go IRKey).
		svc.Name = hashedName(string(gw.Spec.GatewayClassName))
		delete(svc.Labels, labelEGOwningName)
		delete(svc.Labels, labelEGOwningNamespace)
		svc.Labels[labelEGOwningClass] = string(gw.Spec.GatewayClassName)
	}
	svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	if ep := envoyProxy(v); ep != nil {
		es := envoyServiceOf(ep)
		for k, val := range stringMap(es, "annotations") {
			if svc.Annotations == nil {
				svc.Annotations = map[string]string{}
			}
			svc.Annotations[k] = val
		}
		for k, val := range stringMap(es, "labels") {
			svc.Labels[k] = val
		}
		if p, ok, _ := unstructured.NestedString(es, "externalTrafficPolicy"); ok {
			svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicy(p)
		}
		if t, ok, _ := unstructured.NestedString(es, "type"); ok {
			svc.Spec.Type = corev1.ServiceType(t)
		}
	}
}

func (envoyGatewayUnit) proxyNeeds(v *view, c *core.Cluster) (need, bool, error) {
	return envoyGatewayNeeds(v, c)
}

func (envoyGatewayUnit) clientAddress(v *view, c *core.Cluster) (clientAddress, bool, error) {
	return envoyGatewayClientAddress(v, c)
}

// notes: a merged Service is one for every Gateway of the class.
func (envoyGatewayUnit) notes(v *view, c *core.Cluster) []core.Reason {
	if !v.shared {
		return nil
	}
	gw := v.gw
	others := "no other Gateway of the class is among the inputs"
	if c != nil {
		var list []string
		for _, g := range gatewaysOfClass(c, string(gw.Spec.GatewayClassName)) {
			if g != gw.Namespace+"/"+gw.Name {
				list = append(list, g)
			}
		}
		if len(list) > 0 {
			others = "it also serves Gateway " + strings.Join(list, ", ")
		}
	}
	return []core.Reason{ruleMergedGateways.Because(fmt.Sprintf("GatewayClass %s merges its Gateways (the EnvoyProxy's mergeGateways): Service %s/%s is one for all of them; %s. Its verdict and its fix are shared; annotations and labels go on the EnvoyProxy's envoyService, since Envoy Gateway takes the Service's from only one of the Gateways.",
		gw.Spec.GatewayClassName, v.svc.Namespace, v.svc.Name, others))}
}

// override: the EnvoyProxy's envoyService annotations and labels are copied after the
// Gateway's (resource_provider.go), so a key it sets goes there. Merged Gateways share one
// Service whose metadata Envoy Gateway takes from whichever Gateway it builds last
// (internal/gatewayapi/translator.go, InitIRs stores each Gateway's infrastructure under the
// class's one key): only the class's EnvoyProxy sets it for all of them.
func (envoyGatewayUnit) override(v *view, meta, key string) (override, bool) {
	ep := envoyProxy(v)
	if ep == nil {
		return override{}, false
	}
	if _, set := stringMap(envoyServiceOf(ep), meta)[key]; !set && !v.shared {
		return override{}, false
	}
	o := override{key: core.ObjectKey{APIVersion: ep.GetAPIVersion(), Kind: kindEnvoyProxy, Namespace: ep.GetNamespace(), Name: ep.GetName()},
		path: []core.PathElem{{Field: "spec"}, {Field: "provider"}, {Field: "kubernetes"}, {Field: "envoyService"}, {Field: meta}, {Field: key}}}
	if t, _, _ := unstructured.NestedString(ep.Object, "spec", "provider", "type"); t == "" {
		// An EnvoyProxy with only mergeGateways (Envoy Gateway's own example) has no
		// spec.provider, whose type the CRD requires (api/v1alpha1/envoyproxy_types.go,
		// EnvoyProxyProvider): "Kubernetes" is the provider that renders the Service.
		o.also = []core.Edit{{Path: []core.PathElem{{Field: "spec"}, {Field: "provider"}, {Field: "type"}}, Value: "Kubernetes"}}
	}
	return o, true
}

func (envoyGatewayUnit) ownResource(v *view) string {
	if v.shared {
		return "the spec.provider.kubernetes.envoyService of the EnvoyProxy that sets mergeGateways (the GatewayClass's spec.parametersRef, or the envoyProxy default of Envoy Gateway's configuration)"
	}
	return "the EnvoyProxy's spec.provider.kubernetes.envoyService (referenced by the Gateway's spec.infrastructure.parametersRef or the GatewayClass's spec.parametersRef)"
}

func (envoyGatewayUnit) expectProxy() remedy {
	return remedy{ID: "envoy-gateway/client-traffic-policy-proxy-protocol", Object: "a ClientTrafficPolicy whose targetRefs name the Gateway", Field: "spec.proxyProtocol", Value: "{}"}
}

func (envoyGatewayUnit) doc() unitDoc {
	return unitDoc{
		Expects:       "a PROXY protocol header on the listeners a ClientTrafficPolicy's `proxyProtocol` covers (or accepts one, `optional: true`); the client address where its `clientIPDetection` says",
		Service:       "Envoy Gateway's namespace (`envoy-gateway-system`), named `envoy-<ns>-<name>-<first 8 hex digits of sha256(\"ns/name\")>`, `externalTrafficPolicy: Local` by default; with merged Gateways one Service for the class, `envoy-<class>-<sha256(\"class\")>`; annotations, labels, type and `externalTrafficPolicy` from the EnvoyProxy's `spec.provider.kubernetes.envoyService`",
		Marks:         "labels `gateway.envoyproxy.io/owning-gateway-name` and `-namespace` (its ownerReference is the GatewayClass); a merged Service: `gateway.envoyproxy.io/owning-gatewayclass` instead ([below](#merged-gateways))",
		ProxyProtocol: "a ClientTrafficPolicy in the Gateway's namespace whose `targetRefs` (or `targetRef`) name the Gateway, or whose `targetSelectors` (same namespace) match its labels: `spec.proxyProtocol` (required unless `optional: true`, which is only a note, `gateway-proxy-protocol-optional`; a null value is unset) or the deprecated `spec.enableProxyProtocol: true` (`proxyProtocol` wins where both are set). Listener by listener, as Envoy Gateway applies them: a policy whose `targetRefs` entry has a `sectionName` configures that listener only and wins there over one for the whole Gateway; of several for the same scope the oldest (then by namespace/name) counts. The listeners of [ListenerSets](#listenersets) attached to the Gateway count too, with the policies that target those ListenerSets. The report names the policies and the listeners (with their ports, and the ListenerSet a listener comes from) that require the header",
		ClientAddress: "ClientTrafficPolicy `spec.clientIPDetection` (`xForwardedFor`, `customHeader` or `directSourceIP`) of the policy that configures each listener (the same resolution as its `proxyProtocol`, `sectionName` included); the report names the listeners. `xForwardedFor.numTrustedHops` is a uint32. `customHeader.failClosed: true` answers a request without the header 403 Forbidden, so an in-cluster client that does not send it fails on every path: a note (`gateway-client-ip-header-required`)",
		Fix:           "`spec.infrastructure.annotations` / `labels` of the Gateway, or, for a key the EnvoyProxy's `spec.provider.kubernetes.envoyService` also sets (copied after the Gateway's) and for merged Gateways, there",
		Sources: []source{{Repo: "envoyproxy/gateway", Version: "v1.9.1", Files: []string{
			"internal/gatewayapi/translator.go", "internal/infrastructure/kubernetes/proxy/resource_provider.go",
			"api/v1alpha1/clienttrafficpolicy_types.go", "api/v1alpha1/envoyproxy_types.go",
			"internal/gatewayapi/clienttrafficpolicy.go", "internal/gatewayapi/contexts.go"}}},
	}
}

// MergedClassOf reports whether svc is the one Service Envoy Gateway generates for every
// Gateway of a GatewayClass whose EnvoyProxy sets spec.mergeGateways, and names that class:
// such a Service carries the label gateway.envoyproxy.io/owning-gatewayclass instead of the
// owning-gateway labels (internal/gatewayapi/translator.go, buildIR, GatewayClassOwnerLabel,
// v1.9.0).
func MergedClassOf(svc *corev1.Service) (string, bool) {
	class := svc.Labels[labelEGOwningClass]
	if class == "" || svc.Labels[labelEGOwningName] != "" {
		return "", false
	}
	return class, true
}

// listenerPolicy is the ClientTrafficPolicy Envoy Gateway applies to one listener, nil when
// none does.
type listenerPolicy struct {
	listener listener
	policy   *unstructured.Unstructured
}

// clientTrafficPolicies resolves, listener by listener (the Gateway's own and those of the
// ListenerSets attached to it), the ClientTrafficPolicy Envoy Gateway applies
// (internal/gatewayapi/clienttrafficpolicy.go ProcessClientTrafficPolicies, v1.9.1). Policies
// are taken in order of creation, then namespace/name (internal/gatewayapi/resource/resource.go),
// in three passes, the first policy claiming a scope and a later one for the same scope being
// Conflicted:
//  1. targetRefs with a sectionName: a Gateway's listener gets the first policy of the
//     Gateway's namespace naming the Gateway with that listener; a ListenerSet's listener the
//     first policy of the ListenerSet's namespace naming that ListenerSet with it (targetRefs
//     name targets in the policy's own namespace, internal/gatewayapi/helpers.go
//     resolvePolicyTargetsFromReferences);
//  2. each ListenerSet's listeners no section policy claimed get the first policy for the whole
//     ListenerSet: targetRefs without a sectionName, or targetSelectors of kind ListenerSet
//     ("ListenerSet-wide policies are processed before Gateway-wide so that the more specific
//     target always wins");
//  3. every listener still unclaimed, the ListenerSets' included, gets the first policy for the
//     whole Gateway (targetRefs without a sectionName, or targetSelectors).
//
// Envoy Gateway also applies a Gateway sectionName that names no listener of the Gateway's own
// to the first ListenerSet listener of that name, and a later whole-scope policy over it again;
// loopguard does not follow that case. A targetSelector loopguard cannot read is bad input
// (selects).
func clientTrafficPolicies(v *view, c *core.Cluster) ([]listenerPolicy, error) {
	gw := v.gw
	namespaces := map[string]bool{gw.Namespace: true}
	for _, ls := range v.sets.attached {
		namespaces[ls.GetNamespace()] = true
	}
	var ps []*unstructured.Unstructured
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		ps = append(ps, c.CustomListIn(envoyGatewayGroup, kindClientTraffic, ns)...)
	}
	sort.SliceStable(ps, func(i, j int) bool {
		ti, tj := ps[i].GetCreationTimestamp(), ps[j].GetCreationTimestamp()
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		if ps[i].GetNamespace() != ps[j].GetNamespace() {
			return ps[i].GetNamespace() < ps[j].GetNamespace()
		}
		return ps[i].GetName() < ps[j].GetName()
	})
	own := map[string]bool{}
	for _, l := range gw.Spec.Listeners {
		own[string(l.Name)] = true
	}
	inSet := map[string]bool{} // sectionKey of each ListenerSet listener
	for _, l := range v.listeners {
		if l.set != nil {
			inSet[sectionKey(l)] = true
		}
	}
	// 1. Sections.
	section := map[string]*unstructured.Unstructured{}
	claim := func(key string, p *unstructured.Unstructured) {
		if section[key] == nil {
			section[key] = p
		}
	}
	for _, p := range ps {
		for _, r := range policyTargetRefs(p) {
			switch {
			case r.section == "":
			case r.kind == "Gateway" && r.name == gw.Name && p.GetNamespace() == gw.Namespace && own[r.section]:
				claim(r.section, p)
			case r.kind == kindListenerSet:
				if key := p.GetNamespace() + "/" + r.name + "/" + r.section; inSet[key] {
					claim(key, p)
				}
			}
		}
	}
	// 2. Whole ListenerSets.
	setWhole := map[*unstructured.Unstructured]*unstructured.Unstructured{}
	for _, p := range ps {
		for _, ls := range v.sets.attached {
			if setWhole[ls] != nil || p.GetNamespace() != ls.GetNamespace() {
				continue
			}
			picked, err := selects(gw, p, kindListenerSet, ls.GetLabels())
			if err != nil {
				return nil, err
			}
			for _, r := range policyTargetRefs(p) {
				picked = picked || (r.kind == kindListenerSet && r.name == ls.GetName() && r.section == "")
			}
			if picked {
				setWhole[ls] = p
			}
		}
	}
	// 3. The whole Gateway.
	var whole *unstructured.Unstructured
	for _, p := range ps {
		if whole != nil || p.GetNamespace() != gw.Namespace {
			continue
		}
		picked, err := selects(gw, p, "Gateway", gw.Labels)
		if err != nil {
			return nil, err
		}
		for _, r := range policyTargetRefs(p) {
			picked = picked || (r.kind == "Gateway" && r.name == gw.Name && r.section == "")
		}
		if picked {
			whole = p
		}
	}
	out := make([]listenerPolicy, len(v.listeners))
	for i, l := range v.listeners {
		p := section[sectionKey(l)]
		if p == nil && l.set != nil {
			p = setWhole[l.set]
		}
		if p == nil {
			p = whole
		}
		out[i] = listenerPolicy{listener: l, policy: p}
	}
	return out, nil
}

// sectionKey names a listener as Envoy Gateway claims it: its name for the Gateway's own,
// "namespace/listenerset/name" for a ListenerSet's (clienttrafficpolicy.go lsPrefix).
func sectionKey(l listener) string {
	if l.set == nil {
		return string(l.Name)
	}
	return l.set.GetNamespace() + "/" + l.set.GetName() + "/" + string(l.Name)
}

// policyGroup is one ClientTrafficPolicy and the listeners it configures.
type policyGroup struct {
	policy    *unstructured.Unstructured
	listeners []listener
}

// byPolicy groups listeners by the policy a predicate picks, in the listeners' order.
func byPolicy(lps []listenerPolicy, pick func(*unstructured.Unstructured) bool) []policyGroup {
	var out []policyGroup
	for _, lp := range lps {
		if lp.policy == nil || !pick(lp.policy) {
			continue
		}
		found := false
		for i := range out {
			if out[i].policy == lp.policy {
				out[i].listeners = append(out[i].listeners, lp.listener)
				found = true
			}
		}
		if !found {
			out = append(out, policyGroup{policy: lp.policy, listeners: []listener{lp.listener}})
		}
	}
	return out
}

func describe(groups []policyGroup, what string) string {
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = fmt.Sprintf("ClientTrafficPolicy %s/%s sets %s for listener %s", g.policy.GetNamespace(), g.policy.GetName(), what, onListeners(g.listeners))
	}
	return strings.Join(parts, "; ")
}

// envoyGatewayNeeds reads the PROXY protocol of the ClientTrafficPolicies that configure the
// Gateway's listeners (api/v1alpha1/clienttrafficpolicy_types.go: spec.proxyProtocol, where
// optional: true also accepts connections without the header, supersedes the deprecated
// spec.enableProxyProtocol). A listener that requires the header makes the Gateway's backends
// need it; the report names the listeners.
func envoyGatewayNeeds(v *view, c *core.Cluster) (need, bool, error) {
	lps, err := clientTrafficPolicies(v, c)
	if err != nil {
		return need{}, false, err
	}
	for _, lp := range lps {
		if lp.policy != nil {
			if _, err := egProxyProtocol(lp.policy); err != nil {
				return need{}, false, inputError(v.gw, kindClientTraffic, lp.policy.GetNamespace(), lp.policy.GetName(), err)
			}
		}
	}
	fact := func(p *unstructured.Unstructured) core.Fact { f, _ := egProxyProtocol(p); return f }
	required := byPolicy(lps, func(p *unstructured.Unstructured) bool { return fact(p) == core.Yes })
	if len(required) > 0 {
		return need{fact: core.Yes, msg: describe(required, "spec.proxyProtocol (or enableProxyProtocol: true)") + ": Envoy Gateway's listeners there require the header."}, true, nil
	}
	optional := byPolicy(lps, func(p *unstructured.Unstructured) bool { return fact(p) == core.Unknown })
	if len(optional) > 0 {
		return need{fact: core.Unknown, msg: describe(optional, "spec.proxyProtocol.optional: true") + ": Envoy accepts connections with and without the header there."}, true, nil
	}
	return need{}, false, nil
}

// egProxyProtocol is Yes when the policy requires the PROXY header, Unknown when it accepts it
// optionally, No when it says nothing of it, as Envoy Gateway's types read it
// (api/v1alpha1/clienttrafficpolicy_types.go, v1.9.1): proxyProtocol is a
// *ProxyProtocolSettings (null is unset) whose optional is a *bool, and "If both
// EnableProxyProtocol and ProxyProtocol are set, ProxyProtocol takes precedence";
// enableProxyProtocol is a *bool. A value of another type is refused by the CRD's schema: bad
// input naming the field.
func egProxyProtocol(p *unstructured.Unstructured) (core.Fact, *field.Error) {
	if pp, set, _ := unstructured.NestedFieldNoCopy(p.Object, "spec", "proxyProtocol"); set && pp != nil {
		m, ok := pp.(map[string]any)
		if !ok {
			return core.No, field.Invalid(field.NewPath("spec", "proxyProtocol"), pp, "must be an object")
		}
		switch opt := m["optional"].(type) {
		case nil:
		case bool:
			if opt {
				return core.Unknown, nil
			}
		default:
			return core.No, field.Invalid(field.NewPath("spec", "proxyProtocol", "optional"), opt, "must be true or false")
		}
		return core.Yes, nil
	}
	enable, _, _ := unstructured.NestedFieldNoCopy(p.Object, "spec", "enableProxyProtocol")
	switch on := enable.(type) {
	case nil:
	case bool:
		if on {
			return core.Yes, nil
		}
	default:
		return core.No, field.Invalid(field.NewPath("spec", "enableProxyProtocol"), on, "must be true or false")
	}
	return core.No, nil
}

// envoyGatewayClientAddress reads spec.clientIPDetection of the ClientTrafficPolicies that
// configure the Gateway's listeners (api/v1alpha1/clienttrafficpolicy_types.go, v1.9.0:
// exactly one of xForwardedFor (numTrustedHops or trustedCIDRs), customHeader (name,
// failClosed) or directSourceIP). customHeader with failClosed: true answers a request without
// the header 403 Forbidden: an in-cluster client that does not send it fails on every path,
// which is a note, not a loop.
func envoyGatewayClientAddress(v *view, c *core.Cluster) (clientAddress, bool, error) {
	lps, err := clientTrafficPolicies(v, c)
	if err != nil {
		return clientAddress{}, false, err
	}
	groups := byPolicy(lps, func(p *unstructured.Unstructured) bool {
		m, ok, _ := unstructured.NestedMap(p.Object, "spec", "clientIPDetection")
		return ok && len(m) > 0
	})
	if len(groups) == 0 {
		return clientAddress{}, false, nil
	}
	var out clientAddress
	parts := make([]string, len(groups))
	for i, g := range groups {
		det, _, _ := unstructured.NestedMap(g.policy.Object, "spec", "clientIPDetection")
		from := "the connection's source (directSourceIP)"
		switch {
		case det["xForwardedFor"] != nil:
			from = "X-Forwarded-For set by trusted hops in front (xForwardedFor)"
			// A uint32 in api/v1alpha1/clienttrafficpolicy_types.go XForwardedForSettings.
			if val, set, _ := unstructured.NestedFieldNoCopy(det, "xForwardedFor", "numTrustedHops"); set {
				if _, err := trustedHops(val); err != nil {
					return clientAddress{}, false, inputError(v.gw, kindClientTraffic, g.policy.GetNamespace(), g.policy.GetName(),
						field.Invalid(field.NewPath("spec", "clientIPDetection", "xForwardedFor", "numTrustedHops"), val, err.Error()))
				}
			}
		case det["customHeader"] != nil:
			name, _, _ := unstructured.NestedString(det, "customHeader", "name")
			from = fmt.Sprintf("the %s header (customHeader)", name)
			if fc, _, _ := unstructured.NestedBool(det, "customHeader", "failClosed"); fc {
				out.notes = append(out.notes, ruleClientHeaderRequired.Because(fmt.Sprintf("ClientTrafficPolicy %s/%s sets clientIPDetection.customHeader.failClosed: true for listener %s: Envoy answers a request without a valid %s header with 403 Forbidden, so an in-cluster client that does not send it fails on every path.",
					g.policy.GetNamespace(), g.policy.GetName(), onListeners(g.listeners), name)))
			}
		}
		parts[i] = fmt.Sprintf("ClientTrafficPolicy %s/%s sets spec.clientIPDetection for listener %s: Envoy takes the client address from %s", g.policy.GetNamespace(), g.policy.GetName(), onListeners(g.listeners), from)
	}
	out.why = strings.Join(parts, "; ") + "."
	return out, true, nil
}

// envoyProxyOf is the EnvoyProxy that configures the Gateway's proxy: the Gateway's
// spec.infrastructure.parametersRef (same namespace) overrides the GatewayClass's
// spec.parametersRef (which names a namespace), unless the class's sets mergeGateways, which
// makes Envoy Gateway ignore the Gateway's (internal/gatewayapi/contexts.go,
// attachEnvoyProxy, v1.9.0).
func envoyProxyOf(gw *gwv1.Gateway, class *unstructured.Unstructured, c *core.Cluster) *unstructured.Unstructured {
	if cls := parameters(&gwv1.Gateway{}, class, c, envoyGatewayGroup, kindEnvoyProxy); len(cls) > 0 && mergeGatewaysOn(cls[0]) {
		return cls[0]
	}
	if ps := parameters(gw, class, c, envoyGatewayGroup, kindEnvoyProxy); len(ps) > 0 {
		return ps[0]
	}
	return nil
}

// mergeGatewaysOn reports whether an EnvoyProxy sets spec.mergeGateways: true: one proxy and
// one Service for every Gateway of the class (api/v1alpha1/envoyproxy_types.go).
func mergeGatewaysOn(ep *unstructured.Unstructured) bool {
	on, _, _ := unstructured.NestedBool(ep.Object, "spec", "mergeGateways")
	return on
}

// envoyServiceOf is spec.provider.kubernetes.envoyService of an EnvoyProxy.
func envoyServiceOf(ep *unstructured.Unstructured) map[string]any {
	m, _, _ := unstructured.NestedMap(ep.Object, "spec", "provider", "kubernetes", "envoyService")
	return m
}

// envoyServiceName is the name Envoy Gateway gives a Gateway's Service (without merged
// Gateways or an EnvoyProxy envoyService.name): "envoy-" and the IR key "ns/name" with "/" as
// "-", cut at 48 characters, then the first 8 hex digits of its SHA-256
// (internal/infrastructure/kubernetes/proxy/resource.go ExpectedResourceHashedName,
// internal/utils/misc.go GetHashedName). The envoy gateway test checks it against the real one.
func envoyServiceName(ns, name string) string {
	return hashedName(ns + "/" + name)
}

// hashedName is ExpectedResourceHashedName of an IR key: "ns/name", or the GatewayClass's name
// when its Gateways are merged.
func hashedName(key string) string {
	sum := sha256.Sum256([]byte(key))
	resource := strings.ReplaceAll(key, "/", "-")
	if len(resource) > 48 {
		resource = strings.TrimSuffix(resource[:48], "-")
	}
	return "envoy-" + resource + "-" + hex.EncodeToString(sum[:])[:8]
}
