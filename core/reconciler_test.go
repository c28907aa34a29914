package core

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// memCluster is a hand-written ClusterWriter for the reconciler's unit tests: objects by key,
// resourceVersions, and injectable conflicts. It is not core/drivertest.Cluster because
// drivertest imports core, and these internal tests would then form an import cycle.
// Integration against a real API server is in adapters/kube.
type memCluster struct {
	mu        sync.Mutex
	objs      map[ObjectKey]*unstructured.Unstructured
	rv        int
	conflicts int // the next n updates fail with ErrConflict
	writes    []string
}

func newMemCluster(objs ...*unstructured.Unstructured) *memCluster {
	m := &memCluster{objs: map[ObjectKey]*unstructured.Unstructured{}}
	for _, o := range objs {
		m.put(o)
	}
	return m
}

func keyOf(u *unstructured.Unstructured) ObjectKey {
	return ObjectKey{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

func (m *memCluster) put(u *unstructured.Unstructured) {
	m.rv++
	u = u.DeepCopy()
	u.SetResourceVersion(strconv.Itoa(m.rv))
	m.objs[keyOf(u)] = u
}

func (m *memCluster) Get(_ context.Context, k ObjectKey) (*unstructured.Unstructured, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.objs[k]; ok {
		return o.DeepCopy(), nil
	}
	return nil, nil
}

func (m *memCluster) Apply(_ context.Context, u *unstructured.Unstructured) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes = append(m.writes, "apply "+keyOf(u).String())
	live, ok := m.objs[keyOf(u)]
	if !ok {
		m.put(u)
		return nil
	}
	merged := live.DeepCopy()
	mergeMaps(merged.Object, u.Object)
	m.put(merged)
	return nil
}

func mergeMaps(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeMaps(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

func (m *memCluster) Update(_ context.Context, u *unstructured.Unstructured) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes = append(m.writes, "update "+keyOf(u).String())
	live, ok := m.objs[keyOf(u)]
	if !ok {
		return errors.New("not found")
	}
	if m.conflicts > 0 {
		m.conflicts--
		// Someone else changed the object in between.
		other := live.DeepCopy()
		other.SetLabels(map[string]string{"touched": "by-someone-else"})
		m.put(other)
		return &KindError{Kind: ErrConflict, Msg: "the object has been modified"}
	}
	if live.GetResourceVersion() != u.GetResourceVersion() {
		return &KindError{Kind: ErrConflict, Msg: "stale resourceVersion"}
	}
	m.put(u)
	return nil
}

func (m *memCluster) Create(_ context.Context, u *unstructured.Unstructured) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes = append(m.writes, "create "+keyOf(u).String())
	if _, ok := m.objs[keyOf(u)]; ok {
		return &KindError{Kind: ErrConflict, Msg: "already exists"}
	}
	m.put(u)
	return nil
}

func (m *memCluster) Delete(_ context.Context, u *unstructured.Unstructured) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes = append(m.writes, "delete "+keyOf(u).String())
	delete(m.objs, keyOf(u))
	return nil
}

func uobj(apiVersion, kind, ns, name string, body map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: body}
	if u.Object == nil {
		u.Object = map[string]any{}
	}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

var (
	svcKey  = ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "default", Name: "web"}
	cfgKey  = ObjectKey{APIVersion: "cloud.tencent.com/v1alpha1", Kind: "TkeServiceConfig", Namespace: "default", Name: "web-cfg"}
	annEdit = Edit{Path: []PathElem{PathElem{Field: "metadata"}, PathElem{Field: "annotations"}, PathElem{Field: "example.com/intercept"}}, Value: "true"}
)

// testDriver plans the given changes whenever their edits are not yet satisfied.
func testDriver(changes ...Change) funcDriver {
	return funcDriver{PlanFn: func(ctx context.Context, req *PlanRequest) (*Plan, error) {
		p := &Plan{Object: req.Result.Exposure.Object, Decision: req.Result.Decision}
		for _, ch := range changes {
			if ch.By == WriterCluster && req.Reader != nil {
				live, err := req.Reader.Get(ctx, *ch.Object)
				if err != nil {
					return nil, err
				}
				done := live != nil
				for _, e := range ch.Edits {
					done = done && e.Satisfied(live.Object)
				}
				if done {
					continue
				}
			}
			p.Changes = append(p.Changes, ch)
		}
		return p, nil
	}}
}

