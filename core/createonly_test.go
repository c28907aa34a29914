package core

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ipModeEach is the check a driver writes for status.loadBalancer.ingress[*].ipMode.
func ipModeEach(mode string) Check {
	return Check{Object: svcKey, Each: []PathElem{PathElem{Field: "status"}, PathElem{Field: "loadBalancer"}, PathElem{Field: "ingress"}},
		Edit: Edit{Path: []PathElem{PathElem{Field: "ipMode"}}, Value: mode}, Pending: "the cloud controller has not set it yet"}
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
	plain := Check{Edit: annEdit}
	if plain.What() != annEdit.String() || !plain.Holds(map[string]any{"metadata": map[string]any{"annotations": map[string]any{"example.com/intercept": "true"}}}) {
		t.Error("a check without Each must behave as before")
	}
}

func TestReconcileCheckEachRetriesUntilEveryEntryHolds(t *testing.T) {
	mem := newMemCluster(uobj("v1", "Service", "default", "web", nil))
	drv := funcDriver{PlanFn: func(ctx context.Context, req *PlanRequest) (*Plan, error) {
		return &Plan{Object: req.Result.Exposure.Object, Decision: req.Result.Decision, Checks: []Check{ipModeEach("Proxy")}}, nil
	}}
	r := NewReconciler(NewProvider(atRiskDialect(), drv), WithClusterWriter(mem))
	setIngress := func(entries ...any) {
		live, _ := mem.Get(context.Background(), svcKey)
		_ = unstructured.SetNestedSlice(live.Object, entries, "status", "loadBalancer", "ingress")
		mem.put(live)
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
		var re *RetryError
		if step.pending {
			if !errors.As(err, &re) || !strings.Contains(err.Error(), "status.loadBalancer.ingress[*].ipMode not yet Proxy") {
				t.Errorf("ingress %v: err = %v, want a RetryError naming the field", step.entries, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ingress %v: err = %v, want none", step.entries, err)
		}
	}
}

func TestReconcileCreateOnly(t *testing.T) {
	mode := Edit{Path: []PathElem{PathElem{Field: "metadata"}, PathElem{Field: "annotations"}, PathElem{Field: "example.com/mode"}}, Value: "Proxy"}
	change := Change{By: WriterCluster, Object: &svcKey, Strategy: StrategyApply, Create: true, CreateOnly: true,
		Template: uobj("", "", "", "", map[string]any{"spec": map[string]any{"type": "LoadBalancer"}}), Edits: []Edit{mode}}
	plan := func() funcDriver {
		return funcDriver{PlanFn: func(ctx context.Context, req *PlanRequest) (*Plan, error) {
			return &Plan{Object: req.Result.Exposure.Object, Decision: req.Result.Decision, Changes: []Change{change}}, nil
		}}
	}

	t.Run("creates, then writes nothing", func(t *testing.T) {
		mem := newMemCluster()
		r := NewReconciler(NewProvider(atRiskDialect(), plan()), WithClusterWriter(mem))
		out, err := r.Reconcile(context.Background(), nil, nil)
		if err != nil || len(out.Written) != 1 {
			t.Fatalf("first run: %v, written %v", err, out.Written)
		}
		out, err = r.Reconcile(context.Background(), nil, nil)
		if err != nil || len(out.Written) != 0 || len(mem.writes) != 1 {
			t.Errorf("second run: %v, written %v, writes %v", err, out.Written, mem.writes)
		}
	})
	t.Run("never edits an existing object", func(t *testing.T) {
		mem := newMemCluster(uobj("v1", "Service", "default", "web", map[string]any{"spec": map[string]any{"type": "LoadBalancer"}}))
		r := NewReconciler(NewProvider(atRiskDialect(), plan()), WithClusterWriter(mem))
		_, err := r.Reconcile(context.Background(), nil, nil)
		if !errors.Is(err, ErrImmutable) || !strings.Contains(err.Error(), "can only be set when it is created") {
			t.Errorf("err = %v, want ErrImmutable", err)
		}
		if len(mem.writes) != 0 {
			t.Errorf("writes = %v, want none", mem.writes)
		}
	})
	t.Run("must create", func(t *testing.T) {
		bad := change
		bad.Create = false
		drv := funcDriver{PlanFn: func(ctx context.Context, req *PlanRequest) (*Plan, error) {
			return &Plan{Object: req.Result.Exposure.Object, Changes: []Change{bad}}, nil
		}}
		r := NewReconciler(NewProvider(atRiskDialect(), drv), WithClusterWriter(newMemCluster()))
		p, err := r.Plan(context.Background(), nil, nil)
		if err != nil || !errors.Is(p.Blocked.Err(), ErrInvalid) {
			t.Errorf("blocked = %v, %v; want ErrInvalid", p.Blocked, err)
		}
	})
}
