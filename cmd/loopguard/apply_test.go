package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loopguard/loopguard/core/drivertest"
)

// What apply reports when a write fails or what it wrote does not show yet, without an API
// server: the planner and the Reconciler over an in-memory cluster.

// refusingCluster refuses every server-side apply, as an API server does without RBAC.
type refusingCluster struct{ *drivertest.Cluster }

var errForbidden = errors.New(`services "checkout" is forbidden: User "ci" cannot patch resource "services"`)

func (refusingCluster) Apply(context.Context, *unstructured.Unstructured) error { return errForbidden }

func TestApplyReportsFailedWrites(t *testing.T) {
	t.Chdir(repoRoot)
	o := &assessOptions{files: []string{"examples/manifests"}, output: "json", set: func(string) bool { return false }}
	in, rep, err := o.readManifests()
	if err != nil {
		t.Fatal(err)
	}
	// The cluster holds the example's objects as they are.
	fake := drivertest.NewCluster()
	for _, obj := range in.set.Objects {
		u, err := drivertest.ToUnstructured(obj.Object)
		if err != nil {
			t.Fatal(err)
		}
		fake.Put(u)
	}
	ctx := context.Background()
	pl := &planner{in: in, writer: refusingCluster{fake}}
	prep, rec, plans, err := pl.plan(ctx, rep, ApplyReportKind, "live")
	if err != nil {
		t.Fatal(err)
	}
	apply(ctx, rec, prep, plans)
	prep.finish()
	p := findPlan(t, prep, "Service", "checkout")
	if p.Status != StatusFailed || p.Error == nil || p.Error.Kind != "error" || len(p.Written) != 0 {
		t.Errorf("checkout: status %s, error %+v, written %d; want failed with the API server's refusal", p.Status, p.Error, len(p.Written))
	}
	if prep.exitCode() != exitBlocked || prep.Summary.Failed != 1 {
		t.Errorf("exit %d, summary %+v; want %d with one failure", prep.exitCode(), prep.Summary, exitBlocked)
	}
	if w := fake.Writes(); len(w) != 0 {
		t.Errorf("writes %v", w)
	}
	table := renderString(t, prep)
	for _, want := range []string{"failed: error", "    error (error): Service shop/checkout: ", "cannot patch resource", "Nothing written; 0 blocked, 1 failed, 0 pending (above)."} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
}

func renderString(t *testing.T, rep *PlanReport) string {
	t.Helper()
	var b strings.Builder
	if err := renderPlan(&b, "table", rep); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestApplyReportsPendingChecks(t *testing.T) {
	t.Chdir(repoRoot)
	// VKE Services that do not exist yet: apply creates them with their ip-mode, and the
	// cloud-controller-manager has not published status.loadBalancer.ingress[].ipMode (there
	// is none here): written, not visible yet.
	o := &assessOptions{files: []string{"examples/volcengine"}, output: "json", set: func(string) bool { return false }}
	in, rep, err := o.readManifests()
	if err != nil {
		t.Fatal(err)
	}
	fake := drivertest.NewCluster()
	ctx := context.Background()
	pl := &planner{in: in, writer: fake}
	prep, rec, plans, err := pl.plan(ctx, rep, ApplyReportKind, "live")
	if err != nil {
		t.Fatal(err)
	}
	apply(ctx, rec, prep, plans)
	prep.finish()
	api := findPlan(t, prep, "Service", "api")
	if api.Status != StatusPending || api.Error == nil || api.Error.Kind != "retry-later" || api.Error.RetryAfterSeconds <= 0 || len(api.Written) != 1 {
		t.Errorf("api: status %s, error %+v, written %d; want pending, retry-later, 1 written", api.Status, api.Error, len(api.Written))
	}
	if ledger := findPlan(t, prep, "Service", "ledger"); ledger.Status != StatusBlocked || len(ledger.Written) != 0 {
		t.Errorf("ledger: status %s, written %d; want blocked, nothing written", ledger.Status, len(ledger.Written))
	}
	if prep.exitCode() != exitBlocked || prep.Summary.Pending != 2 || prep.Summary.Written != 2 {
		t.Errorf("exit %d, summary %+v", prep.exitCode(), prep.Summary)
	}
	for _, w := range fake.Writes() {
		if w == "create Service orders/ledger" {
			t.Errorf("a blocked plan was written: %v", fake.Writes())
		}
	}
	table := renderString(t, prep)
	for _, want := range []string{"pending: 1 change written, not visible yet", "    not visible yet (retry-later): Service orders/api: ", "      apply again in 10s or later",
		"    wrote: cluster: Service orders/api: ", "Wrote 2 change(s) to 2 object(s); 1 blocked, 0 failed, 2 pending (above).",
		"Check that the fix held: 'loopguard verify -n orders api reports --expect-fixed'"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
}