func atRiskDialect() fakeDialect {
	return fakeDialect{t: &Translation{Exposure: *throughLB(nil), Offers: []Offer{offerIntercept}}}
}

func TestReconcileWritesOnceAndKeepsForeignFields(t *testing.T) {
	mem := newMemCluster(uobj("v1", "Service", "default", "web", map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"owner": "team-a"}},
		"spec":     map[string]any{"type": "LoadBalancer"},
	}))
	drv := testDriver(Change{By: WriterCluster, Object: &svcKey, Strategy: StrategyApply, Edits: []Edit{annEdit}, Field: annEdit.String(), To: "true"})
	r := NewReconciler(NewProvider(atRiskDialect(), drv), WithClusterWriter(mem))
	out, err := r.Reconcile(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Written) != 1 || len(mem.writes) != 1 || mem.writes[0] != "apply Service default/web" {
		t.Fatalf("written %v, writes %v", out.Written, mem.writes)
	}
	live, _ := mem.Get(context.Background(), svcKey)
	if got := live.GetAnnotations(); !cmp.Equal(got, map[string]string{"owner": "team-a", "example.com/intercept": "true"}) {
		t.Errorf("annotations = %v", got)
	}
	// A second run with nothing changed writes nothing.
	out, err = r.Reconcile(context.Background(), nil, nil)
	if err != nil || len(out.Written) != 0 || len(mem.writes) != 1 || !out.Plan.Empty() {
		t.Errorf("second run: written %v, writes %v, err %v", out.Written, mem.writes, err)
	}
}

func TestReconcileUpdateRetriesConflicts(t *testing.T) {
	mem := newMemCluster(uobj(cfgKey.APIVersion, cfgKey.Kind, cfgKey.Namespace, cfgKey.Name, map[string]any{
		"spec": map[string]any{"loadBalancer": map[string]any{"l4Listeners": []any{
			map[string]any{"protocol": "TCP", "port": int64(80), "healthCheck": map[string]any{"enable": true}},
		}}},
	}))
	mem.conflicts = 2
	drv := testDriver(Change{By: WriterCluster, Object: &cfgKey, Strategy: StrategyUpdate, Edits: []Edit{snatEdit}})
	r := NewReconciler(NewProvider(atRiskDialect(), drv), WithClusterWriter(mem))
	if _, err := r.Reconcile(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	live, _ := mem.Get(context.Background(), cfgKey)
	if !snatEdit.Satisfied(live.Object) || live.GetLabels()["touched"] != "by-someone-else" {
		t.Errorf("object = %v: the edit must land on top of the other writer's change", live.Object)
	}
	hc, _, _ := unstructured.NestedSlice(live.Object, "spec", "loadBalancer", "l4Listeners")
	if hc[0].(map[string]any)["healthCheck"] == nil {
		t.Error("a foreign field was dropped")
	}
	if len(mem.writes) != 3 {
		t.Errorf("writes = %v, want 2 conflicts then success", mem.writes)
	}
}

func TestReconcileGivesUpAfterConflictRetries(t *testing.T) {
	mem := newMemCluster(uobj(cfgKey.APIVersion, cfgKey.Kind, cfgKey.Namespace, cfgKey.Name, nil))
	mem.conflicts = 10
	r := NewReconciler(NewProvider(atRiskDialect(), testDriver(Change{By: WriterCluster, Object: &cfgKey, Strategy: StrategyUpdate, Edits: []Edit{snatEdit}})),
		WithClusterWriter(mem), WithConflictRetries(1))
	if _, err := r.Reconcile(context.Background(), nil, nil); !errors.Is(err, ErrConflict) {
		t.Errorf("err = %v, want ErrConflict", err)
	}
}

func TestReconcileCreatesFromTemplate(t *testing.T) {
	mem := newMemCluster()
	tmpl := uobj("", "", "", "", map[string]any{"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/managed-by": "loopguard"}}})
	r := NewReconciler(NewProvider(atRiskDialect(), testDriver(Change{By: WriterCluster, Object: &cfgKey, Strategy: StrategyUpdate, Create: true, Template: tmpl, Edits: []Edit{snatEdit}})), WithClusterWriter(mem))
	if _, err := r.Reconcile(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	live, _ := mem.Get(context.Background(), cfgKey)
	if live == nil || !snatEdit.Satisfied(live.Object) || live.GetLabels()["app.kubernetes.io/managed-by"] != "loopguard" || live.GetKind() != "TkeServiceConfig" {
		t.Errorf("created %v", live)
	}
}

