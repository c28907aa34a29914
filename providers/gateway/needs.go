package gateway

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/loopguard/loopguard/core"
)

// need is one implementation setting about the PROXY protocol.
type need struct {
	// Yes: required; Unknown: accepted but optional; No: loopguard read the implementation's
	// whole setting and it reads no header (only where one object holds the setting and the
	// Gateway or its class names it: a policy absent from the inputs proves nothing).
	fact    core.Fact
	version string
	msg     string
}

// proxyNeeds asks the Gateway's unit whether its implementation makes the Gateway's proxy
// expect a PROXY protocol header. ok is false when nothing loopguard reads says; err is bad
// input in what it read (inputError).
func proxyNeeds(v *view, c *core.Cluster) (need, bool, error) {
	if c == nil {
		return need{}, false, nil
	}
	if u := v.reader(); u != nil {
		return u.proxyNeeds(v, c)
	}
	return need{}, false, nil
}

// infraAnnotations are the Gateway's spec.infrastructure.annotations.
func infraAnnotations(v *view) map[string]string {
	out := map[string]string{}
	if inf := v.gw.Spec.Infrastructure; inf != nil {
		for k, val := range inf.Annotations {
			out[string(k)] = string(val)
		}
	}
	return out
}

// targets reports whether a policy's targetRefs (or targetRef) name the Gateway.
func targets(p *unstructured.Unstructured, name string) bool {
	refs, _, _ := unstructured.NestedSlice(p.Object, "spec", "targetRefs")
	if one, ok, _ := unstructured.NestedMap(p.Object, "spec", "targetRef"); ok {
		refs = append(refs, one)
	}
	for _, r := range refs {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		if m["kind"] == "Gateway" && m["name"] == name && (m["group"] == Group || m["group"] == nil) {
			return true
		}
	}
	return false
}

// parametersNamed counts the references to group/kind among the Gateway's
// spec.infrastructure.parametersRef and its class's spec.parametersRef.
func parametersNamed(gw *gwv1.Gateway, class *unstructured.Unstructured, group, kind string) int {
	n := 0
	if inf := gw.Spec.Infrastructure; inf != nil && inf.ParametersRef != nil && string(inf.ParametersRef.Group) == group && string(inf.ParametersRef.Kind) == kind {
		n++
	}
	if class != nil {
		if r, ok, _ := unstructured.NestedStringMap(class.Object, "spec", "parametersRef"); ok && r["group"] == group && r["kind"] == kind {
			n++
		}
	}
	return n
}

// parameters returns the objects of group/kind that the Gateway's
// spec.infrastructure.parametersRef and its class's spec.parametersRef name, in that order.
func parameters(gw *gwv1.Gateway, class *unstructured.Unstructured, c *core.Cluster, group, kind string) []*unstructured.Unstructured {
	return appendParameters(nil, gw, class, c, group, kind)
}

// appendParameters is parameters appended to out (a unit's own buffer).
func appendParameters(out []*unstructured.Unstructured, gw *gwv1.Gateway, class *unstructured.Unstructured, c *core.Cluster, group, kind string) []*unstructured.Unstructured {
	if inf := gw.Spec.Infrastructure; inf != nil && inf.ParametersRef != nil {
		if r := inf.ParametersRef; string(r.Group) == group && string(r.Kind) == kind {
			if u := c.Custom(group, kind, gw.Namespace, r.Name); u != nil {
				out = append(out, u)
			}
		}
	}
	if class != nil {
		if r, ok, _ := unstructured.NestedStringMap(class.Object, "spec", "parametersRef"); ok && r["group"] == group && r["kind"] == kind {
			if u := c.Custom(group, kind, r["namespace"], r["name"]); u != nil {
				out = append(out, u)
			}
		}
	}
	return out
}
