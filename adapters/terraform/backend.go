package terraform

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// Spec is a resource's configuration: the object to protect and what the user is willing to
// give up for it.
type Spec struct {
	// Kind is Service (the default), Ingress or Gateway (Gateway API; the Backend's Provider
	// must then be wrapped with providers/gateway.Wrap, and Facts must return the Gateway's
	// GatewayClass and the Service its implementation generated, as adapters/kube's Gather
	// does with gateway.Resources).
	Kind      string
	Namespace string
	Name      string
	// Prefer, AllowTickets and AllowDisruptive are the core.Policy.
	Prefer          string
	AllowTickets    bool
	AllowDisruptive bool
	// Allowlists are capabilities the cloud account has been granted, beyond the profile's.
	Allowlists []string
}

// Ref names the object.
func (s *Spec) Ref() core.ObjectRef {
	return core.ObjectRef{Kind: s.kind(), Namespace: s.Namespace, Name: s.Name}
}

func (s *Spec) kind() string {
	if s.Kind == "" {
		return "Service"
	}
	return s.Kind
}

func (s *Spec) key() core.ObjectKey {
	k := core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: s.Namespace, Name: s.Name}
	switch s.kind() {
	case "Ingress":
		k.APIVersion, k.Kind = "networking.k8s.io/v1", "Ingress"
	case "Gateway":
		k.APIVersion, k.Kind = "gateway.networking.k8s.io/v1", "Gateway"
	}
	return k
}

// ID is the resource's ID: namespace/name for a Service, Kind/namespace/name for an Ingress
// or a Gateway.
func (s *Spec) ID() string {
	if k := s.kind(); k != "Service" {
		return k + "/" + s.Namespace + "/" + s.Name
	}
	return s.Namespace + "/" + s.Name
}

// ParseID reads an ID as ImportState gets it: namespace/name (a Service) or
// Kind/namespace/name (Service, Ingress or Gateway).
func ParseID(id string) (Spec, error) {
	parts := strings.Split(id, "/")
	var s Spec
	switch len(parts) {
	case 2:
		s = Spec{Kind: "Service", Namespace: parts[0], Name: parts[1]}
	case 3:
		s = Spec{Kind: parts[0], Namespace: parts[1], Name: parts[2]}
	default:
		return Spec{}, fmt.Errorf("import ID %q: want namespace/name (a Service) or Ingress/namespace/name", id)
	}
	if s.Kind != "Service" && s.Kind != "Ingress" && s.Kind != "Gateway" {
		return Spec{}, fmt.Errorf("import ID %q: the kind is Service, Ingress or Gateway, not %q", id, s.Kind)
	}
	if s.Namespace == "" || s.Name == "" {
		return Spec{}, fmt.Errorf("import ID %q: want namespace/name, both non-empty", id)
	}
	return s, nil
}

// State is what the resource keeps in Terraform's state. It never holds a credential.
type State struct {
	Spec
	// Remedy and Path are the decision loopguard carried out ("none" when the object needed
	// nothing, or something else already protects it).
	Remedy string
	Path   string
	// Managed is every field loopguard set and that still holds, keyed by where it lives,
	// valued by what loopguard set. Read drops the fields that no longer hold.
	Managed map[string]string
	// LoadBalancer and Listeners are the cloud load balancer and listeners loopguard changed,
	// when it changed any directly.
	LoadBalancer string
	Listeners    []string
}

// Planned is what Plan computed.
type Planned struct {
	// State is what the resource's state will be after apply.
	State State
	// Diff is one line per change apply will make, "who target: field from → to".
	Diff []string
	// RequiresReplace names the attributes whose change needs a new object (a Volcengine
	// Service's ip-mode, which its cloud-controller-manager reads only at creation): Terraform
	// shows them as forcing replacement.
	RequiresReplace []string
	// Plan is loopguard's plan, for hosts that want more than the above.
	Plan *core.Plan
}

// Backend runs a resource's lifecycle against one cloud and one cluster.
type Backend struct {
	// Provider returns the cloud's provider for one object; it may read the cloud first (a
	// Volcengine CLB's facts). Required.
	Provider func(ctx context.Context, obj runtime.Object) (core.Provider, error)
	// Cluster reads and writes the live cluster (adapters/kube's Writer). Required.
	Cluster core.ClusterWriter
	// Facts returns the objects that place the object's clients and backends and give the
	// cloud controllers' versions (Nodes, EndpointSlices, Pods, ConfigMaps, a cloud's custom
	// objects), for the object's namespace; adapters/kube's Gather does. Nil means none.
	Facts func(ctx context.Context, namespace string) ([]runtime.Object, error)
	// Profile holds what the objects do not show (proxy mode, versions, granted allowlists).
	Profile core.ClusterProfile
	// Logger receives the Reconciler's and the drivers' logs; nil discards. Logger(ctx) of
	// this package writes through tflog.
	Logger hclog.Logger
	// CheckTimeout bounds how long apply waits for what others must do after loopguard's
	// writes (the cloud-controller-manager publishing status.loadBalancer.ingress[].ipMode);
	// zero means DefaultCheckTimeout. CheckInterval is how often it looks; zero means
	// DefaultCheckInterval.
	CheckTimeout  time.Duration
	CheckInterval time.Duration
}

