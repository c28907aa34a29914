package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Reconciler is the generic engine: it evaluates an object, asks the cloud's Driver for a plan,
// validates the whole plan, writes it, and verifies by re-observing. Providers only talk to
// their cloud; the Reconciler owns the lifecycle (docs/sources.md#design "Interfaces").
type Reconciler struct {
	provider  Provider
	dialect   Dialect
	driver    Driver // nil when the provider has none
	writer    ClusterWriter
	log       hclog.Logger
	policy    Policy
	conflicts int
	retry     time.Duration
	refusals  *CapabilityCache
	// hostWrites is what the host carries out; nil means every writer (HostWrites).
	hostWrites map[Writer]bool
	// checkOwner asks a dialect.OwnershipChecker driver before any cloud change (OwnershipCheck).
	checkOwner bool
}

// ReconcilerOptions configures a Reconciler, in the manner of hclog.LoggerOptions: the zero
// value (or nil) is a Reconciler that plans offline under the zero Policy and logs nothing.
type ReconcilerOptions struct {
	// ClusterWriter is where cluster changes are written and live objects read. Without it
	// the Reconciler plans offline and refuses plans with cluster changes.
	ClusterWriter ClusterWriter
	// Logger is the logger; nil discards.
	Logger hclog.Logger
	// Policy is the decision policy.
	Policy Policy
	// ConflictRetries is how often an optimistic update is retried after a conflict
	// (0 means 5).
	ConflictRetries int
	// RetryDelay is the delay a RetryError suggests when a check is pending (0 means 10 s).
	RetryDelay time.Duration
	// CapabilityCache remembers the cloud's allowlist refusals for the cache's TTL: a plan
	// that needs a refused capability is blocked with the cloud's answer, before any write,
	// until the refusal expires or is forgotten (CapabilityCache.Forget, once support grants
	// it). Without it every plan trusts the declared allowlists and the cloud's refusal comes
	// back from Apply.
	CapabilityCache *CapabilityCache
	// HostWrites says which changes the host carries out. A cloud-controller-manager writes
	// the cloud and returns the status, but never writes Kubernetes objects: its Reconciler
	// has HostWrites: []Writer{WriterCloud, WriterStatus}, and Apply hands the cluster changes
	// back in Outcome.Elsewhere instead of refusing the plan for want of a ClusterWriter. User
	// changes are always the user's (Outcome.ForUser), status changes always the status
	// owner's (Outcome.ForStatus). Empty means the host carries out every writer.
	HostWrites []Writer
	// OwnershipCheck makes every plan ask a driver that implements dialect.OwnershipChecker whether
	// each cloud change's target belongs to the object, and block the plan when it does not.
	// A host with cloud-wide rights that acts on objects tenants edit (a
	// cloud-controller-manager) sets it, so an annotation naming another Service's load
	// balancer cannot steer its writes.
	OwnershipCheck bool
}

// makes reports whether the host carries out changes of writer w.
func (r *Reconciler) makes(w Writer) bool { return r.hostWrites == nil || r.hostWrites[w] }

// NewReconciler builds a Reconciler for one cloud's Provider; opts may be nil. A provider
// without a driver (Provider.Driver reports false) can still evaluate; its plans are
// ErrUnsupported.
func NewReconciler(p Provider, opts *ReconcilerOptions) *Reconciler {
	var o ReconcilerOptions
	if opts != nil {
		o = *opts
	}
	r := &Reconciler{provider: p, dialect: p.Dialect(), writer: o.ClusterWriter, log: o.Logger,
		policy: o.Policy, conflicts: o.ConflictRetries, retry: o.RetryDelay,
		refusals: o.CapabilityCache, checkOwner: o.OwnershipCheck}
	if r.log == nil {
		r.log = hclog.NewNullLogger()
	}
	if r.conflicts == 0 {
		r.conflicts = 5
	}
	if r.retry == 0 {
		r.retry = 10 * time.Second
	}
	if len(o.HostWrites) > 0 {
		r.hostWrites = make(map[Writer]bool, len(o.HostWrites))
		for _, w := range o.HostWrites {
			r.hostWrites[w] = true
		}
	}
	if drv, ok := p.Driver(); ok {
		r.driver = drv
	}
	r.log = r.log.Named("reconciler")
	return r
}

