package core_test

import (
	"context"
	"errors"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/drivertest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

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
	svcKey  = core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "default", Name: "web"}
	cfgKey  = core.ObjectKey{APIVersion: "cloud.tencent.com/v1alpha1", Kind: "TkeServiceConfig", Namespace: "default", Name: "web-cfg"}
	annEdit = core.Edit{Path: []core.PathElem{core.PathElem{Field: "metadata"}, core.PathElem{Field: "annotations"}, core.PathElem{Field: "example.com/intercept"}}, Value: "true"}
)

// testDriver plans the given changes whenever their edits are not yet satisfied.
func testDriver(changes ...core.Change) drivertest.DriverFuncs {
	return drivertest.DriverFuncs{PlanFn: func(ctx context.Context, req *core.PlanRequest) (*core.Plan, error) {
		p := &core.Plan{Object: req.Result.Exposure.Object, Decision: req.Result.Decision}
		for _, ch := range changes {
			if ch.By == core.WriterCluster && req.Reader != nil {
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

func atRiskDialect() core.FakeDialect {
	return core.FakeDialect{T: &core.Result{Exposure: *core.ThroughLBExposure(nil), Offers: []core.Offer{core.OfferIntercept}}}
}

func TestReconcileWritesOnceAndKeepsForeignFields(t *testing.T) {
	mem := drivertest.NewCluster(uobj("v1", "Service", "default", "web", map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"owner": "team-a"}},
		"spec":     map[string]any{"type": "LoadBalancer"},
	}))
	drv := testDriver(core.Change{By: core.WriterCluster, Object: &svcKey, Strategy: core.StrategyApply, Edits: []core.Edit{annEdit}, Field: annEdit.String(), To: "true"})
	r := core.NewReconciler(core.NewProvider(atRiskDialect(), drv), &core.ReconcilerOptions{ClusterWriter: mem})
	out, err := r.Reconcile(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Written) != 1 || len(mem.Writes()) != 1 || mem.Writes()[0] != "apply Service default/web" {
		t.Fatalf("written %v, writes %v", out.Written, mem.Writes())
	}
	live, _ := mem.Get(context.Background(), svcKey)
	if got := live.GetAnnotations(); !cmp.Equal(got, map[string]string{"owner": "team-a", "example.com/intercept": "true"}) {
		t.Errorf("annotations = %v", got)
	}
	// A second run with nothing changed writes nothing.
	out, err = r.Reconcile(context.Background(), nil, nil)
	if err != nil || len(out.Written) != 0 || len(mem.Writes()) != 1 || !out.Plan.Empty() {
		t.Errorf("second run: written %v, writes %v, err %v", out.Written, mem.Writes(), err)
	}
}

func TestReconcileUpdateRetriesConflicts(t *testing.T) {
	mem := drivertest.NewCluster(uobj(cfgKey.APIVersion, cfgKey.Kind, cfgKey.Namespace, cfgKey.Name, map[string]any{
		"spec": map[string]any{"loadBalancer": map[string]any{"l4Listeners": []any{
			map[string]any{"protocol": "TCP", "port": int64(80), "healthCheck": map[string]any{"enable": true}},
		}}},
	}))
	mem.InjectConflicts(2)
	drv := testDriver(core.Change{By: core.WriterCluster, Object: &cfgKey, Strategy: core.StrategyUpdate, Edits: []core.Edit{core.SnatEdit}})
	r := core.NewReconciler(core.NewProvider(atRiskDialect(), drv), &core.ReconcilerOptions{ClusterWriter: mem})
	if _, err := r.Reconcile(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	live, _ := mem.Get(context.Background(), cfgKey)
	if !core.SnatEdit.Satisfied(live.Object) || live.GetLabels()["drivertest/touched"] == "" {
		t.Errorf("object = %v: the edit must land on top of the other writer's change", live.Object)
	}
	hc, _, _ := unstructured.NestedSlice(live.Object, "spec", "loadBalancer", "l4Listeners")
	if hc[0].(map[string]any)["healthCheck"] == nil {
		t.Error("a foreign field was dropped")
	}
	if len(mem.Writes()) != 3 {
		t.Errorf("writes = %v, want 2 conflicts then success", mem.Writes())
	}
}

func TestReconcileGivesUpAfterConflictRetries(t *testing.T) {
	mem := drivertest.NewCluster(uobj(cfgKey.APIVersion, cfgKey.Kind, cfgKey.Namespace, cfgKey.Name, nil))
	mem.InjectConflicts(10)
	r := core.NewReconciler(core.NewProvider(atRiskDialect(), testDriver(core.Change{By: core.WriterCluster, Object: &cfgKey, Strategy: core.StrategyUpdate, Edits: []core.Edit{core.SnatEdit}})),
		&core.ReconcilerOptions{ClusterWriter: mem, ConflictRetries: 1})
	if _, err := r.Reconcile(context.Background(), nil, nil); !errors.Is(err, core.ErrConflict) {
		t.Errorf("err = %v, want core.ErrConflict", err)
	}
}

func TestReconcileCreatesFromTemplate(t *testing.T) {
	mem := drivertest.NewCluster()
	tmpl := uobj("", "", "", "", map[string]any{"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/managed-by": "loopguard"}}})
	r := core.NewReconciler(core.NewProvider(atRiskDialect(), testDriver(core.Change{By: core.WriterCluster, Object: &cfgKey, Strategy: core.StrategyUpdate, Create: true, Template: tmpl, Edits: []core.Edit{core.SnatEdit}})), &core.ReconcilerOptions{ClusterWriter: mem})
	if _, err := r.Reconcile(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	live, _ := mem.Get(context.Background(), cfgKey)
	if live == nil || !core.SnatEdit.Satisfied(live.Object) || live.GetLabels()["app.kubernetes.io/managed-by"] != "loopguard" || live.GetKind() != "TkeServiceConfig" {
		t.Errorf("created %v", live)
	}
}

func TestReconcileWaitsForObjectItMustNotCreate(t *testing.T) {
	r := core.NewReconciler(core.NewProvider(atRiskDialect(), testDriver(core.Change{By: core.WriterCluster, Object: &cfgKey, Strategy: core.StrategyUpdate, Edits: []core.Edit{core.SnatEdit}})), &core.ReconcilerOptions{ClusterWriter: drivertest.NewCluster()})
	_, err := r.Reconcile(context.Background(), nil, nil)
	var re *core.RetryError
	if !errors.As(err, &re) || !errors.Is(err, core.ErrRetryLater) {
		t.Errorf("err = %v, want a core.RetryError", err)
	}
}

func TestReconcileRefusesBeforeAnyWrite(t *testing.T) {
	write := core.Change{By: core.WriterCluster, Object: &svcKey, Strategy: core.StrategyApply, Edits: []core.Edit{annEdit}}
	cases := map[string]struct {
		dialect core.FakeDialect
		changes []core.Change
		opts    core.ReconcilerOptions
		kind    error
	}{
		"TentativeDecision": {
			dialect: core.FakeDialect{T: &core.Result{Exposure: *core.ThroughLBExposure(func(e *core.Exposure) { e.Intercept = core.Unknown }), Offers: []core.Offer{core.OfferIntercept}}},
			changes: []core.Change{write}, kind: core.ErrPrecondition,
		},
		"TicketNotGranted": {
			dialect: core.FakeDialect{T: &core.Result{Exposure: *core.ThroughLBExposure(nil), Offers: []core.Offer{core.Unmet(core.OfferSNAT, core.PreconditionAllowlist, "clb-l4-snat")}}},
			changes: []core.Change{write}, opts: core.ReconcilerOptions{Policy: core.Policy{AllowTickets: true}}, kind: core.ErrNotAllowlisted,
		},
		"DisruptiveNotAllowed": {
			dialect: atRiskDialect(),
			changes: []core.Change{write, {By: core.WriterCluster, Object: &svcKey, Strategy: core.StrategyUpdate, Edits: []core.Edit{annEdit}, Disruptive: true}},
			kind:    core.ErrImmutable,
		},
		"BadStrategy": {
			dialect: atRiskDialect(),
			changes: []core.Change{write, {By: core.WriterCluster, Object: &svcKey, Edits: []core.Edit{annEdit}}},
			kind:    core.ErrInvalid,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mem := drivertest.NewCluster(uobj("v1", "Service", "default", "web", nil))
			opts := tc.opts
			opts.ClusterWriter = mem
			r := core.NewReconciler(core.NewProvider(tc.dialect, testDriver(tc.changes...)), &opts)
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
			if len(mem.Writes()) != 0 {
				t.Errorf("writes = %v, want none", mem.Writes())
			}
		})
	}
}

func TestReconcileWithoutWriterPlansButRefusesToApply(t *testing.T) {
	r := core.NewReconciler(core.NewProvider(atRiskDialect(), testDriver(core.Change{By: core.WriterCluster, Object: &svcKey, Strategy: core.StrategyApply, Edits: []core.Edit{annEdit}})), nil)
	p, err := r.Plan(context.Background(), nil, nil)
	if err != nil || p.Blocked != nil || len(p.Changes) != 1 {
		t.Fatalf("offline plan = %+v, %v: a plan without a writer is still a plan", p, err)
	}
	if _, err := r.Apply(context.Background(), p); !errors.Is(err, core.ErrUnsupported) {
		t.Errorf("err = %v", err)
	}
}

func TestReconcileCloudAndUserChanges(t *testing.T) {
	var applied []string
	boom := errors.New("FailedOperation.ResourceInOperating")
	drv := testDriver(
		core.Change{By: core.WriterUser, Field: "podAntiAffinity", To: "required"},
		core.Change{By: core.WriterCloud, Resource: "listener lbl-1", Field: "SnatEnable", To: "true"},
		core.Change{By: core.WriterCloud, Resource: "listener lbl-2", Field: "SnatEnable", To: "true"},
	)
	fail := true
	drv.ApplyCloudFn = func(_ context.Context, ch *core.Change) (core.ApplyResult, error) {
		if ch.Resource == "listener lbl-2" && fail {
			return core.ApplyResult{}, &core.RetryError{After: 0, Msg: "task running", Err: boom}
		}
		applied = append(applied, ch.Resource)
		return core.ApplyResult{Wrote: true}, nil
	}
	r := core.NewReconciler(core.NewProvider(atRiskDialect(), drv), nil)
	out, err := r.Reconcile(context.Background(), nil, nil)
	if !errors.Is(err, core.ErrRetryLater) || !errors.Is(err, boom) {
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
	mem := drivertest.NewCluster(uobj("v1", "Service", "default", "web", nil))
	drv := testDriver(core.Change{By: core.WriterCluster, Object: &svcKey, Strategy: core.StrategyApply, Edits: []core.Edit{annEdit}})
	inner := drv.PlanFn
	ipMode := core.Edit{Path: []core.PathElem{core.PathElem{Field: "status"}, core.PathElem{Field: "loadBalancer"}, core.PathElem{Field: "ingress"}, core.PathElem{Keys: map[string]any{"ip": "10.0.0.9"}}, core.PathElem{Field: "ipMode"}}, Value: "VIP"}
	drv.PlanFn = func(ctx context.Context, req *core.PlanRequest) (*core.Plan, error) {
		p, err := inner(ctx, req)
		if p != nil {
			p.Checks = []core.Check{{Object: svcKey, Edit: ipMode, Pending: "the cloud controller has not reconciled yet"}}
		}
		return p, err
	}
	r := core.NewReconciler(core.NewProvider(atRiskDialect(), drv), &core.ReconcilerOptions{ClusterWriter: mem})
	_, err := r.Reconcile(context.Background(), nil, nil)
	var re *core.RetryError
	if !errors.As(err, &re) || re.After <= 0 {
		t.Fatalf("err = %v, want a core.RetryError with a delay", err)
	}
	live, _ := mem.Get(context.Background(), svcKey)
	_ = unstructured.SetNestedSlice(live.Object, []any{map[string]any{"ip": "10.0.0.9", "ipMode": "VIP"}}, "status", "loadBalancer", "ingress")
	mem.Put(live)
	if _, err := r.Reconcile(context.Background(), nil, nil); err != nil {
		t.Errorf("after the controller caught up: %v", err)
	}
}

// TestPlanEvaluatedPlansFromTheGivenResult: PlanEvaluated hands the driver the caller's result
// (no second evaluation) and blocks the plan as Plan does; without a result it is invalid input.
func TestPlanEvaluatedPlansFromTheGivenResult(t *testing.T) {
	drv := testDriver(core.Change{By: core.WriterCluster, Object: &svcKey, Strategy: core.StrategyApply, Edits: []core.Edit{annEdit}})
	var got *core.Result
	plan := drv.PlanFn
	drv.PlanFn = func(ctx context.Context, req *core.PlanRequest) (*core.Plan, error) {
		got = req.Result
		return plan(ctx, req)
	}
	r := core.NewReconciler(core.NewProvider(atRiskDialect(), drv), nil)
	res, err := core.Evaluate(atRiskDialect(), nil, nil, core.Policy{})
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
		t.Errorf("PlanEvaluated = %+v, core.Plan = %+v", p, want)
	}
	if _, err := r.PlanEvaluated(context.Background(), nil, nil, nil); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("without a result: %v, want invalid input", err)
	}
}
