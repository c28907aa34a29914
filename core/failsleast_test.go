package core

import (
	"strings"
	"testing"
)

// TestFailsLeast: when today's VIP path fails every in-cluster connection (protocol-error) and
// no remedy is ready, Decide recommends the through-lb offer that fails least, tentatively,
// naming what to confirm; offers blocked by anything but a missing fact or the loop stay out.
func TestFailsLeast(t *testing.T) {
	broken := &Assessment{Risk: RiskAtRisk, Symptom: SymptomProtocolError, Layer: Layer4, Path: PathVIP, NeedsLB: Yes}
	through := func(code Code, kind PreconditionKind, action string) Offer {
		o := Offer{Remedy: ThroughLB, Path: PathProxy, Action: action, Reason: Reason{Code: "x-through", Message: "through the LB"}}
		if kind != "" {
			o.Unmet = []Precondition{{Kind: kind, Reason: Reason{Code: code, Message: "confirm " + string(code)}}}
		}
		return o
	}
	loops := through(codeThroughLBLoops, PreconditionUnsupported, "loops")
	missing := through("x-missing", PreconditionUnknown, "missing")
	tooOld := through("x-version", PreconditionVersion, "old")
	for name, tc := range map[string]struct {
		a          *Assessment
		offers     []Offer
		want       string // the chosen action, "" for none
		tentative  bool
		confirming string
	}{
		"a missing fact fails less than a loop":       {a: broken, offers: []Offer{loops, missing}, want: "missing", tentative: true, confirming: "confirm x-missing"},
		"a loop fails less than every connection":     {a: broken, offers: []Offer{OfferIntercept, loops}, want: "loops", tentative: true, confirming: "confirm " + string(codeThroughLBLoops)},
		"a component too old is no path":              {a: broken, offers: []Offer{tooOld}},
		"node separation does not leave the VIP path": {a: broken, offers: []Offer{Unmet(OfferSep, PreconditionUnknown, "")}},
		"a ready offer needs no fallback":             {a: broken, offers: []Offer{loops, through("", "", "ready")}, want: "ready"},
		"not every connection fails today":            {a: &Assessment{Risk: RiskAtRisk, Symptom: SymptomIntermittent, Layer: Layer4, Path: PathProxy}, offers: []Offer{missing}},
	} {
		t.Run(name, func(t *testing.T) {
			d := Decide(tc.a, tc.offers, Policy{})
			if tc.want == "" {
				if d.Remedy != RemedyNone {
					t.Fatalf("decision %s (%s), want none", d.Remedy, d.Action)
				}
				return
			}
			if d.Action != tc.want || d.Tentative != tc.tentative {
				t.Fatalf("decision %q tentative %v, want %q %v: %s", d.Action, d.Tentative, tc.want, tc.tentative, d.Why)
			}
			if tc.tentative && (d.Reason.Code != CodeDecideFailsLeast || !strings.Contains(d.Why, tc.confirming)) {
				t.Errorf("reason %s, why %q: want %s naming %q", d.Reason.Code, d.Why, CodeDecideFailsLeast, tc.confirming)
			}
		})
	}
}
