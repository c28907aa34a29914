package gateway

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/loopguard/loopguard/core"
)

// A ListenerSet (Gateway API standard channel since v1.5, gateway.networking.k8s.io/v1,
// apis/v1/listenerset_types.go) adds listeners to the Gateway its spec.parentRef names, when
// that Gateway's spec.allowedListeners admits the ListenerSet's namespace (None by default).
// "Implementations MUST treat the parent Gateway as having the merged list of all listeners
// from itself and attached ListenerSets", the Gateway's first, then the ListenerSets oldest
// first, then by namespace/name; a listener name need not be unique across them. Envoy Gateway
// v1.9.1 does exactly that (internal/gatewayapi/listenerset.go processListenerSet,
// isListenerSetAllowed; ListenerSets sorted in internal/gatewayapi/resource/resource.go), and
// reads only the v1 kind (internal/provider/kubernetes/controller.go): the experimental
// XListenerSet (gateway.networking.x-k8s.io) of Gateway API v1.3 and v1.4 is not read. The
// ListenerSet's types are not in the Gateway API release loopguard's go.mod requires (v1.3.0),
// so it is read as unstructured.
const kindListenerSet = "ListenerSet"

// listener is one listener of the Gateway's proxy: the Gateway's own, or one an attached
// ListenerSet contributes.
type listener struct {
	gwv1.Listener
	// set is the ListenerSet the listener comes from; nil for the Gateway's own.
	set *unstructured.Unstructured
}

// String is "https (port 443)", or "https (port 443, ListenerSet team/extra)".
func (l listener) String() string {
	if l.set == nil {
		return fmt.Sprintf("%s (port %d)", l.Name, l.Port)
	}
	return fmt.Sprintf("%s (port %d, ListenerSet %s/%s)", l.Name, l.Port, l.set.GetNamespace(), l.set.GetName())
}

// ownListeners are the Gateway's spec.listeners.
func ownListeners(gw *gwv1.Gateway) []listener {
	out := make([]listener, len(gw.Spec.Listeners))
	for i, l := range gw.Spec.Listeners {
		out[i] = listener{Listener: l}
	}
	return out
}

// listenerSets is what loopguard knows of the ListenerSets that name a Gateway as their parent.
type listenerSets struct {
	// attached are those the Gateway admits, in the order their listeners merge.
	attached []*unstructured.Unstructured
	// undecided are those loopguard cannot tell: the Gateway admits namespaces by label, which
	// loopguard does not read, and the ListenerSet has no Accepted condition to say.
	undecided []*unstructured.Unstructured
}

// listenerSetsOf finds the ListenerSets attached to the Gateway. A ListenerSet is attached when
// its spec.parentRef names the Gateway (kind Gateway, the default; namespace the ListenerSet's
// unless it says) and the Gateway's spec.allowedListeners.namespaces.from admits its namespace:
// All, Same (the Gateway's namespace), or Selector, which matches the labels of the
// ListenerSet's Namespace. loopguard does not read Namespaces: for Selector it takes the
// ListenerSet's Accepted condition, which the Gateway's implementation sets (False with reason
// NotAllowed when the selector does not match), and leaves a ListenerSet without one undecided.
// None, or no allowedListeners, attaches nothing. An allowedListeners selector that does not
// parse is bad input on the Gateway (Envoy Gateway attaches nothing with it).
func listenerSetsOf(gw *gwv1.Gateway, c *core.Cluster) (listenerSets, error) {
	var out listenerSets
	if c == nil {
		return out, nil
	}
	var from gwv1.FromNamespaces
	if al := gw.Spec.AllowedListeners; al != nil && al.Namespaces != nil && al.Namespaces.From != nil {
		from = *al.Namespaces.From
	}
	if from == gwv1.NamespacesFromSelector {
		sel := gw.Spec.AllowedListeners.Namespaces.Selector
		if sel == nil {
			return out, nil
		}
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			return out, &core.InvalidError{Object: refOf(gw), Errs: field.ErrorList{field.Invalid(field.NewPath("spec", "allowedListeners", "namespaces", "selector"), field.OmitValueType{},
				err.Error()+" (the implementation attaches no ListenerSet with it)")}}
		}
	}
	for _, ls := range listenerSetsByParent(c)[types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}] {
		switch from {
		case gwv1.NamespacesFromAll:
			out.attached = append(out.attached, ls)
		case gwv1.NamespacesFromSame:
			if ls.GetNamespace() == gw.Namespace {
				out.attached = append(out.attached, ls)
			}
		case gwv1.NamespacesFromSelector:
			switch accepted(ls) {
			case metav1.ConditionTrue:
				out.attached = append(out.attached, ls)
			case metav1.ConditionUnknown:
				out.undecided = append(out.undecided, ls)
			}
		}
	}
	sort.SliceStable(out.attached, func(i, j int) bool {
		a, b := out.attached[i], out.attached[j]
		ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
		if !ta.Equal(&tb) {
			return ta.Before(&tb)
		}
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	})
	return out, nil
}

