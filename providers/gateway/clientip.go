package gateway

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loopguard/loopguard/core"
)

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

// clientAddress is what an implementation's client-IP setting says: the proxy uses the client's
// address (why: the setting, for the report), and notes that change no verdict.
type clientAddress struct {
	why   string
	notes []core.Reason
}

// clientAddressOf asks the Gateway's unit whether its implementation is told where the client's
// address is: a proxy told so uses it, so a remedy that replaces it (LB source NAT without a
// PROXY header) costs the backends (core's LBDependence.ClientAddress). ok is false when nothing
// loopguard reads configures it; err is bad input in what it read (inputError).
func clientAddressOf(v *view, c *core.Cluster) (clientAddress, bool, error) {
	if c == nil {
		return clientAddress{}, false, nil
	}
	if u := v.reader(); u != nil {
		return u.clientAddress(v, c)
	}
	return clientAddress{}, false, nil
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
