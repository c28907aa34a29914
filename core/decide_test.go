package core

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	OfferIntercept = Offer{Remedy: InterceptVIP, Path: PathVIP, Action: "annotate",
		Costs: Costs{LosesLBFeatures: true, ClientIP: ClientIPKept}, Reason: Reason{Code: "x-intercept", Message: "intercept"}}
	OfferSNAT = Offer{Remedy: LBSourceNAT, Path: PathProxy, Action: "snat",
		Costs: Costs{ClientIP: ClientIPProxyProtocol, Tickets: []Capability{"clb-l4-snat"}}, Reason: Reason{Code: "x-snat", Message: "snat"}}
	OfferSep = Offer{Remedy: NodeSeparation, Path: PathProxy, Action: "anti-affinity",
		Costs: Costs{ClientIP: ClientIPKept, SchedulingChange: true}, Reason: Reason{Code: "x-sep", Message: "separate"}}
	OfferDNS = Offer{Remedy: DNSSteering, Action: "dns",
		Costs: Costs{LosesLBFeatures: true, ClientIP: ClientIPKept, ClientChange: true}, Reason: Reason{Code: "x-dns", Message: "dns"}}
)

func Unmet(o Offer, kind PreconditionKind, cap Capability) Offer {
	o.Unmet = append(append([]Precondition(nil), o.Unmet...), Precondition{Kind: kind, Capability: cap, Reason: Reason{Code: "x-Unmet", Message: string(kind)}})
	return o
}