// parentOf is the Gateway a ListenerSet's spec.parentRef names; ok is false when it names
// none (another kind, or no parentRef).
func parentOf(ls *unstructured.Unstructured) (types.NamespacedName, bool) {
	ref, ok, _ := unstructured.NestedMap(ls.Object, "spec", "parentRef")
	if !ok {
		return types.NamespacedName{}, false
	}
	group, _ := ref["group"].(string)
	kind, _ := ref["kind"].(string)
	name, _ := ref["name"].(string)
	ns, _ := ref["namespace"].(string)
	if ns == "" {
		ns = ls.GetNamespace()
	}
	if (group != "" && group != Group) || (kind != "" && kind != "Gateway") || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// accepted is the status of a ListenerSet's Accepted condition; Unknown when it has none, or
// one the API server defaulted ("Pending", "Waiting for controller").
func accepted(ls *unstructured.Unstructured) metav1.ConditionStatus {
	conds, _, _ := unstructured.NestedSlice(ls.Object, "status", "conditions")
	for _, item := range conds {
		if m, ok := item.(map[string]any); ok && m["type"] == "Accepted" {
			switch m["status"] {
			case string(metav1.ConditionTrue):
				return metav1.ConditionTrue
			case string(metav1.ConditionFalse):
				return metav1.ConditionFalse
			}
		}
	}
	return metav1.ConditionUnknown
}

// listenersOf is the Gateway's merged list of listeners: its own, then each attached
// ListenerSet's spec.listeners. A listener entry loopguard cannot read (a port out of range, a
// field of the wrong type) is bad input naming the ListenerSet and the entry.
func listenersOf(gw *gwv1.Gateway, sets listenerSets) ([]listener, error) {
	out := ownListeners(gw)
	for _, ls := range sets.attached {
		entries, _, _ := unstructured.NestedSlice(ls.Object, "spec", "listeners")
		for i, e := range entries {
			path := field.NewPath("spec", "listeners").Index(i)
			m, ok := e.(map[string]any)
			if !ok {
				return nil, inputError(gw, kindListenerSet, ls.GetNamespace(), ls.GetName(), field.Invalid(path, e, "not a listener"))
			}
			if port, ok := intOf(m["port"]); !ok || port < 1 || port > 65535 {
				return nil, inputError(gw, kindListenerSet, ls.GetNamespace(), ls.GetName(), field.Invalid(path.Child("port"), m["port"], "must be a number between 1 and 65535"))
			}
			var l gwv1.Listener
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &l); err != nil {
				return nil, inputError(gw, kindListenerSet, ls.GetNamespace(), ls.GetName(), field.Invalid(path, field.OmitValueType{}, err.Error()))
			}
			out = append(out, listener{Listener: l, set: ls})
		}
	}
	return out, nil
}

// undecidedNote says which ListenerSets' listeners are left out because loopguard cannot tell
// whether the Gateway admits them; "" when none.
func (s listenerSets) undecidedNote() string {
	if len(s.undecided) == 0 {
		return ""
	}
	names := make([]string, len(s.undecided))
	for i, ls := range s.undecided {
		names[i] = ls.GetNamespace() + "/" + ls.GetName()
	}
	return fmt.Sprintf(" Not counted: the listeners of ListenerSet %s, which name this Gateway as parent from a namespace its spec.allowedListeners selects by label (loopguard does not read Namespaces) and have no Accepted condition yet.",
		strings.Join(names, ", "))
}
