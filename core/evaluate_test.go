package core

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// FakeDialect is a one-line test double for Evaluate.
type FakeDialect struct {
	T   *Result
	Err error
}

func (f FakeDialect) Name() string  { return "fake" }
func (f FakeDialect) Rules() []Rule { return nil }
func (f FakeDialect) Translate(runtime.Object, *Cluster) (*Result, error) {
	return f.T, f.Err
}

func TestEvaluate(t *testing.T) {
	e := ThroughLBExposure(nil)
	r, err := Evaluate(FakeDialect{T: &Result{Exposure: *e, Offers: []Offer{OfferIntercept, OfferDNS}}}, nil, nil, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Assessment.Risk != RiskAtRisk || r.Decision.Remedy != InterceptVIP || len(r.Offers) != 2 {
		t.Errorf("result = %+v", r)
	}
	boom := errors.New("boom")
	if _, err := Evaluate(FakeDialect{Err: boom}, nil, nil, Policy{}); !errors.Is(err, boom) {
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