// Outcome is what Apply did.
type Outcome struct {
	Plan *Plan
	// Written lists the changes that were written; changes already in place are not.
	Written []Change
	// ForUser lists the changes the user has to carry out (By == WriterUser).
	ForUser []Change
	// ForStatus lists the changes to the Service's status the host returns (By ==
	// WriterStatus): a cloud-controller-manager puts them in the LoadBalancerStatus it returns.
	ForStatus []Change
	// Elsewhere lists the changes of writers the host does not carry out (ReconcilerOptions.HostWrites): a
	// cloud-controller-manager writes no Kubernetes object, so a TkeServiceConfig entry or an
	// annotation the decision needs is for someone else (the user, or loopguard's controller).
	Elsewhere []Change
}

// Provider returns the provider the Reconciler was built with.
func (r *Reconciler) Provider() Provider { return r.provider }

func (r *Reconciler) request(obj runtime.Object, c *Cluster, res *Result) *PlanRequest {
	req := &PlanRequest{Object: obj, Cluster: c, Result: res, Policy: r.policy}
	if r.writer != nil {
		req.Reader = r.writer
	}
	return req
}

func (r *Reconciler) noDriver(obj runtime.Object) error {
	ref := ObjectRef{}
	if k, ok := KeyOf(obj); ok {
		ref = ObjectRef{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}
	}
	return &KindError{Kind: ErrUnsupported, Object: ref, Msg: "the " + r.dialect.Name() + " provider has no driver: loopguard cannot carry out its remedies; the decision's action says who can"}
}

// Plan evaluates obj and returns the plan that would make the decision true. It never writes.
func (r *Reconciler) Plan(ctx context.Context, obj runtime.Object, c *Cluster) (*Plan, error) {
	if r.driver == nil {
		return nil, r.noDriver(obj)
	}
	res, err := Evaluate(r.dialect, obj, c, r.policy)
	if err != nil {
		return nil, err
	}
	return r.PlanEvaluated(ctx, obj, c, res)
}

// PlanEvaluated is Plan for an object the caller has already evaluated: res must be what
// Evaluate returned for obj and c with the Reconciler's dialect and policy. A host that shows
// verdicts before it plans (the CLI's plan) or needs the decision itself (a
// cloud-controller-manager publishing the ipMode) evaluates once and plans from that. It never
// writes.
func (r *Reconciler) PlanEvaluated(ctx context.Context, obj runtime.Object, c *Cluster, res *Result) (*Plan, error) {
	if r.driver == nil {
		return nil, r.noDriver(obj)
	}
	if res == nil {
		return nil, &KindError{Kind: ErrInvalid, Msg: "PlanEvaluated needs the object's evaluation (a nil Result)"}
	}
	req := r.request(obj, c, res)
	p, err := r.driver.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	r.finishPlan(ctx, req, p)
	return p, nil
}

// finishPlan blocks a plan on a remembered refusal or on what validation finds.
func (r *Reconciler) finishPlan(ctx context.Context, req *PlanRequest, p *Plan) {
	r.checkOwnership(ctx, req, p)
	if p.Blocked == nil && r.refusals != nil {
		for i := range p.Changes {
			for _, c := range p.Changes[i].Needs {
				if refusal, ok := r.refusals.Refused(c); ok {
					p.Block(refusal)
				}
			}
		}
	}
	if p.Blocked == nil {
		p.Block(r.validate(p, false))
	}
}

// checkOwnership blocks p when the driver says a cloud change's target is not req.Object's
// (OwnershipCheck). A check that fails to run blocks too: nothing is written to a load
// balancer whose owner is not known.
func (r *Reconciler) checkOwnership(ctx context.Context, req *PlanRequest, p *Plan) {
	oc, ok := r.driver.(ownershipChecker)
	if !r.checkOwner || !ok || p.Blocked != nil {
		return
	}
	for i := range p.Changes {
		if ch := &p.Changes[i]; ch.By == WriterCloud {
			if err := oc.CheckOwnership(ctx, req, ch); err != nil {
				p.Block(err)
				return
			}
		}
	}
}

