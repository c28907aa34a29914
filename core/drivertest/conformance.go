package drivertest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// Harness builds one driver under test, with its backing fakes, fresh for every scenario of
// RunConformance: a harness only builds; the scenarios, and what they require, belong to the
// suite (go-cloud's drivertest is the model).
type Harness struct {
	// New builds a fresh Env. It is called once per scenario.
	New func(t *testing.T, s Setup) *Env
}

// Setup says what a scenario needs of the Env.
type Setup struct {
	// NotAllowlisted: the account is not declared to have the capability the remedy needs.
	// A harness whose cloud has no allowlists returns nil for it.
	NotAllowlisted bool
}

// Env is one driver with its fakes, as a scenario finds it.
type Env struct {
	// Provider is what a host holds.
	Provider core.Provider
	// Live is the in-memory cluster the Reconciler reads and writes; it holds Object.
	Live *Cluster
	// Facts returns what the dialect knows about the cluster now, as a host would gather it
	// from the live objects (a TkeServiceConfig loopguard created is a fact too).
	Facts func() *core.Cluster
	// Object is an exposure at risk whose remedy this driver carries out.
	Object runtime.Object
	Policy core.Policy

	// CloudWrites counts the write calls the in-process cloud accepted; nil when the driver
	// writes no cloud.
	CloudWrites func() int
	// CloudState renders the cloud's state for comparison (what removal must restore); nil
	// when the driver writes no cloud.
	CloudState func() string
	// Refuse makes the cloud refuse the capability the remedy needs from now on (the
	// account's allowlist is declared but not granted); nil when the cloud has no allowlists.
	Refuse func()
	// Busy makes the cloud answer the next writes as busy or throttled for longer than the
	// driver retries; nil when the driver writes no cloud.
	Busy func()
	// Calm ends Busy.
	Calm func()
	// Revert undoes what loopguard set, as another writer behind its back would.
	Revert func(t *testing.T)
	// Host carries out the changes the Reconciler hands back for the host (Outcome.ForStatus),
	// as a cloud-controller-manager would by returning them; nil when there are none.
	Host func(t *testing.T, out *core.Outcome)
	// Settle plays the cloud's controllers after a write (a status published); nil when
	// nothing has to happen.
	Settle func(t *testing.T)
}

// RunConformance runs the same scenarios against every driver, through the public API only:
//
//   - converges: at risk → planned → applied → the live object plans nothing more, and a
//     second reconcile writes nothing (counted on the cluster fake and the cloud server);
//   - restart: after applying, a new Reconciler on the live state plans nothing;
//   - observe-writes-nothing: planning, twice, writes nothing and gives the same plan;
//   - not-allowlisted: without the allowlist the plan is blocked before any write, with the
//     capability and what to ask support for;
//   - cloud-refusal: a declared allowlist the cloud refuses is an *core.AllowlistError
//     wrapping the cloud's answer, nothing is half-written, and a CapabilityCache blocks the
//     next plan without asking the cloud again;
//   - busy: a busy or throttling cloud is a core.RetryError, and a later reconcile converges;
//   - reverted: a change undone behind loopguard's back shows in the next plan and is made
//     again;
//   - removal: Remove takes back everything loopguard set and nothing else (the cluster and
//     the cloud are as they were before), and a second Remove writes nothing.
//
// Scenarios a driver cannot meet (no cloud writes, no allowlists) are skipped with the reason.
func RunConformance(t *testing.T, h Harness) {
	t.Helper()
	for _, sc := range []struct {
		name string
		run  func(*testing.T, Harness)
	}{
		{"converges", scenarioConverges},
		{"restart", scenarioRestart},
		{"observe-writes-nothing", scenarioObserve},
		{"not-allowlisted", scenarioNotAllowlisted},
		{"cloud-refusal", scenarioRefusal},
		{"busy", scenarioBusy},
		{"reverted", scenarioReverted},
		{"removal", scenarioRemoval},
	} {
		t.Run(sc.name, func(t *testing.T) { sc.run(t, h) })
	}
}

func (e *Env) reconciler(cache *core.CapabilityCache) *core.Reconciler {
	return core.NewReconciler(e.Provider, &core.ReconcilerOptions{ClusterWriter: e.Live, Policy: e.Policy, CapabilityCache: cache})
}

func (e *Env) writes() (cluster, cloud int) {
	cluster = len(e.Live.Writes())
	if e.CloudWrites != nil {
		cloud = e.CloudWrites()
	}
	return cluster, cloud
}

// live re-reads the object under test.
func (e *Env) live(t *testing.T) runtime.Object {
	t.Helper()
	key, ok := core.KeyOf(e.Object)
	if !ok {
		t.Fatalf("the object under test, %T, is not a Service or Ingress", e.Object)
	}
	return reread(t, e.Live, key)
}