func TestReconcileWaitsForObjectItMustNotCreate(t *testing.T) {
	r := NewReconciler(NewProvider(atRiskDialect(), testDriver(Change{By: WriterCluster, Object: &cfgKey, Strategy: StrategyUpdate, Edits: []Edit{snatEdit}})), WithClusterWriter(newMemCluster()))
	_, err := r.Reconcile(context.Background(), nil, nil)
	var re *RetryError
	if !errors.As(err, &re) || !errors.Is(err, ErrRetryLater) {
		t.Errorf("err = %v, want a RetryError", err)
	}
}

func TestReconcileRefusesBeforeAnyWrite(t *testing.T) {
	write := Change{By: WriterCluster, Object: &svcKey, Strategy: StrategyApply, Edits: []Edit{annEdit}}
	cases := map[string]struct {
		dialect fakeDialect
		changes []Change
		opts    []ReconcilerOption
		kind    error
	}{
		"TentativeDecision": {
			dialect: fakeDialect{t: &Translation{Exposure: *throughLB(func(e *Exposure) { e.Intercept = Unknown }), Offers: []Offer{offerIntercept}}},
			changes: []Change{write}, kind: ErrPrecondition,
		},
		"TicketNotGranted": {
			dialect: fakeDialect{t: &Translation{Exposure: *throughLB(nil), Offers: []Offer{unmet(offerSNAT, PreconditionAllowlist, "clb-l4-snat")}}},
			changes: []Change{write}, opts: []ReconcilerOption{WithPolicy(Policy{AllowTickets: true})}, kind: ErrNotAllowlisted,
		},
		"DisruptiveNotAllowed": {
			dialect: atRiskDialect(),
			changes: []Change{write, {By: WriterCluster, Object: &svcKey, Strategy: StrategyUpdate, Edits: []Edit{annEdit}, Disruptive: true}},
			kind:    ErrImmutable,
		},
		"BadStrategy": {
			dialect: atRiskDialect(),
			changes: []Change{write, {By: WriterCluster, Object: &svcKey, Edits: []Edit{annEdit}}},
			kind:    ErrInvalid,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mem := newMemCluster(uobj("v1", "Service", "default", "web", nil))
			r := NewReconciler(NewProvider(tc.dialect, testDriver(tc.changes...)), append([]ReconcilerOption{WithClusterWriter(mem)}, tc.opts...)...)
			p, err := r.Plan(context.Background(), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !errors.Is(p.Blocked.Err(), tc.kind) {
				t.Errorf("blocked = %v, want %v", p.Blocked, tc.kind)
			}
			if _, err := r.Apply(context.Background(), p); !errors.Is(err, tc.kind) {
				t.Errorf("apply err = %v, want %v", err, tc.kind)
			}
			if len(mem.writes) != 0 {
				t.Errorf("writes = %v, want none", mem.writes)
			}
		})
	}
}

func TestReconcileWithoutWriterPlansButRefusesToApply(t *testing.T) {
	r := NewReconciler(NewProvider(atRiskDialect(), testDriver(Change{By: WriterCluster, Object: &svcKey, Strategy: StrategyApply, Edits: []Edit{annEdit}})))
	p, err := r.Plan(context.Background(), nil, nil)
	if err != nil || p.Blocked != nil || len(p.Changes) != 1 {
		t.Fatalf("offline plan = %+v, %v: a plan without a writer is still a plan", p, err)
	}
	if _, err := r.Apply(context.Background(), p); !errors.Is(err, ErrUnsupported) {
		t.Errorf("err = %v", err)
	}
}