func TestDecide(t *testing.T) {
	atRisk4 := &Assessment{Risk: RiskAtRisk, Layer: Layer4, Path: PathProxy}
	atRisk7 := &Assessment{Risk: RiskAtRisk, Layer: Layer7, Path: PathProxy}
	all := []Offer{OfferDNS, OfferSep, OfferSNAT, OfferIntercept} // order of offers must not matter
	snatNoTicket := Unmet(OfferSNAT, PreconditionAllowlist, "clb-l4-snat")
	sepUnknownClients := Unmet(OfferSep, PreconditionUnknown, "")
	cases := map[string]struct {
		reason   string
		a        *Assessment
		offers   []Offer
		policy   Policy
		want     Remedy
		path     Path
		tickets  []Capability
		rejected map[Remedy]Code
	}{
		"NoRiskNothingToDo": {
			a: &Assessment{Risk: RiskNone, Layer: Layer4, Path: PathVIP}, offers: all,
			want: RemedyNone, path: PathVIP,
		},
		"Layer4DocumentedOrderPicksIntercept": {
			reason: "seeds 000/001: intra-cluster forwarding first for layer 4",
			a:      atRisk4, offers: all, want: InterceptVIP, path: PathVIP,
			rejected: map[Remedy]Code{LBSourceNAT: "decide-ranked-lower", NodeSeparation: "decide-ranked-lower", DNSSteering: "decide-ranked-lower"},
		},
		"Layer4InterceptBlockedFallsToSNAT": {
			a: atRisk4, offers: []Offer{Unmet(OfferIntercept, PreconditionVersion, ""), OfferSNAT, OfferSep, OfferDNS},
			want: LBSourceNAT, path: PathProxy,
			rejected: map[Remedy]Code{InterceptVIP: "x-Unmet"},
		},
		"Layer4NoAllowlistFallsToSeparation": {
			a: atRisk4, offers: []Offer{Unmet(OfferIntercept, PreconditionVersion, ""), snatNoTicket, OfferSep, OfferDNS},
			want: NodeSeparation, path: PathProxy,
		},
		"Layer4NothingButDNS": {
			a: atRisk4, offers: []Offer{Unmet(OfferIntercept, PreconditionVersion, ""), snatNoTicket, sepUnknownClients, OfferDNS},
			want: DNSSteering, path: "",
		},
		"AllowTicketsPicksSNATAndNamesTicket": {
			a: atRisk4, offers: []Offer{Unmet(OfferIntercept, PreconditionVersion, ""), snatNoTicket, OfferSep, OfferDNS},
			policy: Policy{AllowTickets: true}, want: LBSourceNAT, path: PathProxy, tickets: []Capability{"clb-l4-snat"},
		},
		"Layer7NeverIntercepts": {
			reason: "seeds 000/001 §4: layer 7 only through the LB",
			a:      atRisk7, offers: all, want: LBSourceNAT, path: PathProxy,
			rejected: map[Remedy]Code{InterceptVIP: "decide-l7-no-intercept"},
		},
		"PreferLBFeaturesPicksSNAT": {
			a: atRisk4, offers: all, policy: Policy{Prefer: PreferLBFeatures}, want: LBSourceNAT, path: PathProxy,
		},
		"PreferLBFeaturesWithoutTicketPicksSeparation": {
			a: atRisk4, offers: []Offer{OfferIntercept, snatNoTicket, OfferSep, OfferDNS}, policy: Policy{Prefer: PreferLBFeatures},
			want: NodeSeparation, path: PathProxy,
		},
		"PreferSourceIPAvoidsSNAT": {
			a: atRisk4, offers: []Offer{Unmet(OfferIntercept, PreconditionVersion, ""), OfferSNAT, OfferSep, OfferDNS},
			policy: Policy{Prefer: PreferSourceIP}, want: NodeSeparation, path: PathProxy,
		},
		"BackendsUsingClientAddressAvoidSNAT": {
			reason: "a proxy told where the client address is (docs/gateway.md#client-address) ranks as under prefer source-ip",
			a:      &Assessment{Risk: RiskAtRisk, Layer: Layer4, Path: PathProxy, NeedsClientAddress: Yes},
			offers: []Offer{Unmet(OfferIntercept, PreconditionVersion, ""), OfferSNAT, OfferSep, OfferDNS},
			want:   NodeSeparation, path: PathProxy,
			rejected: map[Remedy]Code{LBSourceNAT: CodeDecideClientAddress, DNSSteering: "decide-ranked-lower"},
		},
		"ClientAddressKeepsInterceptFirst": {
			a:      &Assessment{Risk: RiskAtRisk, Layer: Layer4, Path: PathProxy, NeedsClientAddress: Yes},
			offers: all, want: InterceptVIP, path: PathVIP,
			rejected: map[Remedy]Code{LBSourceNAT: CodeDecideClientAddress, NodeSeparation: "decide-ranked-lower"},
		},
		"StatedPreferenceWinsOverClientAddress": {
			a:      &Assessment{Risk: RiskAtRisk, Layer: Layer4, Path: PathProxy, NeedsClientAddress: Yes},
			offers: all, policy: Policy{Prefer: PreferLBFeatures}, want: LBSourceNAT, path: PathProxy,
			rejected: map[Remedy]Code{NodeSeparation: "decide-ranked-lower"},
		},
		"StatedDocumentedOrderWinsOverClientAddress": {
			reason: "--prefer documented is a stated preference, unlike the default",
			a:      &Assessment{Risk: RiskAtRisk, Layer: Layer4, Path: PathProxy, NeedsClientAddress: Yes},
			offers: []Offer{Unmet(OfferIntercept, PreconditionVersion, ""), OfferSNAT, OfferSep, OfferDNS},
			policy: Policy{Prefer: PreferDocumentedStated}, want: LBSourceNAT, path: PathProxy,
			rejected: map[Remedy]Code{NodeSeparation: "decide-ranked-lower", DNSSteering: "decide-ranked-lower"},
		},
		"DisruptiveRejectedByDefault": {
			reason: "seed 003: ip-mode cannot change on an existing Service",
			a:      atRisk4,
			offers: []Offer{func() Offer {
				o := Unmet(OfferIntercept, PreconditionImmutable, "")
				o.Costs.NewObject = true
				return o
			}(), OfferDNS},
			want: DNSSteering, rejected: map[Remedy]Code{InterceptVIP: "decide-disruptive"},
		},
		"DisruptiveAllowed": {
			a: atRisk4,
			offers: []Offer{func() Offer {
				o := Unmet(OfferIntercept, PreconditionImmutable, "")
				o.Costs.NewObject = true
				return o
			}(), OfferDNS},
			policy: Policy{AllowDisruptive: true}, want: InterceptVIP, path: PathVIP,
		},
		"NothingOffered": {
			a: atRisk4, offers: nil, want: RemedyNone, path: PathProxy,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := Decide(tc.a, tc.offers, tc.policy)
			if d.Remedy != tc.want || d.Path != tc.path {
				t.Fatalf("%s\nremedy/path = %s/%q, want %s/%q (why: %s; rejected %+v)", tc.reason, d.Remedy, d.Path, tc.want, tc.path, d.Why, d.Rejected)
			}
			if diff := cmp.Diff(tc.tickets, d.Tickets); diff != "" {
				t.Errorf("tickets (-want +got):\n%s", diff)
			}
			if d.Why == "" {
				t.Error("a decision must say why")
			}
			if d.Remedy != RemedyNone || tc.a.Risk != RiskNone {
				if n := len(d.Rejected); tc.want != RemedyNone && n != len(tc.offers)-1 {
					t.Errorf("%d rejections for %d offers: every offer not chosen must be explained", n, len(tc.offers))
				}
			}
			for r, code := range tc.rejected {
				found := false
				for _, rj := range d.Rejected {
					if rj.Remedy == r {
						found = true
						if rj.Reason.Code != code {
							t.Errorf("%s rejected with %s (%s), want %s", r, rj.Reason.Code, rj.Reason.Message, code)
						}
						if code == "decide-ranked-lower" && rj.RankedBelow != d.Remedy {
							t.Errorf("%s ranked below %s, want %s", r, rj.RankedBelow, d.Remedy)
						}
					}
				}
				if !found {
					t.Errorf("%s not among rejections %+v", r, d.Rejected)
				}
			}
		})
	}
}