// Defaults of Backend.
const (
	DefaultCheckTimeout  = 2 * time.Minute
	DefaultCheckInterval = time.Second
)

// env is what one operation works with.
type env struct {
	obj     runtime.Object
	cluster *core.Cluster
	rec     *core.Reconciler
	prov    core.Provider
	policy  core.Policy
}

func (b *Backend) log() hclog.Logger {
	if b.Logger == nil {
		return hclog.NewNullLogger()
	}
	return b.Logger
}

// prepare reads the object and the facts and builds the Reconciler. A missing object is
// (nil, nil, false): the caller decides whether that is an error (plan, create) or a resource
// gone (read).
func (b *Backend) prepare(ctx context.Context, s *Spec) (*env, Diagnostics, bool) {
	ref := s.Ref()
	if k := s.kind(); k != "Service" && k != "Ingress" && k != "Gateway" {
		return nil, Diagnostics{{Severity: Error, Attribute: AttrKind, Summary: fmt.Sprintf("kind %q: loopguard protects a Service, an Ingress or a Gateway", k)}}, false
	}
	if s.Namespace == "" || s.Name == "" {
		return nil, Diagnostics{{Severity: Error, Attribute: AttrName, Summary: "namespace and name are required"}}, false
	}
	pol, ds := policyOf(s)
	if ds.HasError() {
		return nil, ds, false
	}
	u, err := b.Cluster.Get(ctx, s.key())
	if err != nil {
		return nil, Diagnostics{errorDiagnostic(ref, "read", err, nil)}, false
	}
	if u == nil {
		return nil, nil, false
	}
	var obj runtime.Object = u // a Gateway is read as unstructured (providers/gateway)
	if s.kind() != "Gateway" {
		obj, err = dialect.TypedFromUnstructured(u)
	}
	if err != nil {
		return nil, Diagnostics{errorDiagnostic(ref, "read", err, nil)}, false
	}
	var objs []runtime.Object
	if b.Facts != nil {
		objs, err = b.Facts(ctx, s.Namespace)
		if err != nil {
			return nil, Diagnostics{errorDiagnostic(ref, "read the cluster for", err, nil)}, false
		}
	}
	profile := b.Profile
	profile.Policy = pol
	for _, a := range s.Allowlists {
		if !profile.HasAllowlist(core.Capability(a)) {
			profile.Allowlists = append(slices.Clone(profile.Allowlists), core.Capability(a))
		}
	}
	c, err := core.NewCluster(profile, objs...)
	if err != nil {
		return nil, Diagnostics{errorDiagnostic(ref, "read the cluster for", err, nil)}, false
	}
	prov, err := b.Provider(ctx, obj)
	if err != nil {
		return nil, Diagnostics{errorDiagnostic(ref, "connect to the cloud for", err, nil)}, false
	}
	rec := core.NewReconciler(prov, &core.ReconcilerOptions{ClusterWriter: b.Cluster, Policy: pol, Logger: b.log()})
	return &env{obj: obj, cluster: c, rec: rec, prov: prov, policy: pol}, nil, true
}

func policyOf(s *Spec) (core.Policy, Diagnostics) {
	pref := core.Preference(s.Prefer)
	if fe := pref.Validate(nil); fe != nil {
		return core.Policy{}, Diagnostics{{Severity: Error, Attribute: AttrPrefer, Summary: fmt.Sprintf("prefer %q: %s", s.Prefer, fe.Detail)}}
	}
	return core.Policy{Prefer: pref, AllowTickets: s.AllowTickets, AllowDisruptive: s.AllowDisruptive}, nil
}

func missing(s *Spec) Diagnostic {
	return Diagnostic{Severity: Error, Attribute: AttrName,
		Summary: fmt.Sprintf("%s does not exist", s.Ref()),
		Detail:  fmt.Sprintf("loopguard protects an existing %s: create it first (or fix namespace and name). Nothing was written.", s.kind())}
}

