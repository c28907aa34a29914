package ingress

import networkingv1 "k8s.io/api/networking/v1"

// BackendNames returns the names of the Services an Ingress routes to, the default backend
// first, each once.
func BackendNames(ing *networkingv1.Ingress) []string {
	seen := map[string]bool{}
	var out []string
	add := func(b *networkingv1.IngressBackend) {
		if b == nil || b.Service == nil || seen[b.Service.Name] {
			return
		}
		seen[b.Service.Name] = true
		out = append(out, b.Service.Name)
	}
	add(ing.Spec.DefaultBackend)
	for i := range ing.Spec.Rules {
		if h := ing.Spec.Rules[i].HTTP; h != nil {
			for j := range h.Paths {
				add(&h.Paths[j].Backend)
			}
		}
	}
	return out
}
