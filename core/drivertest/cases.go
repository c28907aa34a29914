package drivertest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// CaseHarness is a driver under test with cases of its own, beside the shared scenarios of
// RunConformance: the objects that only this cloud has.
type CaseHarness struct {
	Provider core.Provider
	Cases    []Case
}

// Case is one object to reconcile against an in-memory cluster.
type Case struct {
	Name string
	// Object is the Service or Ingress as the user wrote it; it is stored in the fake cluster
	// too, as the live object, unless NotCreated.
	Object runtime.Object
	// NotCreated: the object does not exist yet (a manifest about to be applied).
	NotCreated bool
	// Cluster holds the objects and profile the dialect reads (Nodes, EndpointSlices, ...).
	Cluster *core.Cluster
	// Live are more objects in the fake cluster (a TkeServiceConfig, a ConfigMap).
	Live   []runtime.Object
	Policy core.Policy
	// Blocked, when set, is the error kind the plan must be blocked with (core.ErrPrecondition,
	// core.ErrNotAllowlisted, ...); when nil the plan must not be blocked.
	Blocked error
	// Settle plays the controllers after the first apply (publish a status), when a plan's
	// checks wait for them; nil when nothing has to happen.
	Settle func(*Cluster)
}

// RunCases runs, for each of a driver's own cases, the contract RunConformance checks on its
// shared scenarios:
//   - planning never writes, and planning twice gives the same plan;
//   - every reason code in the decision and the plan is documented, in core.Rules() or the
//     dialect's Rules();
//   - a blocked plan is blocked with the expected kind and applying it writes nothing;
//   - otherwise applying succeeds (or waits with a core.RetryError until Settle), after
//     which the live object plans nothing more and a second reconcile writes nothing.
func RunCases(t *testing.T, h CaseHarness) {
	t.Helper()
	documented := documentedCodes(h.Provider)
	for _, tc := range h.Cases {
		t.Run(tc.Name, func(t *testing.T) { runCase(t, h, tc, documented) })
	}
}

func documentedCodes(p core.Provider) map[core.Code]bool {
	documented := map[core.Code]bool{}
	for _, r := range append(core.Rules(), dialect.Rules()...) {
		documented[r.Code] = true
	}
	for _, r := range p.Dialect().Rules() {
		documented[r.Code] = true
	}
	return documented
}

func runCase(t *testing.T, h CaseHarness, tc Case, documented map[core.Code]bool) {
	ctx := context.Background()
	key, ok := core.KeyOf(tc.Object)
	if !ok {
		t.Fatalf("case object %T is not a Service or Ingress", tc.Object)
	}
	objs := tc.Live
	if !tc.NotCreated {
		objs = append([]runtime.Object{tc.Object}, tc.Live...)
	}
	live := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		u, err := ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, u)
	}
	fake := NewCluster(live...)
	r := core.NewReconciler(h.Provider, &core.ReconcilerOptions{ClusterWriter: fake, Policy: tc.Policy})

	p1, err := r.Plan(ctx, tc.Object, tc.Cluster)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if w := fake.Writes(); len(w) > 0 {
		t.Fatalf("planning wrote %v: Plan must only read", w)
	}
	p2, err := r.Plan(ctx, tc.Object, tc.Cluster)
	if err != nil {
		t.Fatalf("second plan: %v", err)
	}
	if a, b := render(p1), render(p2); a != b {
		t.Errorf("planning twice gave different plans:\n%s\n---\n%s", a, b)
	}
	checkCodes(t, p1, documented)

	if tc.Blocked != nil {
		if !errors.Is(p1.Blocked.Err(), tc.Blocked) {
			t.Fatalf("blocked = %v, want an error matching %v", p1.Blocked, tc.Blocked)
		}
		if _, err := r.Apply(ctx, p1); !errors.Is(err, tc.Blocked) {
			t.Errorf("apply of a blocked plan: %v, want %v", err, tc.Blocked)
		}
		if w := fake.Writes(); len(w) > 0 {
			t.Errorf("a blocked plan wrote %v", w)
		}
		return
	}
	if p1.Blocked != nil {
		t.Fatalf("plan blocked: %v\n%s", p1.Blocked, render(p1))
	}
	if _, err := r.Apply(ctx, p1); err != nil && !errors.Is(err, core.ErrRetryLater) {
		t.Fatalf("apply: %v\n%s", err, render(p1))
	}
	if tc.Settle != nil {
		tc.Settle(fake)
	}
	obj := reread(t, fake, key)
	p3, err := r.Plan(ctx, obj, tc.Cluster)
	if err != nil {
		t.Fatalf("plan after apply: %v", err)
	}
	if !p3.Empty() {
		t.Errorf("after applying, the live object still plans changes:\n%s", render(p3))
	}
	before := len(fake.Writes())
	if _, err := r.Reconcile(ctx, obj, tc.Cluster); err != nil {
		t.Errorf("second reconcile: %v", err)
	}
	if w := fake.Writes(); len(w) != before {
		t.Errorf("a second reconcile wrote %v", w[before:])
	}
}

func reread(t *testing.T, fake *Cluster, key core.ObjectKey) runtime.Object {
	t.Helper()
	u, err := fake.Get(context.Background(), key)
	if err != nil || u == nil {
		t.Fatalf("re-read %s: %v (present %v)", key, err, u != nil)
	}
	obj, err := dialect.TypedFromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func checkCodes(t *testing.T, p *core.Plan, documented map[core.Code]bool) {
	t.Helper()
	check := func(where string, r core.Reason) {
		if r.Code != "" && !documented[r.Code] {
			t.Errorf("%s: reason code %q is not documented in core.Rules(), dialect.Rules() or the dialect's Rules()", where, r.Code)
		}
	}
	check("decision", p.Decision.Reason)
	for _, rj := range p.Decision.Rejected {
		check("rejection of "+string(rj.Remedy), rj.Reason)
	}
	for _, n := range p.Notes {
		check("plan note", n)
	}
	for i := range p.Changes {
		check("change "+p.Changes[i].Field, p.Changes[i].Reason)
	}
}

// render is a plan as text, for comparing and for failure messages.
func render(p *core.Plan) string {
	s := p.String()
	for _, c := range p.Checks {
		s += fmt.Sprintf("\n  check %s %s = %v", c.Object, c.Edit, c.Edit.Value)
	}
	for _, n := range p.Notes {
		s += "\n  note " + string(n.Code)
	}
	if p.Blocked != nil {
		s += "\n  blocked: " + p.Blocked.String()
	}
	return s
}