func TestReconcileCloudAndUserChanges(t *testing.T) {
	var applied []string
	boom := errors.New("FailedOperation.ResourceInOperating")
	drv := testDriver(
		Change{By: WriterUser, Field: "podAntiAffinity", To: "required"},
		Change{By: WriterCloud, Resource: "listener lbl-1", Field: "SnatEnable", To: "true"},
		Change{By: WriterCloud, Resource: "listener lbl-2", Field: "SnatEnable", To: "true"},
	)
	fail := true
	drv.ApplyCloudFn = func(_ context.Context, ch *Change) (ApplyResult, error) {
		if ch.Resource == "listener lbl-2" && fail {
			return ApplyResult{}, RetryAfter(0, "task running", boom)
		}
		applied = append(applied, ch.Resource)
		return ApplyResult{Wrote: true}, nil
	}
	r := NewReconciler(NewProvider(atRiskDialect(), drv))
	out, err := r.Reconcile(context.Background(), nil, nil)
	if !errors.Is(err, ErrRetryLater) || !errors.Is(err, boom) {
		t.Fatalf("err = %v: the retry kind and the cloud error must both be reachable", err)
	}
	if len(out.ForUser) != 1 || len(out.Written) != 1 || !cmp.Equal(applied, []string{"listener lbl-1"}) {
		t.Fatalf("outcome = %+v, applied %v", out, applied)
	}
	fail = false
	if _, err := r.Reconcile(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(applied, []string{"listener lbl-1", "listener lbl-1", "listener lbl-2"}) {
		t.Errorf("applied = %v: the retry re-applies idempotently and converges", applied)
	}
}

func TestReconcileChecksPending(t *testing.T) {
	mem := newMemCluster(uobj("v1", "Service", "default", "web", nil))
	drv := testDriver(Change{By: WriterCluster, Object: &svcKey, Strategy: StrategyApply, Edits: []Edit{annEdit}})
	inner := drv.PlanFn
	ipMode := Edit{Path: []PathElem{PathElem{Field: "status"}, PathElem{Field: "loadBalancer"}, PathElem{Field: "ingress"}, PathElem{Keys: map[string]any{"ip": "10.0.0.9"}}, PathElem{Field: "ipMode"}}, Value: "VIP"}
	drv.PlanFn = func(ctx context.Context, req *PlanRequest) (*Plan, error) {
		p, err := inner(ctx, req)
		if p != nil {
			p.Checks = []Check{{Object: svcKey, Edit: ipMode, Pending: "the cloud controller has not reconciled yet"}}
		}
		return p, err
	}
	r := NewReconciler(NewProvider(atRiskDialect(), drv), WithClusterWriter(mem))
	_, err := r.Reconcile(context.Background(), nil, nil)
	var re *RetryError
	if !errors.As(err, &re) || re.After <= 0 {
		t.Fatalf("err = %v, want a RetryError with a delay", err)
	}
	live, _ := mem.Get(context.Background(), svcKey)
	_ = unstructured.SetNestedSlice(live.Object, []any{map[string]any{"ip": "10.0.0.9", "ipMode": "VIP"}}, "status", "loadBalancer", "ingress")
	mem.put(live)
	if _, err := r.Reconcile(context.Background(), nil, nil); err != nil {
		t.Errorf("after the controller caught up: %v", err)
	}
}

// TestPlanEvaluatedPlansFromTheGivenResult: PlanEvaluated hands the driver the caller's result
// (no second evaluation) and blocks the plan as Plan does; without a result it is invalid input.
func TestPlanEvaluatedPlansFromTheGivenResult(t *testing.T) {
	drv := testDriver(Change{By: WriterCluster, Object: &svcKey, Strategy: StrategyApply, Edits: []Edit{annEdit}})
	var got *Result
	plan := drv.PlanFn
	drv.PlanFn = func(ctx context.Context, req *PlanRequest) (*Plan, error) {
		got = req.Result
		return plan(ctx, req)
	}
	r := NewReconciler(NewProvider(atRiskDialect(), drv))
	res, err := Evaluate(atRiskDialect(), nil, nil, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := r.Plan(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.PlanEvaluated(context.Background(), nil, nil, res)
	if err != nil {
		t.Fatal(err)
	}
	if got != res {
		t.Error("the driver did not get the caller's result")
	}
	if !cmp.Equal(p.Changes, want.Changes) || (p.Blocked == nil) != (want.Blocked == nil) {
		t.Errorf("PlanEvaluated = %+v, Plan = %+v", p, want)
	}
	if _, err := r.PlanEvaluated(context.Background(), nil, nil, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("without a result: %v, want invalid input", err)
	}
}
