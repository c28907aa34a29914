package main

import (
	"context"
	"errors"
	"fmt"
	"sort"

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
	var rec *core.Reconciler
	newDialect := in.entry.newDialect
	if in.entry.newProvider != nil {
		prov, err := in.entry.newProvider(pl.env)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s driver: %w", in.entry.name, err)
		}
		drv, _ := prov.Driver()
		// The provider's own dialect evaluates, so the evaluations are the Reconciler's. Every
		// dialect here is safe for concurrent use.
		d := prov.Dialect()
		newDialect = func() core.Dialect { return d }
		opts := &core.ReconcilerOptions{Policy: in.profile.Policy}
		if pl.writer != nil {
			opts.ClusterWriter = pl.writer
		}
		rec = core.NewReconciler(core.NewProvider(d, drv), opts)
	}
	exps := exposures(in.set)
	// The verdicts and the plans see one evaluation per object: the Reconciler plans from the
	// evaluation assess's part made (PlanEvaluated), and evaluating is most of a plan's cost.
	full := evaluateExposures(newDialect, exps, in.cluster, in.profile.Policy, rep, 0, rec != nil)
	rep.finish()
	out := &PlanReport{APIVersion: ReportAPIVersion, Kind: kind, Mode: mode, Plans: make([]ObjectPlan, 0, len(rep.Results)),
		Skipped: rep.Skipped, Errors: rep.Errors, Cluster: rep.Cluster}

	objs := evaluatedByResult(rep.Results, exps, full)
	plans := make([]*core.Plan, 0, len(rep.Results))
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
			ev := objs(i)
			var err error
			if ev.res != nil {
				p, err = rec.PlanEvaluated(ctx, ev.obj, in.cluster, ev.res)
			} else {
				p, err = rec.Plan(ctx, ev.obj, in.cluster)
			}
			if err != nil {
				op.Status, op.Error = StatusFailed, planErrorOf(err)
				if errors.Is(err, core.ErrUnsupported) {
					// A driver that cannot carry out this remedy (the plain dialect's ipMode,
					// which is the CCM's): no failure, as without a driver.
					op.Status = StatusUnsupported
				}
				// The slim verdict has no decision; a failed plan still shows the one made.
				if ev.res != nil {
					op.Decision = decisionOf(&ev.res.Decision)
				}
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

type evaluated struct {
	obj k8sruntime.Object
	res *core.Result
}

// evaluatedByResult finds, for each of the report's results, the object and evaluation it
// came from. The results are the evaluated exposures sorted by object (Report.finish), one per
// object, so sorting the exposures' indices the same way pairs them in order; where that does
// not hold (it always does for a fresh report) it looks them up by object.
func evaluatedByResult(results []Result, exps []*exposure, full []*core.Result) func(int) evaluated {
	order := make([]int32, 0, len(results))
	for i := range exps {
		if full == nil || full[i] != nil {
			order = append(order, int32(i))
		}
	}
	sort.Slice(order, func(a, b int) bool {
		return refLess(refOf(exps[order[a]].obj.Ref()), refOf(exps[order[b]].obj.Ref()))
	})
	at := func(i int32) evaluated {
		ev := evaluated{obj: exps[i].obj.Object}
		if full != nil {
			ev.res = full[i]
		}
		return ev
	}
	paired := len(order) == len(results)
	for k := 0; paired && k < len(order); k++ {
		paired = refOf(exps[order[k]].obj.Ref()) == results[k].Object
	}
	if paired {
		return func(k int) evaluated { return at(order[k]) }
	}
	byRef := make(map[ObjectRef]int32, len(exps))
	for i, e := range exps {
		byRef[refOf(e.obj.Ref())] = int32(i)
	}
	return func(k int) evaluated { return at(byRef[results[k].Object]) }
}