// Plan computes, without writing, what apply will do for spec given the prior state (nil when
// the resource is new), and the state it will leave.
func (b *Backend) Plan(ctx context.Context, spec Spec, prior *State) (*Planned, Diagnostics) {
	e, ds, ok := b.prepare(ctx, &spec)
	if !ok {
		if ds == nil {
			ds = Diagnostics{missing(&spec)}
		}
		return nil, ds
	}
	p, err := e.rec.Plan(ctx, e.obj, e.cluster)
	if errors.Is(err, core.ErrNotExposed) {
		// Not (or no longer) behind a load balancer: nothing can loop, nothing to do.
		p, err = &core.Plan{Object: spec.Ref(), Decision: core.Decision{Remedy: core.RemedyNone}}, nil
	}
	if err != nil {
		return nil, Diagnostics{errorDiagnostic(spec.Ref(), "plan", err, nil)}
	}
	pl := &Planned{Plan: p, State: desired(spec, prior, p)}
	if p.Blocked != nil {
		return pl, Diagnostics{blockerDiagnostic(spec.Ref(), p.Blocked)}
	}
	for i := range p.Changes {
		ch := &p.Changes[i]
		if ch.By == core.WriterCluster || ch.By == core.WriterCloud {
			pl.Diff = append(pl.Diff, ch.String())
		}
		if prior != nil && (ch.Disruptive || ch.CreateOnly) && prior.Path != "" && prior.Path != pl.State.Path {
			pl.RequiresReplace = []string{AttrPath}
		}
	}
	if len(pl.Diff) > 0 {
		ds = append(ds, noteDiagnostics(spec.Ref(), p.Notes)...)
	}
	ds = append(ds, userDiagnostics(spec.Ref(), p.Changes)...)
	b.log().Info("planned", "object", spec.Ref().String(), "remedy", string(p.Decision.Remedy), "changes", len(pl.Diff))
	return pl, ds
}

// desired is the state apply leaves: what the prior state holds plus what the plan sets.
func desired(spec Spec, prior *State, p *core.Plan) State {
	st := State{Spec: spec, Managed: map[string]string{}}
	if prior != nil {
		maps.Copy(st.Managed, prior.Managed)
		st.Remedy, st.Path, st.LoadBalancer, st.Listeners = prior.Remedy, prior.Path, prior.LoadBalancer, slices.Clone(prior.Listeners)
	}
	writes := false
	for i := range p.Changes {
		ch := &p.Changes[i]
		for _, it := range itemsOf(ch) {
			st.Managed[it.key] = it.value
			writes = true
		}
		if ch.By == core.WriterCloud {
			if lb := ch.Params["loadBalancerId"]; lb != "" {
				st.LoadBalancer = lb
			}
			if l := ch.Params["listenerId"]; l != "" && !slices.Contains(st.Listeners, l) {
				st.Listeners = append(st.Listeners, l)
			}
		}
	}
	// The decision loopguard carried out stays the resource's until it writes something else:
	// once a remedy is in place the object no longer loops, and a fresh decision says "none".
	if writes || prior == nil || prior.Remedy == "" {
		st.Remedy, st.Path = string(p.Decision.Remedy), string(p.Decision.Path)
	}
	if st.Remedy == "" {
		st.Remedy = string(core.RemedyNone)
	}
	slices.Sort(st.Listeners)
	return st
}

// Create plans against the live state and applies. On an error after some writes it returns
// the state of what was written, so Terraform keeps it (tainted) and a later apply converges.
func (b *Backend) Create(ctx context.Context, spec Spec) (*State, Diagnostics) {
	return b.apply(ctx, spec, nil)
}

// Update re-plans against the live state (which is how drift is fixed) and applies.
func (b *Backend) Update(ctx context.Context, spec Spec, prior State) (*State, Diagnostics) {
	return b.apply(ctx, spec, &prior)
}

func (b *Backend) apply(ctx context.Context, spec Spec, prior *State) (*State, Diagnostics) {
	pl, ds := b.Plan(ctx, spec, prior)
	if ds.HasError() {
		return nil, ds
	}
	// The plan's warnings were shown when Terraform planned; apply says only what went wrong.
	ds = nil
	var err error
	var written []core.Change
	if !pl.Plan.Empty() {
		o, aerr := b.applyPlan(ctx, spec, pl.Plan)
		err = aerr
		if o != nil {
			written = o.Written
		}
	}
	if err != nil {
		d := errorDiagnostic(spec.Ref(), "apply", err, written)
		if len(written) == 0 {
			if prior != nil {
				return prior, append(ds, d)
			}
			return nil, append(ds, d)
		}
		// What was written is loopguard's now: keep it in the state, so destroy takes it back.
		st := desired(spec, prior, &core.Plan{Decision: pl.Plan.Decision, Changes: written})
		return &st, append(ds, d)
	}
	st := pl.State
	return &st, ds
}

