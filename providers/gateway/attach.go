package gateway

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// What a host that watches the objects the Gateway layer reads needs to know to judge the
// right Gateways again when one of them changes. The dialect decides with the same functions.

// PolicyTargets reports whether a policy the Gateway layer reads (Envoy Gateway's
// ClientTrafficPolicy, kgateway's ListenerPolicy) is read for the Gateway gw: it is in gw's
// namespace, and its spec.targetRefs (or targetRef) name gw or its spec.targetSelectors match
// gw's labels, as the dialect decides. A selector that does not parse also counts: judging
// the Gateway again is what reports it (the dialect's error names the policy and the field).
// A host that watches such policies maps a changed one to the Gateways to judge again with it.
func PolicyTargets(policy *unstructured.Unstructured, gw metav1.Object) bool {
	if policy.GetNamespace() != gw.GetNamespace() {
		return false
	}
	if targets(policy, gw.GetName()) {
		return true
	}
	picked, err := selects(gatewayRef(gw), policy, "Gateway", gw.GetLabels())
	return picked || err != nil
}

// PolicyTargetsListenerSet reports whether an Envoy Gateway ClientTrafficPolicy is read for a
// ListenerSet (and so for the Gateway it attaches to): it is in the ListenerSet's namespace and
// its targetRefs name the ListenerSet (with or without a sectionName) or its targetSelectors of
// kind ListenerSet match the ListenerSet's labels (or do not parse, as for PolicyTargets).
func PolicyTargetsListenerSet(policy, listenerSet *unstructured.Unstructured) bool {
	if policy.GetNamespace() != listenerSet.GetNamespace() {
		return false
	}
	for _, r := range policyTargetRefs(policy) {
		if r.kind == kindListenerSet && r.name == listenerSet.GetName() {
			return true
		}
	}
	picked, err := selects(&gwv1.Gateway{}, policy, kindListenerSet, listenerSet.GetLabels())
	return picked || err != nil
}

// ListenerSetParent is the Gateway a ListenerSet's spec.parentRef names (its namespace by
// default); ok is false when it names none. Whether the Gateway admits it (allowedListeners)
// is the dialect's to decide when it judges that Gateway.
func ListenerSetParent(listenerSet *unstructured.Unstructured) (types.NamespacedName, bool) {
	return parentOf(listenerSet)
}

// gatewayRef is enough of a Gateway to name it in an error.
func gatewayRef(gw metav1.Object) *gwv1.Gateway {
	return &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gw.GetNamespace(), Name: gw.GetName()}}
}
