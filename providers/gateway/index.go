package gateway

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loopguard/loopguard/core"
)

// A Cluster is read, not changed, once built (core.Cluster.Memo), so the Gateway layer indexes
// what it would otherwise find by scanning every object for every Gateway: the generated
// Services by the Gateway they name, the Services generated for a whole class by class, the
// Gateways by class, ListenerSets by their Gateway (and, in their units, what an implementation
// reads for many Gateways at once).
// The scans made assess quadratic in the number of Gateways: BenchmarkAssessGateways
// (cmd/loopguard), benchstat of 4 runs on 2 shared cores, multi-document YAML, went from 0.28 to
// 5.5 cpu-s/op between 1,000 and 5,000 Gateways (20x for 5x the objects) before these indexes,
// and from 0.15 to 0.76 after (5x); memory did not change (52 and 261 MiB/op).

type (
	ownedServicesKey   struct{}
	classServicesKey   struct{}
	gatewaysByClassKey struct{}
	listenerSetsMemo   struct{}
)

// listenerSetsByParent indexes the cluster's ListenerSets by the Gateway their spec.parentRef names,
// in namespace/name order.
func listenerSetsByParent(c *core.Cluster) map[types.NamespacedName][]*unstructured.Unstructured {
	return c.Memo(listenerSetsMemo{}, func() any {
		m := map[types.NamespacedName][]*unstructured.Unstructured{}
		for _, ls := range c.CustomList(Group, kindListenerSet) {
			if parent, ok := parentOf(ls); ok {
				m[parent] = append(m[parent], ls)
			}
		}
		return m
	}).(map[types.NamespacedName][]*unstructured.Unstructured)
}

// ownedService is a Service a Gateway's implementation generated, with how it is known.
type ownedService struct {
	svc   *corev1.Service
	owner Owner
}

// ownedServices indexes the cluster's Services by the Gateway that generated them (OwnerOf),
// each list in namespace/name order.
func ownedServices(c *core.Cluster) map[types.NamespacedName][]ownedService {
	return c.Memo(ownedServicesKey{}, func() any {
		m := map[types.NamespacedName][]ownedService{}
		for _, s := range c.ServiceList() {
			if o, ok := OwnerOf(s); ok {
				k := types.NamespacedName{Namespace: o.Namespace, Name: o.Name}
				m[k] = append(m[k], ownedService{svc: s, owner: o})
			}
		}
		return m
	}).(map[types.NamespacedName][]ownedService)
}

// classService is a LoadBalancer Service an implementation generates for every Gateway of a
// class (classServiceOf), with its unit and how it is known.
type classService struct {
	svc *corev1.Service
	u   unit
	by  string
}

// classServices indexes the class Services by their class, in namespace/name order.
func classServices(c *core.Cluster) map[string][]classService {
	return c.Memo(classServicesKey{}, func() any {
		m := map[string][]classService{}
		for _, s := range c.ServiceList() {
			if class, by, u, ok := classServiceOf(s); ok && s.Spec.Type == corev1.ServiceTypeLoadBalancer {
				m[class] = append(m[class], classService{svc: s, u: u, by: by})
			}
		}
		return m
	}).(map[string][]classService)
}

// gatewaysOfClass lists the Gateways (ns/name, sorted) of a GatewayClass among the cluster's
// objects.
func gatewaysOfClass(c *core.Cluster, class string) []string {
	return c.Memo(gatewaysByClassKey{}, func() any {
		m := map[string][]string{}
		for _, u := range c.CustomList(Group, "Gateway") {
			name, _, _ := unstructured.NestedString(u.Object, "spec", "gatewayClassName")
			m[name] = append(m[name], u.GetNamespace()+"/"+u.GetName())
		}
		for _, l := range m {
			sort.Strings(l)
		}
		return m
	}).(map[string][]string)[class]
}

// gatewayIn reports whether the cluster's objects hold the Gateway ns/name.
func gatewayIn(c *core.Cluster, ns, name string) bool {
	return c.Custom(Group, "Gateway", ns, name) != nil
}
