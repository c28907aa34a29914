package core

import (
	"testing"
)

// intercepted is a private, intercepted exposure: it cannot loop.
func intercepted(mod func(*Exposure)) *Exposure {
	e := &Exposure{Object: ObjectRef{Kind: "Service", Namespace: "shop", Name: "api"}, Scope: Private, Layer: Layer4,
		Protocols: TCP, Intercept: Yes, InterceptMasquerades: No, LBSourceNAT: Yes, Binding: NodePortLocal}
	if mod != nil {
		mod(e)
	}
	return e
}

// throughLBOffer is a dialect's through-lb offer: Unmet while that path would loop.
func throughLBOffer(e *Exposure) Offer {
	o := Offer{Remedy: ThroughLB, Path: PathProxy, Action: "publish Proxy", Costs: Costs{ClientIP: ClientIPProxyProtocol}, Reason: Reason{Code: "x-through-lb"}}
	if e.LBSourceNAT != Yes {
		o.Unmet = []Precondition{{Kind: PreconditionUnsupported, Reason: Reason{Code: "x-loops"}}}
	}
	return o
}

// TestAssessJudgesTheVIPDirection: an intercepted exposure whose backends need the LB fails
// the other way (docs/sources.md#lb-dependence), for each thing they can need.
func TestAssessJudgesTheVIPDirection(t *testing.T) {
	cases := map[string]struct {
		e       *Exposure
		risk    Risk
		symptom Symptom
		code    Code
	}{
		"plain backend":       {e: intercepted(nil), risk: RiskNone, symptom: SymptomNone},
		"declared no needs":   {e: intercepted(func(e *Exposure) { e.Needs = LBDependence{ProxyHeader: No, TLS: No, L7Routing: No} }), risk: RiskNone, symptom: SymptomNone},
		"needs unknown":       {e: intercepted(func(e *Exposure) { e.Needs.TLS = Unknown }), risk: RiskNone, symptom: SymptomNone},
		"expects PROXY":       {e: intercepted(func(e *Exposure) { e.Needs.ProxyHeader = Yes }), risk: RiskAtRisk, symptom: SymptomProtocolError, code: "vip-skips-proxy-header"},
		"LB sends PROXY":      {e: intercepted(func(e *Exposure) { e.ProxyProtocol = Yes }), risk: RiskAtRisk, symptom: SymptomProtocolError, code: "vip-skips-proxy-header"},
		"TLS at the LB":       {e: intercepted(func(e *Exposure) { e.Needs.TLS = Yes }), risk: RiskAtRisk, symptom: SymptomProtocolError, code: "vip-skips-lb-tls"},
		"LB layer-7 routing":  {e: intercepted(func(e *Exposure) { e.Needs.L7Routing = Yes }), risk: RiskAtRisk, symptom: SymptomProtocolError, code: "vip-skips-lb-l7"},
		"through the LB":      {e: intercepted(func(e *Exposure) { e.Intercept = No; e.Needs.ProxyHeader = Yes }), risk: RiskNone, symptom: SymptomNone},
		"public LB, no needs": {e: intercepted(func(e *Exposure) { e.Scope = Public }), risk: RiskNone, symptom: SymptomNone},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := Assess(tc.e)
			if a.Risk != tc.risk || a.Symptom != tc.symptom {
				t.Fatalf("risk %s symptom %s, want %s %s; reasons %v", a.Risk, a.Symptom, tc.risk, tc.symptom, codes(a.Reasons))
			}
			if tc.code != "" {
				if !hasCode(a.Reasons, tc.code) || !hasCode(a.Reasons, "node-intercepts-vip") {
					t.Errorf("reasons %v, want node-intercepts-vip and %s", codes(a.Reasons), tc.code)
				}
				if a.Path != PathVIP || a.WorstCase.Value() != 1 {
					t.Errorf("path %q worst %v, want VIP and every connection", a.Path, a.WorstCase)
				}
			}
		})
	}
}

// TestDecideKeepsTrafficOnTheLBWhenTheBackendsNeedIt: both directions at once. Intercepting is
// never chosen for backends that need the LB, whether the exposure loops now (Proxy path) or
// breaks now (VIP path), and the rejection says so.
func TestDecideKeepsTrafficOnTheLBWhenTheBackendsNeedIt(t *testing.T) {
	expects := func(e *Exposure) { e.Needs.ProxyHeader = Yes }
	cases := map[string]struct {
		e      *Exposure
		offers func(e *Exposure) []Offer
		want   Remedy
		path   Path
	}{
		"broken on VIP: through the LB, which has SNAT": {
			e: intercepted(expects),
			offers: func(e *Exposure) []Offer {
				return []Offer{OfferIntercept, OfferDNS, throughLBOffer(e)}
			},
			want: ThroughLB, path: PathProxy,
		},
		"broken on VIP, but through the LB would loop": {
			e: intercepted(func(e *Exposure) { expects(e); e.LBSourceNAT = No }),
			offers: func(e *Exposure) []Offer {
				return []Offer{OfferIntercept, OfferDNS, throughLBOffer(e)}
			},
			want: RemedyNone, path: PathVIP, // nothing can be done: it stays as it is
		},
		"loops on Proxy: SNAT, not interception": {
			e: intercepted(func(e *Exposure) {
				expects(e)
				e.Intercept = No
				e.LBSourceNAT = No
				e.Placement.Backends = []NodeBackends{{"n1", 1}}
			}),
			offers: func(*Exposure) []Offer { return []Offer{OfferIntercept, OfferSNAT, OfferDNS} },
			want:   LBSourceNAT, path: PathProxy,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := Assess(tc.e)
			if a.Risk != RiskAtRisk {
				t.Fatalf("risk %s, want at-risk (%v)", a.Risk, codes(a.Reasons))
			}
			d := Decide(&a, tc.offers(tc.e), Policy{AllowTickets: true})
			if d.Remedy != tc.want || d.Path != tc.path {
				t.Fatalf("decision %s (%q), want %s (%q); rejected %+v", d.Remedy, d.Path, tc.want, tc.path, d.Rejected)
			}
			for _, r := range d.Rejected {
				if (r.Remedy == InterceptVIP || r.Remedy == DNSSteering) && r.Reason.Code != ruleDecideKeepsOffLB.Code {
					t.Errorf("%s rejected for %s, want %s", r.Remedy, r.Reason.Code, ruleDecideKeepsOffLB.Code)
				}
				if r.Remedy == ThroughLB && r.Reason.Code != "x-loops" {
					t.Errorf("through-lb rejected for %s, want x-loops", r.Reason.Code)
				}
			}
		})
	}
}