// converge reconciles until the plan is empty, carrying out host changes and settling, within
// a few rounds (a change can wait on a controller once).
func (e *Env) converge(t *testing.T, r *core.Reconciler) {
	t.Helper()
	ctx := context.Background()
	for round := 0; round < 3; round++ {
		p, err := r.Plan(ctx, e.live(t), e.Facts())
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		if p.Blocked != nil {
			t.Fatalf("plan blocked: %s\n%s", p.Blocked, render(p))
		}
		if p.Empty() {
			return
		}
		out, err := r.Apply(ctx, p)
		if err != nil && !errors.Is(err, core.ErrRetryLater) {
			t.Fatalf("apply: %v\n%s", err, render(p))
		}
		if e.Host != nil && out != nil {
			e.Host(t, out)
		}
		if e.Settle != nil {
			e.Settle(t)
		}
	}
	p, err := r.Plan(ctx, e.live(t), e.Facts())
	if err != nil || !p.Empty() {
		t.Fatalf("no convergence after 3 rounds: %v\n%s", err, render(p))
	}
}

func newEnv(t *testing.T, h Harness, s Setup) *Env {
	t.Helper()
	e := h.New(t, s)
	if e == nil {
		t.Skip("the harness has no such setup (its cloud has no allowlists)")
	}
	return e
}

func scenarioConverges(t *testing.T, h Harness) {
	e := newEnv(t, h, Setup{})
	r := e.reconciler(nil)
	ctx := context.Background()
	p, err := r.Plan(ctx, e.Object, e.Facts())
	if err != nil {
		t.Fatal(err)
	}
	if p.Empty() {
		t.Fatalf("the object under test plans nothing; a harness must give an exposure at risk:\n%s", render(p))
	}
	checkCodes(t, p, documentedCodes(e.Provider))
	e.converge(t, r)
	c0, k0 := e.writes()
	out, err := r.Reconcile(ctx, e.live(t), e.Facts())
	if err != nil {
		t.Fatalf("second reconcile: %v", err)
	}
	if len(out.Written) != 0 || len(out.ForStatus) != 0 {
		t.Errorf("a second reconcile reports writes %v, status changes %v", out.Written, out.ForStatus)
	}
	if c1, k1 := e.writes(); c1 != c0 || k1 != k0 {
		t.Errorf("a second reconcile wrote: cluster %d → %d, cloud %d → %d (%v)", c0, c1, k0, k1, e.Live.Writes()[c0:])
	}
}

func scenarioRestart(t *testing.T, h Harness) {
	e := newEnv(t, h, Setup{})
	e.converge(t, e.reconciler(nil))
	c0, k0 := e.writes()
	p, err := e.reconciler(nil).Plan(context.Background(), e.live(t), e.Facts())
	if err != nil {
		t.Fatal(err)
	}
	if !p.Empty() || p.Blocked != nil {
		t.Errorf("a new Reconciler on the fixed state plans:\n%s", render(p))
	}
	if c1, k1 := e.writes(); c1 != c0 || k1 != k0 {
		t.Errorf("planning after a restart wrote (cluster %d → %d, cloud %d → %d)", c0, c1, k0, k1)
	}
}

func scenarioObserve(t *testing.T, h Harness) {
	e := newEnv(t, h, Setup{})
	r := e.reconciler(nil)
	p1, err := r.Plan(context.Background(), e.Object, e.Facts())
	if err != nil {
		t.Fatal(err)
	}
	p2, err := r.Plan(context.Background(), e.Object, e.Facts())
	if err != nil {
		t.Fatal(err)
	}
	if a, b := render(p1), render(p2); a != b {
		t.Errorf("planning twice gave different plans:\n%s\n---\n%s", a, b)
	}
	if c, k := e.writes(); c != 0 || k != 0 {
		t.Errorf("planning wrote: cluster %v, %d cloud writes", e.Live.Writes(), k)
	}
}

func scenarioNotAllowlisted(t *testing.T, h Harness) {
	e := newEnv(t, h, Setup{NotAllowlisted: true})
	e.Policy.AllowTickets = true // let Decide choose the remedy the ticket is for
	r := e.reconciler(nil)
	p, err := r.Plan(context.Background(), e.Object, e.Facts())
	if err != nil {
		t.Fatal(err)
	}
	if p.Blocked == nil || p.Blocked.Kind != "not-allowlisted" || p.Blocked.Capability == "" || p.Blocked.Ask == "" || p.Blocked.Ask == string(p.Blocked.Capability) {
		t.Fatalf("blocked = %+v: want not-allowlisted with the capability and the support request in the cloud's words\n%s", p.Blocked, render(p))
	}
	if _, err := r.Apply(context.Background(), p); !errors.Is(err, core.ErrNotAllowlisted) {
		t.Errorf("apply of the blocked plan: %v", err)
	}
	if c, k := e.writes(); c != 0 || k != 0 {
		t.Errorf("a blocked plan wrote: cluster %v, %d cloud writes", e.Live.Writes(), k)
	}
}