func TestDecideTentativeWhenRiskUnknown(t *testing.T) {
	d := Decide(&Assessment{Risk: RiskUnknown, Layer: Layer4}, []Offer{OfferIntercept}, Policy{})
	if !d.Tentative || d.Remedy != InterceptVIP {
		t.Fatalf("decision = %+v, want a tentative intercept-vip", d)
	}
}

func TestDecideTicketRejectionNamesCapability(t *testing.T) {
	snat := Unmet(OfferSNAT, PreconditionAllowlist, "clb-l4-snat")
	snat.Unmet[0].Reason.Message = "ask support for CLB Layer 4 SNAT"
	d := Decide(&Assessment{Risk: RiskAtRisk, Layer: Layer4}, []Offer{snat, OfferDNS}, Policy{})
	if d.Remedy != DNSSteering || len(d.Rejected) != 1 {
		t.Fatalf("decision = %+v", d)
	}
	if got := d.Rejected[0].Reason.Message; got != reasonDecideTicket.Message+" ask support for CLB Layer 4 SNAT" {
		t.Errorf("rejection = %q", got)
	}
}

func TestDecideRejectionListsEveryUnmet(t *testing.T) {
	snat := Unmet(Unmet(OfferSNAT, PreconditionAllowlist, "clb-l7-snat"), PreconditionAllowlist, "clb-keepalive")
	d := Decide(&Assessment{Risk: RiskAtRisk, Layer: Layer7}, []Offer{snat, OfferDNS}, Policy{})
	if len(d.Rejected) != 1 || len(d.Rejected[0].Unmet) != 2 || d.Rejected[0].Unmet[1].Capability != "clb-keepalive" {
		t.Errorf("rejected = %+v", d.Rejected)
	}
}

func TestPreferenceValidate(t *testing.T) {
	for _, p := range []Preference{PreferDocumented, PreferDocumentedStated, PreferSourceIP, PreferLBFeatures} {
		if fe := p.Validate(nil); fe != nil {
			t.Errorf("%q refused: %v", p, fe)
		}
	}
	fe := Preference("sourceip").Validate(field.NewPath("policy", "prefer"))
	if fe == nil {
		t.Fatal("a misspelt preference must be refused")
	}
	if want := `policy.prefer: Unsupported value: "sourceip": supported values: "documented", "source-ip", "lb-features"`; fe.Error() != want {
		t.Errorf("error = %q, want %q", fe.Error(), want)
	}
}

// TestDecisionDoesNotAliasOffers: changing the offers after Decide leaves the Decision as it was.
func TestDecisionDoesNotAliasOffers(t *testing.T) {
	a := Assess(&Exposure{Scope: Private, Layer: Layer4, Protocols: TCP, Intercept: No, LBSourceNAT: No, Binding: NodePortCluster, Placement: Placement{NodesBehindLB: 3}})
	offers := []Offer{{Remedy: InterceptVIP, Path: PathVIP, Costs: Costs{LosesLBFeatures: true, Tickets: []Capability{"x"}}, Reason: Reason{Message: "m"}}}
	d := Decide(&a, offers, Policy{})
	offers[0].Costs.LosesLBFeatures = false
	offers[0].Costs.Tickets[0] = "y"
	if d.Costs == nil || !d.Costs.LosesLBFeatures || d.Costs.Tickets[0] != "x" {
		t.Errorf("the decision's costs follow the caller's offers: %+v", d.Costs)
	}
}

// TestDecisionNamesItsOffer: the decision carries the chosen offer's ID, for the driver that
// carries it out; two offers of one remedy are told apart by it, not by their text. A tentative
// "fails least" decision names its offer too.
func TestDecisionNamesItsOffer(t *testing.T) {
	first, second := OfferSNAT, OfferSNAT
	first.ID, second.ID = "cloud/first", "cloud/second"
	first.Costs.Tickets, second.Costs.Tickets = nil, nil
	first.Unmet = []Precondition{{Kind: PreconditionUnsupported, Reason: Reason{Code: "x-unmet"}}}
	d := Decide(&Assessment{Risk: RiskAtRisk, Layer: Layer4}, []Offer{first, second}, Policy{})
	if d.Remedy != LBSourceNAT || d.Offer != "cloud/second" {
		t.Fatalf("decision %s offer %q, want lb-snat cloud/second", d.Remedy, d.Offer)
	}
	through := Offer{ID: "cloud/through", Remedy: ThroughLB, Path: PathProxy, Action: "through",
		Unmet: []Precondition{{Kind: PreconditionUnknown, Reason: Reason{Code: "x-unknown", Message: "confirm"}}}, Reason: Reason{Code: "x-through"}}
	a := Assessment{Risk: RiskAtRisk, Layer: Layer4, Symptom: SymptomProtocolError, Path: PathVIP}
	if d := Decide(&a, []Offer{through}, Policy{}); !d.Tentative || d.Offer != "cloud/through" {
		t.Errorf("fails-least decision %+v, want a tentative one naming cloud/through", d)
	}
}
