package gateway

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/loopguard/loopguard/core"
)

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

// targetRef is one entry of a policy's targetRefs (or its older singular targetRef) that names a
// Gateway or a ListenerSet, in the policy's namespace.
type targetRef struct{ kind, name, section string }

func policyTargetRefs(p *unstructured.Unstructured) []targetRef {
	refs, _, _ := unstructured.NestedSlice(p.Object, "spec", "targetRefs")
	if one, ok, _ := unstructured.NestedMap(p.Object, "spec", "targetRef"); ok {
		refs = append(refs, one)
	}
	var out []targetRef
	for _, r := range refs {
		m, ok := r.(map[string]any)
		if !ok || (m["group"] != Group && m["group"] != nil) {
			continue
		}
		kind, _ := m["kind"].(string)
		name, _ := m["name"].(string)
		section, _ := m["sectionName"].(string)
		if kind == "Gateway" || kind == kindListenerSet {
			out = append(out, targetRef{kind: kind, name: name, section: section})
		}
	}
	return out
}

// onListeners renders listeners as "https (port 443)" for the report (with the ListenerSet a
// listener comes from).
func onListeners(ls []listener) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.String()
	}
	return strings.Join(parts, ", ")
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
	required := byPolicy(lps, func(p *unstructured.Unstructured) bool { return egProxyProtocol(p) == core.Yes })
	if len(required) > 0 {
		return need{fact: core.Yes, msg: describe(required, "spec.proxyProtocol (or enableProxyProtocol: true)") + ": Envoy Gateway's listeners there require the header."}, true, nil
	}
	optional := byPolicy(lps, func(p *unstructured.Unstructured) bool { return egProxyProtocol(p) == core.Unknown })
	if len(optional) > 0 {
		return need{fact: core.Unknown, msg: describe(optional, "spec.proxyProtocol.optional: true") + ": Envoy accepts connections with and without the header there."}, true, nil
	}
	return need{}, false, nil
}

// egProxyProtocol is Yes when the policy requires the PROXY header, Unknown when it accepts it
// optionally, No when it says nothing of it.
func egProxyProtocol(p *unstructured.Unstructured) core.Fact {
	if pp, ok, _ := unstructured.NestedMap(p.Object, "spec", "proxyProtocol"); ok {
		if opt, _, _ := unstructured.NestedBool(pp, "optional"); opt {
			return core.Unknown
		}
		return core.Yes
	}
	if on, ok, _ := unstructured.NestedBool(p.Object, "spec", "enableProxyProtocol"); ok && on {
		return core.Yes
	}
	return core.No
}

// clientAddress is what an implementation's client-IP setting says: the proxy uses the client's
// address (why: the setting, for the report), and notes that change no verdict.
type clientAddress struct {
	why   string
	notes []core.Reason
}