// Remove plans and applies the undoing of what loopguard set for obj: the annotation it added,
// the TkeServiceConfig entries it set or the config it created, listener attributes it turned
// on in direct mode. What others set, or changed since, is left as it is. obj need not be a
// load-balancer exposure any more (a Service turned into ClusterIP, or being deleted).
func (r *Reconciler) Remove(ctx context.Context, obj runtime.Object, c *Cluster) (*Outcome, error) {
	p, err := r.PlanRemoval(ctx, obj, c)
	if err != nil {
		return nil, err
	}
	return r.Apply(ctx, p)
}

// PlanRemoval returns the plan Remove would apply, validated, and writes nothing. A host that
// knows which of loopguard's changes it made itself (a Terraform resource keeps them in its
// state) can drop the others from the plan before it hands the plan to Apply.
func (r *Reconciler) PlanRemoval(ctx context.Context, obj runtime.Object, c *Cluster) (*Plan, error) {
	if r.driver == nil {
		return nil, r.noDriver(obj)
	}
	rem, ok := r.driver.(remover)
	if !ok {
		return nil, &KindError{Kind: ErrUnsupported, Msg: "the " + r.dialect.Name() + " driver cannot undo what it sets"}
	}
	res, err := Evaluate(r.dialect, obj, c, r.policy)
	if err != nil && !errors.Is(err, ErrNotExposed) && !errors.Is(err, ErrInvalid) {
		return nil, err
	}
	if err != nil {
		res = nil
	}
	req := r.request(obj, c, res)
	p, err := rem.PlanRemoval(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := r.pruneRemovals(ctx, p); err != nil {
		return nil, err
	}
	r.checkOwnership(ctx, req, p)
	if p.Blocked == nil {
		p.Block(r.validate(p, false))
	}
	return p, nil
}

// pruneRemovals drops from a removal plan the cluster edits that would take nothing back: the
// leaf holds another value now, or another field manager owns it. So a second Remove writes
// nothing, and the Outcome lists only what was really loopguard's.
func (r *Reconciler) pruneRemovals(ctx context.Context, p *Plan) error {
	if r.writer == nil {
		return nil
	}
	kept := p.Changes[:0]
	for _, ch := range p.Changes {
		if ch.By != WriterCluster || !removes(ch.Edits) {
			kept = append(kept, ch)
			continue
		}
		live, err := r.writer.Get(ctx, *ch.Object)
		if err != nil {
			return err
		}
		if live == nil {
			continue
		}
		var edits []Edit
		for _, e := range ownedRemovals(live, ch.Edits) {
			if !e.Satisfied(live.Object) {
				edits = append(edits, e)
			}
		}
		if len(edits) > 0 {
			ch.Edits = edits
			kept = append(kept, ch)
		}
	}
	p.Changes = kept
	return nil
}

// validate checks a whole plan before anything is written. Whether a cluster writer is
// configured matters only to apply: an offline plan is still a valid plan.
func (r *Reconciler) validate(p *Plan, applying bool) error {
	d := &p.Decision
	if p.Empty() {
		return nil
	}
	if d.Tentative && !p.Removal && d.Reason.Code == CodeDecideFailsLeast {
		return &KindError{Kind: ErrPrecondition, Object: p.Object, Reason: d.Reason, Msg: "the recommendation is tentative; confirm what it names before applying (" + d.Why + ")"}
	}
	if d.Tentative && !p.Removal {
		return &KindError{Kind: ErrPrecondition, Object: p.Object, Msg: "the risk is unknown; declare the missing facts before applying (" + d.Why + ")"}
	}
	if len(d.Tickets) > 0 && !p.Removal {
		ask := string(d.Tickets[0])
		if a, ok := r.driver.(asker); ok && a.Ask(d.Tickets[0]) != "" {
			ask = a.Ask(d.Tickets[0])
		}
		return &AllowlistError{Object: p.Object, Capability: d.Tickets[0], Ask: ask}
	}
	for i := range p.Changes {
		ch := &p.Changes[i]
		if ch.Disruptive && !r.policy.AllowDisruptive {
			return &KindError{Kind: ErrImmutable, Object: p.Object, Msg: "the plan replaces an object (" + ch.String() + "); allow disruptive changes to apply it"}
		}
		if ch.By == WriterCluster && r.makes(WriterCluster) {
			if applying && r.writer == nil {
				return &KindError{Kind: ErrUnsupported, Object: p.Object, Msg: "the plan writes Kubernetes objects but no cluster writer is configured"}
			}
			if ch.Object == nil || (len(ch.Edits) == 0 && !ch.Create && !ch.Delete) {
				return &KindError{Kind: ErrInvalid, Object: p.Object, Msg: "driver produced a cluster change without an object or edits: " + ch.String()}
			}
			if ch.Strategy != StrategyApply && ch.Strategy != StrategyUpdate {
				return &KindError{Kind: ErrInvalid, Object: p.Object, Msg: fmt.Sprintf("driver produced a cluster change with strategy %q", ch.Strategy)}
			}
			if ch.CreateOnly && !ch.Create {
				return &KindError{Kind: ErrInvalid, Object: p.Object, Msg: "driver produced a create-only change that does not create: " + ch.String()}
			}
		}
	}
	return nil
}

// Reconcile plans and applies.
func (r *Reconciler) Reconcile(ctx context.Context, obj runtime.Object, c *Cluster) (*Outcome, error) {
	p, err := r.Plan(ctx, obj, c)
	if err != nil {
		return nil, err
	}
	return r.Apply(ctx, p)
}

// Apply writes a validated plan, then verifies it by re-reading. Each change is idempotent, so
// after a failure a new Plan and Apply converge from wherever the last one stopped.
func (r *Reconciler) Apply(ctx context.Context, p *Plan) (*Outcome, error) {
	out := &Outcome{Plan: p}
	if p.Blocked != nil {
		return out, p.Blocked.Err()
	}
	if err := r.validate(p, true); err != nil {
		return out, err
	}
	log := r.log.With("object", p.Object.String(), "remedy", string(p.Decision.Remedy))
	for i := range p.Changes {
		ch := &p.Changes[i]
		var wrote bool
		var err error
		switch ch.By {
		case WriterUser:
			out.ForUser = append(out.ForUser, *ch)
			continue
		case WriterStatus:
			out.ForStatus = append(out.ForStatus, *ch)
			continue
		}
		if !r.makes(ch.By) {
			out.Elsewhere = append(out.Elsewhere, *ch)
			continue
		}
		switch ch.By {
		case WriterCluster:
			wrote, err = r.applyCluster(ctx, ch)
		case WriterCloud:
			var res ApplyResult
			res, err = r.driver.ApplyCloud(ctx, ch)
			wrote = res.Wrote
			var refusal *AllowlistError
			if r.refusals != nil && errors.As(err, &refusal) && refusal.Err != nil {
				// Only the cloud's own refusal is remembered, not a declaration missing.
				r.refusals.Remember(refusal)
			}
		default:
			err = &KindError{Kind: ErrInvalid, Object: p.Object, Msg: fmt.Sprintf("unknown writer %q", ch.By)}
		}
		if err != nil {
			log.Warn("change failed", "change", ch.String(), "error", err)
			return out, fmt.Errorf("%s: %s: %w", p.Object, ch.String(), err)
		}
		if wrote {
			log.Info("change written", "change", ch.String())
			out.Written = append(out.Written, *ch)
		}
	}
	return out, r.verify(ctx, p)
}

func (r *Reconciler) applyCluster(ctx context.Context, ch *Change) (bool, error) {
	for attempt := 0; ; attempt++ {
		wrote, err := r.writeOnce(ctx, ch)
		if errors.Is(err, ErrConflict) && attempt < r.conflicts {
			// Someone wrote in between: re-read and make the edits again.
			continue
		}
		return wrote, err
	}
}

// writeOnce reads the object, makes the edits and writes it if anything changed.
func (r *Reconciler) writeOnce(ctx context.Context, ch *Change) (bool, error) {
	live, err := r.writer.Get(ctx, *ch.Object)
	if err != nil {
		return false, err
	}
	if ch.Delete {
		if live == nil {
			return false, nil // already gone
		}
		return true, r.writer.Delete(ctx, live)
	}
	if live == nil {
		if removes(ch.Edits) {
			return false, nil // nothing left to take back
		}
		if !ch.Create {
			return false, &RetryError{After: r.retry, Msg: ch.Object.String() + " does not exist yet"}
		}
		obj := newObject(ch)
		if _, err := applyEdits(obj.Object, ch.Edits); err != nil {
			return false, err
		}
		return true, r.writer.Create(ctx, obj)
	}
	if ch.CreateOnly {
		for _, e := range ch.Edits {
			if !e.Satisfied(live.Object) {
				return false, &KindError{Kind: ErrImmutable, Object: ObjectRef{Kind: ch.Object.Kind, Namespace: ch.Object.Namespace, Name: ch.Object.Name},
					Msg: fmt.Sprintf("it already exists and %s can only be set when it is created", e)}
			}
		}
		return false, nil
	}
	edits := ch.Edits
	if removes(edits) {
		// Take back only leaves loopguard still owns: a value another manager set since (or
		// set too) is theirs now.
		edits = ownedRemovals(live, edits)
	}
	obj := live.DeepCopy()
	changed, err := applyEdits(obj.Object, edits)
	if err != nil || !changed {
		return false, err
	}
	if ch.Strategy == StrategyApply && !removes(edits) {
		partial := newObject(&Change{Object: ch.Object})
		if _, err := applyEdits(partial.Object, edits); err != nil {
			return false, err
		}
		return true, r.writer.Apply(ctx, partial)
	}
	// Removals are written as an update with the resourceVersion read: a server-side apply
	// can only drop loopguard's claim on a field, not a value that others share.
	return true, r.writer.Update(ctx, obj)
}

func removes(edits []Edit) bool {
	for _, e := range edits {
		if e.Remove {
			return true
		}
	}
	return false
}

func newObject(ch *Change) *unstructured.Unstructured {
	if ch.Template != nil {
		obj := ch.Template.DeepCopy()
		obj.SetAPIVersion(ch.Object.APIVersion)
		obj.SetKind(ch.Object.Kind)
		obj.SetNamespace(ch.Object.Namespace)
		obj.SetName(ch.Object.Name)
		return obj
	}
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetAPIVersion(ch.Object.APIVersion)
	obj.SetKind(ch.Object.Kind)
	obj.SetNamespace(ch.Object.Namespace)
	obj.SetName(ch.Object.Name)
	return obj
}

func applyEdits(obj map[string]any, edits []Edit) (bool, error) {
	// Check every edit first so that a shape conflict leaves the object untouched.
	for _, e := range edits {
		if err := e.check(obj); err != nil {
			return false, &KindError{Kind: ErrConflict, Msg: "a field loopguard must set holds a value of another shape", Err: err}
		}
	}
	changed := false
	for _, e := range edits {
		c, err := e.ApplyTo(obj)
		if err != nil {
			return false, err
		}
		changed = changed || c
	}
	return changed, nil
}

// verify re-reads what the plan promised. Checks that do not hold yet are a RetryError: the
// change is written but a controller has not acted on it.
func (r *Reconciler) verify(ctx context.Context, p *Plan) error {
	if r.writer == nil {
		return nil
	}
	for _, chk := range p.Checks {
		live, err := r.writer.Get(ctx, chk.Object)
		if err != nil {
			return err
		}
		if live == nil || !chk.Holds(live.Object) {
			return &RetryError{After: r.retry, Msg: fmt.Sprintf("%s: %s not yet %v: %s", chk.Object, chk.What(), chk.Edit.Value, chk.Pending)}
		}
	}
	for i := range p.Changes {
		ch := &p.Changes[i]
		if ch.By != WriterCluster || !r.makes(WriterCluster) {
			continue
		}
		live, err := r.writer.Get(ctx, *ch.Object)
		if err != nil {
			return err
		}
		if ch.Delete || removes(ch.Edits) {
			continue // a removal is verified by the next plan, which finds nothing of loopguard's
		}
		for _, e := range ch.Edits {
			if live == nil || !e.Satisfied(live.Object) {
				return &KindError{Kind: ErrConflict, Object: p.Object, Msg: fmt.Sprintf("%s: %s did not stick after writing (another controller may be reverting it)", ch.Object, e)}
			}
		}
	}
	return nil
}

// KeyOf returns the ObjectKey of a typed Service or Ingress.
func KeyOf(obj runtime.Object) (ObjectKey, bool) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return ObjectKey{}, false
	}
	switch obj.(type) {
	case *corev1.Service:
		return ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: m.GetNamespace(), Name: m.GetName()}, true
	case *networkingv1.Ingress:
		return ObjectKey{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Namespace: m.GetNamespace(), Name: m.GetName()}, true
	}
	return ObjectKey{}, false
}