func (b *Backend) applyPlan(ctx context.Context, spec Spec, p *core.Plan) (*core.Outcome, error) {
	e, ds, ok := b.prepare(ctx, &spec)
	if !ok {
		if len(ds) > 0 {
			return nil, errors.New(ds[0].Summary)
		}
		return nil, errors.New(missing(&spec).Summary)
	}
	out, err := e.rec.Apply(ctx, p)
	if errors.Is(err, core.ErrRetryLater) && len(p.Checks) > 0 {
		// Terraform users expect apply to finish the job: wait, with a deadline, for what the
		// plan's checks need from others, then apply once more, which writes nothing already
		// written and verifies again.
		if werr := b.waitChecks(ctx, p); werr == nil {
			again, aerr := e.rec.Apply(ctx, p)
			if again != nil {
				again.Written = append(out.Written, again.Written...)
			}
			out, err = again, aerr
		}
	}
	for _, ch := range out.Written {
		b.log().Info("written", "change", ch.String())
	}
	return out, err
}

// waitChecks polls the plan's checks until they all hold, ctx ends or CheckTimeout passes.
func (b *Backend) waitChecks(ctx context.Context, p *core.Plan) error {
	timeout, every := b.CheckTimeout, b.CheckInterval
	if timeout <= 0 {
		timeout = DefaultCheckTimeout
	}
	if every <= 0 {
		every = DefaultCheckInterval
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		holds := true
		for i := range p.Checks {
			live, err := b.Cluster.Get(ctx, p.Checks[i].Object)
			if err != nil {
				return err
			}
			if live == nil || !p.Checks[i].Holds(live.Object) {
				holds = false
				b.log().Debug("waiting", "check", p.Checks[i].What(), "object", p.Checks[i].Object.String())
				break
			}
		}
		if holds {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Read re-observes what the state says loopguard set and returns the state with only the
// fields that still hold; nil when the object is gone (Terraform then plans to create the
// resource again). It writes nothing.
func (b *Backend) Read(ctx context.Context, prior State) (*State, Diagnostics) {
	e, ds, ok := b.prepare(ctx, &prior.Spec)
	if !ok {
		return nil, ds
	}
	st := prior
	st.Managed = maps.Clone(prior.Managed)
	if st.Managed == nil {
		st.Managed = map[string]string{}
	}
	if len(st.Managed) == 0 {
		return &st, nil
	}
	if prior.Remedy == "" || prior.Remedy == string(core.RemedyNone) {
		// No decision to plan again (an imported protection): what still holds is what
		// loopguard's removal would take back.
		held, ds := b.removable(ctx, e, &prior.Spec)
		if ds.HasError() {
			return nil, ds
		}
		for k := range st.Managed {
			if _, ok := held[k]; !ok {
				b.log().Warn("drift: a field loopguard set no longer holds", "field", k)
				delete(st.Managed, k)
			}
		}
		return &st, nil
	}
	// The driver plans the decision loopguard carried out once more, from the live state: what
	// it would write again is what no longer holds. Deciding afresh would not do: with the
	// remedy in place the object no longer loops, and a fresh decision says "none".
	res, err := core.Evaluate(e.prov.Dialect(), e.obj, e.cluster, e.policy)
	if errors.Is(err, core.ErrNotExposed) {
		return &st, nil
	}
	if err != nil {
		return nil, Diagnostics{errorDiagnostic(prior.Ref(), "read", err, nil)}
	}
	if _, ok := e.prov.Driver(); !ok {
		return &st, nil
	}
	res.Decision = core.Decision{Remedy: core.Remedy(prior.Remedy), Path: core.Path(prior.Path), Why: "the remedy in the Terraform state"}
	// Through the Reconciler, as every host plans: the driver's plan of that decision, with
	// the Reconciler's reader, policy and validation.
	p, err := e.rec.PlanEvaluated(ctx, e.obj, e.cluster, res)
	if err != nil {
		return nil, Diagnostics{errorDiagnostic(prior.Ref(), "read", err, nil)}
	}
	for i := range p.Changes {
		keys, prefixes := changeKeys(&p.Changes[i])
		for _, k := range keys {
			if v, ok := st.Managed[k]; ok {
				b.log().Warn("drift: a field loopguard set no longer holds", "field", k, "set", v, "now", p.Changes[i].From)
				delete(st.Managed, k)
			}
		}
		for _, pre := range prefixes {
			for k := range st.Managed {
				if strings.HasPrefix(k, pre) {
					delete(st.Managed, k)
				}
			}
		}
	}
	return &st, nil
}

// Delete takes back what the state says loopguard set and nothing else: a field someone else
// set, before or since, stays as it is. An object already gone is success.
func (b *Backend) Delete(ctx context.Context, prior State) Diagnostics {
	if len(prior.Managed) == 0 {
		return nil
	}
	e, ds, ok := b.prepare(ctx, &prior.Spec)
	if !ok {
		return ds // gone: nothing left to take back
	}
	p, err := e.rec.PlanRemoval(ctx, e.obj, e.cluster)
	if err != nil {
		return Diagnostics{errorDiagnostic(prior.Ref(), "plan the removal for", err, nil)}
	}
	// The Reconciler's removal takes back, of Kubernetes objects, only what loopguard's field
	// manager owns and the objects loopguard created: that holds after drift too (a
	// TkeServiceConfig loopguard created is deleted even when a field of it drifted and Read
	// dropped it from the state). The cloud records no owner of a load balancer's
	// attributes, so of those only what the state claims is taken back.
	kept := p.Changes[:0]
	for _, ch := range p.Changes {
		if ch.By != core.WriterCloud {
			kept = append(kept, ch)
		} else if c, ok := mine(ch, prior.Managed); ok {
			kept = append(kept, c)
		}
	}
	p.Changes = kept
	if p.Blocked != nil {
		return Diagnostics{blockerDiagnostic(prior.Ref(), p.Blocked)}
	}
	out, err := e.rec.Apply(ctx, p)
	if err != nil {
		var w []core.Change
		if out != nil {
			w = out.Written
		}
		return Diagnostics{errorDiagnostic(prior.Ref(), "remove loopguard's changes from", err, w)}
	}
	for _, ch := range out.Written {
		b.log().Info("taken back", "change", ch.String())
	}
	return nil
}

// Import returns the state of an object whose protection already exists, for ImportState. An
// import claims what loopguard's removal would take back (fields loopguard's field manager
// owns, objects loopguard created, and in a driver's direct mode the load balancer's attributes,
// which the cloud records no owner for: importing is the user's word that they are
// loopguard's), and the decision as it stands now.
func (b *Backend) Import(ctx context.Context, id string) (*State, Diagnostics) {
	spec, err := ParseID(id)
	if err != nil {
		return nil, Diagnostics{{Severity: Error, Summary: err.Error()}}
	}
	e, ds, ok := b.prepare(ctx, &spec)
	if !ok {
		if ds == nil {
			ds = Diagnostics{missing(&spec)}
		}
		return nil, ds
	}
	held, ds := b.removable(ctx, e, &spec)
	if ds.HasError() {
		return nil, ds
	}
	st := State{Spec: spec, Managed: held}
	res, err := core.Evaluate(e.prov.Dialect(), e.obj, e.cluster, e.policy)
	switch {
	case errors.Is(err, core.ErrNotExposed):
		st.Remedy = string(core.RemedyNone)
	case err != nil:
		return nil, Diagnostics{errorDiagnostic(spec.Ref(), "import", err, nil)}
	default:
		st.Remedy, st.Path = string(res.Decision.Remedy), string(res.Decision.Path)
	}
	if st.Remedy == "" {
		st.Remedy = string(core.RemedyNone)
	}
	return &st, nil
}

// removable lists, as state entries, what loopguard's removal would take back now.
func (b *Backend) removable(ctx context.Context, e *env, spec *Spec) (map[string]string, Diagnostics) {
	out := map[string]string{}
	p, err := e.rec.PlanRemoval(ctx, e.obj, e.cluster)
	if err != nil {
		if errors.Is(err, core.ErrUnsupported) {
			return out, nil // a driver that sets nothing it can take back
		}
		return nil, Diagnostics{errorDiagnostic(spec.Ref(), "read", err, nil)}
	}
	for i := range p.Changes {
		ch := &p.Changes[i]
		switch {
		case ch.By == core.WriterCloud:
			out[ch.Resource+": "+ch.Field] = ch.From
		case ch.By == core.WriterCluster && ch.Object != nil && ch.Delete:
			out[objectPrefix(*ch.Object)+createdField] = createdValue
		case ch.By == core.WriterCluster && ch.Object != nil:
			for _, ed := range ch.Edits {
				out[clusterKey(*ch.Object, ed)] = valueString(ed.Value)
			}
		}
	}
	return out, nil
}

// The state entry of an object loopguard created (a TkeServiceConfig), found by an import.
const (
	createdField = "(the object)"
	createdValue = "created by loopguard"
)
