package core_test

import (
	"context"
	"errors"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/drivertest"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ipModeEach is the check a driver writes for status.loadBalancer.ingress[*].ipMode.
func ipModeEach(mode string) core.Check {
	return core.Check{Object: svcKey, Each: []core.PathElem{core.PathElem{Field: "status"}, core.PathElem{Field: "loadBalancer"}, core.PathElem{Field: "ingress"}},
		Edit: core.Edit{Path: []core.PathElem{core.PathElem{Field: "ipMode"}}, Value: mode}, Pending: "the cloud controller has not set it yet"}
}

func TestCheckEachHoldsOnEveryElement(t *testing.T) {
	ingress := func(entries ...any) map[string]any {
		return map[string]any{"status": map[string]any{"loadBalancer": map[string]any{"ingress": entries}}}
	}
	entry := func(ip, mode string) any {
		m := map[string]any{"ip": ip}
		if mode != "" {
			m["ipMode"] = mode
		}
		return m
	}
	tests := map[string]struct {
		obj  map[string]any
		want bool
	}{
		"no status":       {obj: map[string]any{}, want: false},
		"empty list":      {obj: ingress(), want: false},
		"one match":       {obj: ingress(entry("10.0.0.1", "Proxy")), want: true},
		"all match":       {obj: ingress(entry("10.0.0.1", "Proxy"), entry("10.0.0.2", "Proxy")), want: true},
		"one differs":     {obj: ingress(entry("10.0.0.1", "Proxy"), entry("10.0.0.2", "VIP")), want: false},
		"one without":     {obj: ingress(entry("10.0.0.1", "Proxy"), entry("10.0.0.2", "")), want: false},
		"not a list":      {obj: map[string]any{"status": map[string]any{"loadBalancer": map[string]any{"ingress": "x"}}}, want: false},
		"element not map": {obj: ingress("10.0.0.1"), want: false},
	}
	chk := ipModeEach("Proxy")
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := chk.Holds(tc.obj); got != tc.want {
				t.Errorf("Holds = %v, want %v", got, tc.want)
			}
		})
	}
	if got := chk.What(); got != "status.loadBalancer.ingress[*].ipMode" {
		t.Errorf("What = %q", got)
	}
	plain := core.Check{Edit: annEdit}
	if plain.What() != annEdit.String() || !plain.Holds(map[string]any{"metadata": map[string]any{"annotations": map[string]any{"example.com/intercept": "true"}}}) {
		t.Error("a check without Each must behave as before")
	}
}

func TestReconcileCheckEachRetriesUntilEveryEntryHolds(t *testing.T) {
	mem := drivertest.NewCluster(uobj("v1", "Service", "default", "web", nil))
	drv := drivertest.DriverFuncs{PlanFn: func(ctx context.Context, req *core.PlanRequest) (*core.Plan, error) {
		return &core.Plan{Object: req.Result.Exposure.Object, Decision: req.Result.Decision, Checks: []core.Check{ipModeEach("Proxy")}}, nil
	}}
	r := core.NewReconciler(core.NewProvider(atRiskDialect(), drv), &core.ReconcilerOptions{ClusterWriter: mem})
	setIngress := func(entries ...any) {
		live, _ := mem.Get(context.Background(), svcKey)
		_ = unstructured.SetNestedSlice(live.Object, entries, "status", "loadBalancer", "ingress")
		mem.Put(live)
	}
	for _, step := range []struct {
		entries []any
		pending bool
	}{
		{nil, true},
		{[]any{map[string]any{"ip": "10.0.0.1", "ipMode": "VIP"}}, true},
		{[]any{map[string]any{"ip": "10.0.0.1", "ipMode": "Proxy"}, map[string]any{"ip": "10.0.0.2", "ipMode": "VIP"}}, true},
		{[]any{map[string]any{"ip": "10.0.0.1", "ipMode": "Proxy"}, map[string]any{"ip": "10.0.0.2", "ipMode": "Proxy"}}, false},
	} {
		if step.entries != nil {
			setIngress(step.entries...)
		}
		_, err := r.Reconcile(context.Background(), nil, nil)
		var re *core.RetryError
		if step.pending {
			if !errors.As(err, &re) || !strings.Contains(err.Error(), "status.loadBalancer.ingress[*].ipMode not yet Proxy") {
				t.Errorf("ingress %v: err = %v, want a core.RetryError naming the field", step.entries, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ingress %v: err = %v, want none", step.entries, err)
		}
	}
}

func TestReconcileCreateOnly(t *testing.T) {
	mode := core.Edit{Path: []core.PathElem{core.PathElem{Field: "metadata"}, core.PathElem{Field: "annotations"}, core.PathElem{Field: "example.com/mode"}}, Value: "Proxy"}
	change := core.Change{By: core.WriterCluster, Object: &svcKey, Strategy: core.StrategyApply, Create: true, CreateOnly: true,
		Template: uobj("", "", "", "", map[string]any{"spec": map[string]any{"type": "LoadBalancer"}}), Edits: []core.Edit{mode}}
	plan := func() drivertest.DriverFuncs {
		return drivertest.DriverFuncs{PlanFn: func(ctx context.Context, req *core.PlanRequest) (*core.Plan, error) {
			return &core.Plan{Object: req.Result.Exposure.Object, Decision: req.Result.Decision, Changes: []core.Change{change}}, nil
		}}
	}

	t.Run("creates, then writes nothing", func(t *testing.T) {
		mem := drivertest.NewCluster()
		r := core.NewReconciler(core.NewProvider(atRiskDialect(), plan()), &core.ReconcilerOptions{ClusterWriter: mem})
		out, err := r.Reconcile(context.Background(), nil, nil)
		if err != nil || len(out.Written) != 1 {
			t.Fatalf("first run: %v, written %v", err, out.Written)
		}
		out, err = r.Reconcile(context.Background(), nil, nil)
		if err != nil || len(out.Written) != 0 || len(mem.Writes()) != 1 {
			t.Errorf("second run: %v, written %v, writes %v", err, out.Written, mem.Writes())
		}
	})
	t.Run("never edits an existing object", func(t *testing.T) {
		mem := drivertest.NewCluster(uobj("v1", "Service", "default", "web", map[string]any{"spec": map[string]any{"type": "LoadBalancer"}}))
		r := core.NewReconciler(core.NewProvider(atRiskDialect(), plan()), &core.ReconcilerOptions{ClusterWriter: mem})
		_, err := r.Reconcile(context.Background(), nil, nil)
		if !errors.Is(err, core.ErrImmutable) || !strings.Contains(err.Error(), "can only be set when it is created") {
			t.Errorf("err = %v, want core.ErrImmutable", err)
		}
		if len(mem.Writes()) != 0 {
			t.Errorf("writes = %v, want none", mem.Writes())
		}
	})
	t.Run("must create", func(t *testing.T) {
		bad := change
		bad.Create = false
		drv := drivertest.DriverFuncs{PlanFn: func(ctx context.Context, req *core.PlanRequest) (*core.Plan, error) {
			return &core.Plan{Object: req.Result.Exposure.Object, Changes: []core.Change{bad}}, nil
		}}
		r := core.NewReconciler(core.NewProvider(atRiskDialect(), drv), &core.ReconcilerOptions{ClusterWriter: drivertest.NewCluster()})
		p, err := r.Plan(context.Background(), nil, nil)
		if err != nil || !errors.Is(p.Blocked.Err(), core.ErrInvalid) {
			t.Errorf("blocked = %v, %v; want core.ErrInvalid", p.Blocked, err)
		}
	})
}
