package core

import "testing"

// BenchmarkAssessDecide measures the pure core for one object: issue 2 asks for under 2 µs and
// at most 10 allocations.
func BenchmarkAssessDecide(b *testing.B) {
	e := ThroughLBExposure(func(e *Exposure) {
		e.Binding = NodePortLocal
		e.Placement = Placement{Backends: []NodeBackends{{"n1", 2}, {"n2", 1}, {"n3", 1}}, ClientNodes: []string{"n2"}}
		e.Reasons = []Reason{{Code: "tke-ipvs-no-intercept", Message: "IPVS does not intercept the CLB VIP", Source: "seed 001 §2"}}
	})
	offers := []Offer{OfferIntercept, OfferSNAT, OfferSep, OfferDNS}
	b.ReportAllocs()
	for b.Loop() {
		a := Assess(e)
		d := Decide(&a, offers, Policy{})
		if d.Remedy != InterceptVIP {
			b.Fatal(d.Remedy)
		}
	}
}

func BenchmarkAssessNoLoop(b *testing.B) {
	e := ThroughLBExposure(func(e *Exposure) { e.Intercept = Yes })
	b.ReportAllocs()
	for b.Loop() {
		a := Assess(e)
		_ = Decide(&a, nil, Policy{})
	}
}
