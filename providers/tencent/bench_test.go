package tencent_test

import (
	"testing"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
)

// BenchmarkEvaluateService is Translate + Assess + Decide for one private LoadBalancer Service
// in an IPVS cluster of three regular nodes (the guide's at-risk row), as `loopguard assess`
// runs it per object. Run with -benchmem.
func BenchmarkEvaluateService(b *testing.B) {
	w := load(b, "profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-service.yaml")
	obj := w.object(b, svcWeb)
	d := tencent.NewDialect(nil)
	b.ReportAllocs()
	for b.Loop() {
		tr, err := d.Translate(obj, w.cluster)
		if err != nil {
			b.Fatal(err)
		}
		a := core.Assess(&tr.Exposure)
		dec := core.Decide(&a, tr.Offers, w.cluster.Profile.Policy)
		if dec.Remedy != core.InterceptVIP {
			b.Fatalf("decision %s", dec.Remedy)
		}
	}
}

// BenchmarkEvaluateIngress is the same for a private CLB Ingress with an SNAT TkeServiceConfig.
func BenchmarkEvaluateIngress(b *testing.B) {
	w := load(b, "profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-ingress-snat.yaml")
	obj := w.object(b, ingWeb)
	d := tencent.NewDialect(nil)
	b.ReportAllocs()
	for b.Loop() {
		tr, err := d.Translate(obj, w.cluster)
		if err != nil {
			b.Fatal(err)
		}
		a := core.Assess(&tr.Exposure)
		core.Decide(&a, tr.Offers, w.cluster.Profile.Policy)
	}
}
