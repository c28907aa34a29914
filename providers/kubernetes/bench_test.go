package kubernetes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// BenchmarkEvaluate is Translate + Assess + Decide for one Service (kube-proxy 1.30, Proxy
// status, private LB without source NAT: the at-risk path, which does the most work).
// Run with: go test -run XXX -bench . -benchmem ./providers/kubernetes/
func BenchmarkEvaluate(b *testing.B) {
	set, c := loadCase(b, "proxy-kube-proxy-1.30.yaml")
	svc := find(b, set, "Service", "web")
	d := NewDialect(nil)
	b.ReportAllocs()
	for b.Loop() {
		r, err := core.Evaluate(d, svc, c, core.Policy{})
		if err != nil || r.Decision.Remedy != core.InterceptVIP {
			b.Fatal(err, r.Decision.Remedy)
		}
	}
}

// BenchmarkAssessDecide is the core's share of BenchmarkEvaluate, for comparison.
func BenchmarkAssessDecide(b *testing.B) {
	set, c := loadCase(b, "proxy-kube-proxy-1.30.yaml")
	tr, err := NewDialect(nil).Translate(find(b, set, "Service", "web"), c)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		a := core.Assess(&tr.Exposure)
		_ = core.Decide(&a, tr.Offers, core.Policy{})
	}
}

// BenchmarkValidateIngressStatus validates a dual-stack status.
func BenchmarkValidateIngressStatus(b *testing.B) {
	set, _ := loadCase(b, "mixed-entries.yaml")
	ing := find(b, set, "Service", "web").(*corev1.Service).Status.LoadBalancer.Ingress
	path := IngressStatusPath()
	b.ReportAllocs()
	for b.Loop() {
		if errs := ValidateIngressStatus(path, ing); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
