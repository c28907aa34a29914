package main

import (
	"context"
	"errors"
	"fmt"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
)

// planner plans (and, for apply, writes) the exposures that assess evaluated, through the
// cloud's Driver and the core's Reconciler: the same engine a controller embeds.
type planner struct {
	in *inputs
	// writer is nil offline: the driver then takes the input objects as the observed state.
	writer core.ClusterWriter
	env    driverEnv
	// selected limits planning to some objects; nil plans every one.
	selected func(ObjectRef) bool
}

// plan evaluates every exposure (assess's evaluation, so the verdicts, skipped objects and
// input errors are the ones assess reports) and computes a plan for each. It never writes.
func (pl *planner) plan(ctx context.Context, rep *Report, kind, mode string) (*PlanReport, *core.Reconciler, []*core.Plan, error) {
	in := pl.in
	evaluateAll(in.entry.newDialect, in.set, in.cluster, in.profile.Policy, rep, 0)
	rep.finish()
	out := &PlanReport{APIVersion: ReportAPIVersion, Kind: kind, Mode: mode, Plans: []ObjectPlan{},
		Skipped: rep.Skipped, Errors: rep.Errors, Cluster: rep.Cluster}

	var rec *core.Reconciler
	if in.entry.newProvider != nil {
		prov, err := in.entry.newProvider(pl.env)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s driver: %w", in.entry.name, err)
		}
		opts := []core.ReconcilerOption{core.WithPolicy(in.profile.Policy)}
		if pl.writer != nil {
			opts = append(opts, core.WithClusterWriter(pl.writer))
		}
		rec = core.NewReconciler(prov, opts...)
	}

	objs := map[ObjectRef]k8sruntime.Object{}
	for _, e := range exposures(in.set) {
		objs[refOf(e.obj.Ref())] = e.obj.Object
	}
	var plans []*core.Plan
	for i := range rep.Results {
		r := &rep.Results[i]
		if pl.selected != nil && !pl.selected(r.Object) {
			continue
		}
		op := ObjectPlan{Object: r.Object, Location: r.Location, Provider: r.Provider, Risk: r.Risk, Symptom: r.Symptom,
			Decision: r.Decision, Changes: []PlanChange{}, Checks: []PlanCheck{}, Notes: []Reason{}}
		var p *core.Plan
		switch {
		case rec == nil:
			op.Status = StatusUnsupported
			op.Error = &PlanError{Kind: "unsupported", Message: fmt.Sprintf(
				"loopguard has no driver for the %s dialect: it cannot write this remedy; the decision's action says who can", in.entry.name)}
		default:
			var err error
			p, err = rec.Plan(ctx, objs[r.Object], in.cluster)
			if err != nil {
				op.Status, op.Error = StatusFailed, planErrorOf(err)
				p = nil
				break
			}
			op.Decision = decisionOf(&p.Decision)
			op.Status = planStatus(p)
			op.Changes = changesOf(p.Changes)
			op.Checks = checksOf(p.Checks)
			op.Notes = reasonsOf(p.Notes)
			op.Blocked = planErrorOf(p.Blocked.Err())
		}
		out.Plans = append(out.Plans, op)
		plans = append(plans, p)
	}
	return out, rec, plans, nil
}

// apply writes every plan that is not blocked, after all of them were computed: a failure to
// read the cluster for one object leaves nothing half-done for the others. A blocked plan
// writes nothing; the others go ahead, and the exit code says some did not.
func apply(ctx context.Context, rec *core.Reconciler, rep *PlanReport, plans []*core.Plan) {
	for i := range rep.Plans {
		op, p := &rep.Plans[i], plans[i]
		if p == nil || op.Status == StatusBlocked {
			continue
		}
		res, err := rec.Apply(ctx, p)
		if res != nil {
			op.Written = changesOf(res.Written)
			op.ForUser = changesOf(res.ForUser)
		}
		switch {
		case err == nil && len(op.Written) > 0:
			op.Status = StatusApplied
		case err == nil:
			// Already so (another writer got there between plan and apply), or user changes
			// only: the status from planning stands.
			if op.Status == StatusPlanned {
				op.Status = StatusUpToDate
			}
		case errors.Is(err, core.ErrRetryLater):
			// Written but not visible yet (a controller has not acted), or an object to edit
			// not there yet: a later apply converges.
			op.Status, op.Error = StatusPending, planErrorOf(err)
		default:
			op.Status, op.Error = StatusFailed, planErrorOf(err)
		}
	}
}
