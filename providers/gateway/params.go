package gateway

import (
	"fmt"
	"math"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/loopguard/loopguard/core"
)

// trustedHops reads a hop count typed as a uint32, as Envoy's xff_num_trusted_hops is; a unit
// whose API types it otherwise (kgateway's int32) reads it its own way.
func trustedHops(v any) (int64, error) {
	n, ok := intOf(v)
	if !ok || n < 0 || n > math.MaxUint32 {
		return 0, fmt.Errorf("must be a whole number from 0 to %d", uint32(math.MaxUint32))
	}
	return n, nil
}

// selects reports whether a policy's targetSelectors pick an object of kind (Gateway, or
// ListenerSet for Envoy Gateway) of the policy's namespace with these labels (matchLabels and
// matchExpressions: kgateway's LocalPolicyTargetSelector, Envoy Gateway's TargetSelector,
// api/v1alpha1/policy_helpers.go). A selector that reaches into other namespaces (Envoy
// Gateway's namespaces, with a ReferenceGrant) is not followed. A selector that does not parse
// (an unknown operator, a bad label) is bad input naming the policy and the selector: Envoy
// Gateway selects nothing with it (internal/gatewayapi/helpers.go selectorFromTargetSelector,
// v1.9.1), which is rarely what its author meant.
func selects(gw *gwv1.Gateway, p *unstructured.Unstructured, kind string, objLabels map[string]string) (bool, error) {
	sels, _, _ := unstructured.NestedSlice(p.Object, "spec", "targetSelectors")
	for i, s := range sels {
		m, ok := s.(map[string]any)
		if !ok || m["kind"] != kind || (m["group"] != nil && m["group"] != Group) {
			continue
		}
		bad := func(err error) error {
			return inputError(gw, p.GetKind(), p.GetNamespace(), p.GetName(), field.Invalid(field.NewPath("spec", "targetSelectors").Index(i), field.OmitValueType{}, err.Error()))
		}
		var ls metav1.LabelSelector
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"matchLabels": m["matchLabels"], "matchExpressions": m["matchExpressions"]}, &ls); err != nil {
			return false, bad(err)
		}
		if len(ls.MatchLabels) == 0 && len(ls.MatchExpressions) == 0 {
			continue // an empty selector is not read as "every Gateway"
		}
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			return false, bad(err)
		}
		if sel.Matches(labels.Set(objLabels)) {
			return true, nil
		}
	}
	return false, nil
}

// override is the implementation's own object that sets a key of the Service's annotations or
// labels after the Gateway's spec.infrastructure, so that a value on the Gateway would never win
// there (the unit's override says which): the fix goes on that object instead.
type override struct {
	key  core.ObjectKey
	path []core.PathElem
	// userOwned: the value sits where loopguard cannot write it as a field of its own (a
	// patch in a list, YAML inside a ConfigMap): the change is the user's, on key's object,
	// which sets it in what (and how says what to do).
	userOwned bool
	what, how string
	// also are edits the object needs for path to be valid there.
	also []core.Edit
}

// overrideOf asks the Gateway's unit where a key of the Service's annotations or labels goes.
func overrideOf(v *view, meta, key string) (override, bool) {
	if v.unit == nil {
		return override{}, false
	}
	return v.unit.override(v, meta, key)
}

// mergeUnder adds src's entries to dst where dst has none.
func mergeUnder(dst, src map[string]string) map[string]string {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = map[string]string{}
	}
	keys := make([]string, 0, len(src))
	for k := range src {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, ok := dst[k]; !ok {
			dst[k] = src[k]
		}
	}
	return dst
}