func scenarioRefusal(t *testing.T, h Harness) {
	e := newEnv(t, h, Setup{})
	if e.Refuse == nil {
		t.Skip("the driver's cloud has no allowlists to refuse")
	}
	e.Refuse()
	before := e.state(t)
	cache := &core.CapabilityCache{}
	r := e.reconciler(cache)
	_, err := r.Reconcile(context.Background(), e.Object, e.Facts())
	var allow *core.AllowlistError
	if !errors.As(err, &allow) || allow.Err == nil {
		t.Fatalf("reconcile = %v: want a *core.AllowlistError wrapping the cloud's refusal", err)
	}
	if after := e.state(t); after != before {
		t.Errorf("a refusal left something half-written:\nbefore %s\nafter  %s", before, after)
	}
	if _, ok := cache.Refused(allow.Capability); !ok {
		t.Errorf("the CapabilityCache did not remember the refusal of %s", allow.Capability)
	}
	_, k0 := e.writes()
	p, err := r.Plan(context.Background(), e.Object, e.Facts())
	if err != nil {
		t.Fatal(err)
	}
	if p.Blocked == nil || p.Blocked.Kind != "not-allowlisted" {
		t.Errorf("after a remembered refusal the plan is not blocked:\n%s", render(p))
	}
	if _, err := r.Apply(context.Background(), p); !errors.Is(err, core.ErrNotAllowlisted) {
		t.Errorf("apply after a remembered refusal: %v", err)
	}
	if _, k1 := e.writes(); k1 != k0 {
		t.Errorf("a remembered refusal still called the cloud (%d → %d writes)", k0, k1)
	}
	cache.Forget(allow.Capability)
	if _, ok := cache.Refused(allow.Capability); ok {
		t.Error("Forget kept the refusal")
	}
}

func scenarioBusy(t *testing.T, h Harness) {
	e := newEnv(t, h, Setup{})
	if e.Busy == nil {
		t.Skip("the driver writes no cloud that can be busy")
	}
	e.Busy()
	r := e.reconciler(nil)
	_, err := r.Reconcile(context.Background(), e.Object, e.Facts())
	var retry *core.RetryError
	if !errors.As(err, &retry) || retry.After <= 0 {
		t.Fatalf("reconcile against a busy cloud = %v: want a *core.RetryError with a delay", err)
	}
	e.Calm()
	e.converge(t, r)
}

func scenarioReverted(t *testing.T, h Harness) {
	e := newEnv(t, h, Setup{})
	r := e.reconciler(nil)
	e.converge(t, r)
	e.Revert(t)
	p, err := r.Plan(context.Background(), e.live(t), e.Facts())
	if err != nil {
		t.Fatal(err)
	}
	if p.Empty() {
		t.Fatalf("a change reverted behind loopguard's back went unnoticed:\n%s", render(p))
	}
	e.converge(t, r)
}

func scenarioRemoval(t *testing.T, h Harness) {
	e := newEnv(t, h, Setup{})
	if _, ok := e.driver(t).(dialect.Remover); !ok {
		t.Skip("the driver sets nothing it can take back (no dialect.Remover)")
	}
	before := e.state(t)
	r := e.reconciler(nil)
	e.converge(t, r)
	if e.state(t) == before {
		t.Fatal("converging changed nothing to remove")
	}
	out, err := r.Remove(context.Background(), e.live(t), e.Facts())
	if err != nil {
		t.Fatalf("remove: %v", err)
	}
	if len(out.Written) == 0 {
		t.Errorf("remove wrote nothing")
	}
	if after := e.state(t); after != before {
		t.Errorf("after Remove the state is not what it was before loopguard:\nbefore %s\nafter  %s", before, after)
	}
	c0, k0 := e.writes()
	out, err = r.Remove(context.Background(), e.live(t), e.Facts())
	if err != nil {
		t.Fatalf("second remove: %v", err)
	}
	if c1, k1 := e.writes(); c1 != c0 || k1 != k0 || len(out.Written) != 0 {
		t.Errorf("a second Remove wrote %v (cluster %d → %d, cloud %d → %d)", out.Written, c0, c1, k0, k1)
	}
}

func (e *Env) driver(t *testing.T) core.Driver {
	d, ok := e.Provider.Driver()
	if !ok {
		t.Fatal("the provider under test has no driver")
	}
	return d
}

// state renders the cluster's objects and the cloud's state, without what the API server
// maintains (resourceVersion), for before/after comparisons.
func (e *Env) state(t *testing.T) string {
	t.Helper()
	objs := e.Live.Objects()
	for _, u := range objs {
		u.SetResourceVersion("")
		pruneEmpty(u.Object)
	}
	b, err := json.Marshal(objs)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if e.CloudState != nil {
		s += "\ncloud: " + e.CloudState()
	}
	return s
}

// pruneEmpty drops empty maps: an annotations map emptied by a removal equals one never made.
func pruneEmpty(m map[string]any) {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			pruneEmpty(sub)
			if len(sub) == 0 {
				delete(m, k)
			}
		}
	}
}
