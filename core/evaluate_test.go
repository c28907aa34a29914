package core

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// fakeDialect is a one-line test double for Evaluate.
type fakeDialect struct {
	t   *Translation
	err error
}

func (f fakeDialect) Name() string  { return "fake" }
func (f fakeDialect) Rules() []Rule { return nil }
func (f fakeDialect) Translate(runtime.Object, *Cluster) (*Translation, error) {
	return f.t, f.err
}

func TestEvaluate(t *testing.T) {
	e := throughLB(nil)
	r, err := Evaluate(fakeDialect{t: &Translation{Exposure: *e, Offers: []Offer{offerIntercept, offerDNS}}}, nil, nil, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Assessment.Risk != RiskAtRisk || r.Decision.Remedy != InterceptVIP || len(r.Offers) != 2 {
		t.Errorf("result = %+v", r)
	}
	boom := errors.New("boom")
	if _, err := Evaluate(fakeDialect{err: boom}, nil, nil, Policy{}); !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
}

func TestRulesAreUniqueAndDocumented(t *testing.T) {
	seen := map[Code]bool{}
	for _, r := range Rules() {
		if r.Code == "" || r.Summary == "" || r.Source == "" {
			t.Errorf("rule %+v lacks a code, summary or source", r)
		}
		if seen[r.Code] {
			t.Errorf("code %s is used twice", r.Code)
		}
		seen[r.Code] = true
	}
}
