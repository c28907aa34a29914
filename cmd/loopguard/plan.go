package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

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
		// The verdicts and the plans see one translation per object: the Reconciler
		// evaluates again what assess's evaluation just translated, and translating is most
		// of an evaluation's cost.
		drv, _ := prov.Driver()
		memo := &memoDialect{Dialect: prov.Dialect()}
		newDialect = func() core.Dialect { return memo }
		opts := []core.ReconcilerOption{core.WithPolicy(in.profile.Policy)}
		if pl.writer != nil {
			opts = append(opts, core.WithClusterWriter(pl.writer))
		}
		rec = core.NewReconciler(core.NewProvider(memo, drv), opts...)
	}
	exps := exposures(in.set)
	evaluateExposures(newDialect, exps, in.cluster, in.profile.Policy, rep, 0, rec != nil)
	rep.finish()
	out := &PlanReport{APIVersion: ReportAPIVersion, Kind: kind, Mode: mode, Plans: make([]ObjectPlan, 0, len(rep.Results)),
		Skipped: rep.Skipped, Errors: rep.Errors, Cluster: rep.Cluster}

	objs := map[ObjectRef]k8sruntime.Object{}
	for _, e := range exps {
		objs[refOf(e.obj.Ref())] = e.obj.Object
	}
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
			var err error
			p, err = rec.Plan(ctx, objs[r.Object], in.cluster)
			if err != nil {
				op.Status, op.Error = StatusFailed, planErrorOf(err)
				// The slim verdict has no decision; a failed plan still shows the one made.
				if res, e := core.Evaluate(newDialect(), objs[r.Object], in.cluster, in.profile.Policy); e == nil {
					op.Decision = decisionOf(&res.Decision)
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

// memoDialect remembers each object's translation for one command run: the objects and the
// cluster do not change between assess's evaluation and the Reconciler's. It is safe for
// concurrent use when the dialect it wraps is (every dialect here is).
type memoDialect struct {
	core.Dialect
	seen sync.Map // k8sruntime.Object → memoEntry
}

type memoEntry struct {
	t   *core.Translation
	err error
}

func (m *memoDialect) Translate(obj k8sruntime.Object, c *core.Cluster) (*core.Translation, error) {
	if e, ok := m.seen.Load(obj); ok {
		me := e.(memoEntry)
		return me.t, me.err
	}
	t, err := m.Dialect.Translate(obj, c)
	m.seen.Store(obj, memoEntry{t, err})
	return t, err
}
