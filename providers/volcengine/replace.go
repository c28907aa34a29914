package volcengine

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
)

// AnnotationReplaces marks a Service loopguard created to replace another one whose ip-mode
// could not change; its value is the old Service's name (same namespace). A later plan
// recognises its own replacement by it and never adopts an unrelated Service of that name.
const AnnotationReplaces = "loopguard.io/replaces"

// lastApplied is kubectl's record of the manifest it applied; it describes the old object.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Why a replacement keeps or drops each field of the old Service:
//   - kept: labels, every annotation (foreign ones included, docs/sources.md#design invariants), the whole
//     spec otherwise, so the new Service selects the same Pods with the same ports and
//     options;
//   - dropped because the API server allocates them per Service (a copy would collide or be
//     refused): spec.clusterIP(s), spec.ports[].nodePort, spec.healthCheckNodePort;
//   - dropped because they name the old CLB: spec.loadBalancerIP (the old CLB holds that
//     address) and status;
//   - dropped because they belong to the old object: uid, resourceVersion, creationTimestamp,
//     generation, managedFields, ownerReferences (whoever owns the old Service did not create
//     this one), finalizers (the CCM adds its own), deletion fields, and kubectl's
//     last-applied-configuration;
//   - set: the ip-mode annotation and loopguard.io/replaces.

// replacementTemplate is the new Service's body, made from the old one (live when read).
func replacementTemplate(old *corev1.Service) (*unstructured.Unstructured, []string) {
	u := toUnstructured(old)
	var dropped []string
	for _, f := range []string{"clusterIP", "clusterIPs", "healthCheckNodePort", "loadBalancerIP"} {
		if _, ok := u.Object["spec"].(map[string]any)[f]; ok {
			if f == "loadBalancerIP" {
				dropped = append(dropped, "spec.loadBalancerIP "+old.Spec.LoadBalancerIP+" (the old CLB holds that address)")
			}
			unstructured.RemoveNestedField(u.Object, "spec", f)
		}
	}
	if ports, ok, _ := unstructured.NestedSlice(u.Object, "spec", "ports"); ok {
		for _, p := range ports {
			if m, ok := p.(map[string]any); ok {
				delete(m, "nodePort")
			}
		}
		_ = unstructured.SetNestedSlice(u.Object, ports, "spec", "ports")
	}
	for _, f := range []string{"ownerReferences", "finalizers", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	ann := u.GetAnnotations()
	if _, ok := ann[lastApplied]; ok {
		delete(ann, lastApplied)
		u.SetAnnotations(ann)
	}
	return u, dropped
}

// createTemplate is the body of a Service loopguard creates from a manifest.
func createTemplate(svc *corev1.Service) *unstructured.Unstructured {
	return toUnstructured(svc)
}

// toUnstructured converts a typed Service and strips what the API server owns.
func toUnstructured(svc *corev1.Service) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(svc)
	if err != nil {
		// A typed Service always converts; keep going with an empty body if it ever does not,
		// the create then fails at the API server with its own message.
		m = map[string]any{}
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("v1")
	u.SetKind("Service")
	delete(u.Object, "status")
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	spec, ok := u.Object["spec"].(map[string]any)
	if !ok || spec == nil {
		u.Object["spec"] = map[string]any{}
	}
	// An unset targetPort converts to 0; leave it out so the API server defaults it to port.
	if ports, ok := spec["ports"].([]any); ok {
		for _, p := range ports {
			if m, ok := p.(map[string]any); ok && unsetPort(m["targetPort"]) {
				delete(m, "targetPort")
			}
		}
	}
	return u
}

// DefaultReplacementName names a replacement "<name>-vip" or "<name>-proxy", cut to the 63
// characters a Service name may have (a DNS-1035 label).
func DefaultReplacementName(svc *corev1.Service, mode core.Path) string {
	suffix := "-" + strings.ToLower(string(mode))
	base := svc.Name
	if len(base)+len(suffix) > 63 {
		base = strings.TrimRight(base[:63-len(suffix)], "-")
	}
	return base + suffix
}

func unsetPort(v any) bool {
	switch n := v.(type) {
	case int64:
		return n == 0
	case int32:
		return n == 0
	case int:
		return n == 0
	case float64:
		return n == 0
	case string:
		return n == ""
	}
	return false
}
