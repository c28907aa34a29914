package gateway

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PolicyTargets reports whether a policy the Gateway layer reads (Envoy Gateway's
// ClientTrafficPolicy, kgateway's ListenerPolicy) is read for the Gateway gw: it is in gw's
// namespace, and its spec.targetRefs (or targetRef) name gw or its spec.targetSelectors match
// gw's labels, as the dialect decides. A host that watches such policies maps a changed one
// to the Gateways to judge again with it.
func PolicyTargets(policy *unstructured.Unstructured, gw metav1.Object) bool {
	return policy.GetNamespace() == gw.GetNamespace() && (targets(policy, gw.GetName()) || selects(policy, gw.GetLabels()))
}