// clientAddressOf reads the implementation's client-IP settings: a proxy told where the
// client's address is uses it, so a remedy that replaces it (LB source NAT without a PROXY
// header) costs the backends (core's LBDependence.ClientAddress). ok is false when nothing
// loopguard reads configures it; err is bad input in what it read (inputError).
func clientAddressOf(v *view, c *core.Cluster) (clientAddress, bool, error) {
	if c == nil {
		return clientAddress{}, false, nil
	}
	switch v.impl {
	case EnvoyGateway, ImplementationUnknown:
		return envoyGatewayClientAddress(v, c)
	case Traefik:
		return traefikClientAddress(v, v.traefik)
	case Contour:
		return contourClientAddress(v, c)
	case NGINXGatewayFabric:
		// apis/v1alpha2/nginxproxy_types.go (v2.6.7) RewriteClientIP: mode XForwardedFor sets
		// real_ip_header X-Forwarded-For and trustedAddresses set_real_ip_from ("If no
		// addresses are provided, NGINX will not rewrite the client IP information"). Mode
		// ProxyProtocol is the PROXY header need (proxyNeeds).
		for _, np := range nginxProxies(v, c) {
			mode, _, _ := unstructured.NestedString(np.Object, "spec", "rewriteClientIP", "mode")
			trusted, _, _ := unstructured.NestedSlice(np.Object, "spec", "rewriteClientIP", "trustedAddresses")
			if mode == "XForwardedFor" && len(trusted) > 0 {
				return clientAddress{why: fmt.Sprintf("NginxProxy %s/%s sets spec.rewriteClientIP.mode: XForwardedFor with %d trusted address(es): NGINX takes the client address from X-Forwarded-For of connections from those addresses, else the connection's source.",
					np.GetNamespace(), np.GetName(), len(trusted))}, true, nil
			}
			if mode != "" {
				break // the first NginxProxy that sets a mode is the one in effect
			}
		}
	case KGateway:
		// api/v1alpha1/kgateway/listener_policy_types.go: ListenerConfig.httpSettings
		// xffNumTrustedHops, "the number of additional ingress proxy hops from the right side
		// of the X-Forwarded-For HTTP header to trust when determining the origin client's IP
		// address", in spec.default or a spec.perPort entry (which replaces the default for
		// its port). Its targetRefs are LocalPolicyTargetReferences: no sectionName.
		ps, err := kgatewayPolicies(v.gw, c)
		if err != nil {
			return clientAddress{}, false, err
		}
		type config struct {
			m    map[string]any
			path *field.Path
		}
		for _, p := range ps {
			def := config{path: field.NewPath("spec", "default")}
			def.m, _, _ = unstructured.NestedMap(p.Object, "spec", "default")
			perPort := map[int64]config{}
			list, _, _ := unstructured.NestedSlice(p.Object, "spec", "perPort")
			for i, item := range list {
				if m, ok := item.(map[string]any); ok {
					if port, ok := intOf(m["port"]); ok {
						cfg := config{path: field.NewPath("spec", "perPort").Index(i).Child("listener")}
						cfg.m, _, _ = unstructured.NestedMap(m, "listener")
						perPort[port] = cfg
					}
				}
			}
			var on []listener
			var hops int64
			for _, l := range ownListeners(v.gw) {
				cfg, ok := perPort[int64(l.Port)]
				if !ok {
					cfg = def
				}
				val, set, _ := unstructured.NestedFieldNoCopy(cfg.m, "httpSettings", "xffNumTrustedHops")
				if !set {
					continue
				}
				n, err := trustedHops(val)
				if err != nil {
					return clientAddress{}, false, inputError(v.gw, kindListenerPolicy, p.GetNamespace(), p.GetName(), field.Invalid(cfg.path.Child("httpSettings", "xffNumTrustedHops"), val, err.Error()))
				}
				if n != 0 {
					on, hops = append(on, l), n
				}
			}
			if len(on) > 0 {
				return clientAddress{why: fmt.Sprintf("ListenerPolicy %s/%s sets httpSettings.xffNumTrustedHops (%v) for listener %s: kgateway's Envoy takes the client address from X-Forwarded-For set by that many proxies in front.", p.GetNamespace(), p.GetName(), hops, onListeners(on))}, true, nil
			}
		}
	case Istio:
		// The gateway's ProxyConfig from proxy.istio.io/config: gatewayTopology.numTrustedProxies
		// is the number of trusted proxies in front whose X-Forwarded-For the gateway reads
		// (pilot/pkg/networking/core/gateway.go sets the connection manager's
		// xff_num_trusted_hops from it).
		for _, src := range istioProxyConfigSources(v) {
			cfg, ok := src[istioProxyConfigAnn]
			if !ok {
				continue
			}
			var m map[string]any
			if yaml.Unmarshal([]byte(cfg), &m) != nil {
				continue
			}
			if n, ok, _ := unstructured.NestedFieldNoCopy(m, "gatewayTopology", "numTrustedProxies"); ok && fmt.Sprint(n) != "0" {
				return clientAddress{why: fmt.Sprintf("The %s annotation sets gatewayTopology.numTrustedProxies: %v: the Istio gateway takes the client address from X-Forwarded-For set by that many proxies in front.", istioProxyConfigAnn, n)}, true, nil
			}
		}
	}
	return clientAddress{}, false, nil
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

// intOf reads a number of an unstructured object: int64 from the API server and the manifest
// reader, float64 from a plain JSON or YAML decode.
func intOf(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		return int64(n), n == float64(int64(n))
	}
	return 0, false
}
