package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// Provider is a cloud's core.Provider with the Gateway layer around it.
type Provider struct {
	inner   core.Provider
	dialect *Dialect
	driver  *Driver
}

var _ core.Provider = (*Provider)(nil)

// Wrap returns p with the Gateway layer: its dialect reads Gateways, its driver (when p has
// one) plans a Gateway's remedies where the implementation copies them from. opts may be nil.
func Wrap(p core.Provider, opts *Options) *Provider {
	w := &Provider{inner: p, dialect: NewDialect(p.Dialect(), opts)}
	if drv, ok := p.Driver(); ok && drv != nil {
		w.driver = &Driver{inner: drv, dialect: w.dialect}
	}
	return w
}

// Name is the wrapped provider's.
func (p *Provider) Name() string { return p.inner.Name() }

// Dialect reads Gateways, and everything else as the wrapped dialect does.
func (p *Provider) Dialect() core.Dialect { return p.dialect }

// Driver is the wrapped driver with Gateway planning; false when the wrapped provider has none.
func (p *Provider) Driver() (core.Driver, bool) {
	if p.driver == nil {
		return nil, false
	}
	return p.driver, true
}

// Driver plans through the wrapped driver and moves every change it plans on a generated
// Service to where the Gateway's implementation copies it from.
type Driver struct {
	inner   core.Driver
	dialect *Dialect
}

var _ core.Driver = (*Driver)(nil)

// ApplyCloud is the wrapped driver's: cloud changes do not go through the Service.
func (d *Driver) ApplyCloud(ctx context.Context, ch *core.Change) (core.ApplyResult, error) {
	return d.inner.ApplyCloud(ctx, ch)
}

// Plan plans a Gateway (or a Service a Gateway's implementation generated) through the wrapped
// driver, then rewrites the plan so that nothing is written on the generated Service.
func (d *Driver) Plan(ctx context.Context, req *core.PlanRequest) (*core.Plan, error) {
	if req == nil || req.Object == nil || req.Result == nil {
		return d.inner.Plan(ctx, req)
	}
	v, ok, err := d.viewFor(req)
	if err != nil {
		return nil, err
	}
	if !ok {
		return d.inner.Plan(ctx, req)
	}
	inner := *req
	inner.Object = withGatewayAnnotations(v.svc, v.gw)
	res, err := d.serviceResult(req, inner.Object, v)
	if err != nil {
		return nil, err
	}
	inner.Result = res
	p, err := d.inner.Plan(ctx, &inner)
	if err != nil {
		return nil, err
	}
	return d.rewrite(v, p, req.Result.Exposure.Object), nil
}

var _ dialect.Remover = (*Driver)(nil)

// PlanRemoval plans through the wrapped driver what loopguard set for the Gateway's Service and
// takes it back where it was written: the Gateway's spec.infrastructure (or the
// implementation's own resource), never the generated Service. The Reconciler then keeps only
// the leaves loopguard's field manager owns there.
func (d *Driver) PlanRemoval(ctx context.Context, req *core.PlanRequest) (*core.Plan, error) {
	rem, ok := d.inner.(dialect.Remover)
	if !ok {
		return nil, &core.KindError{Kind: core.ErrUnsupported, Msg: "the wrapped driver cannot undo what it sets"}
	}
	if req == nil || req.Object == nil {
		return rem.PlanRemoval(ctx, req)
	}
	v, ok, err := d.viewFor(req)
	if err != nil {
		return nil, err
	}
	if !ok {
		return rem.PlanRemoval(ctx, req)
	}
	inner := *req
	inner.Object = withGatewayAnnotations(v.svc, v.gw)
	if req.Reader != nil && !v.published {
		inner.Reader = rendered{ClusterReader: req.Reader, v: v}
	}
	if req.Result != nil {
		res, err := d.serviceResult(req, inner.Object, v)
		if err != nil {
			return nil, err
		}
		inner.Result = res
	}
	p, err := rem.PlanRemoval(ctx, &inner)
	if err != nil {
		return nil, err
	}
	obj := core.ObjectRef{Kind: "Service", Namespace: v.svc.Namespace, Name: v.svc.Name}
	if IsGateway(req.Object) {
		obj = refOf(v.gw)
	}
	return d.rewrite(v, p, obj), nil
}

// rendered reads live objects for the wrapped driver's removal plan, with the generated Service
// as its implementation renders it from what is written now: the live Gateway's
// spec.infrastructure annotations and labels over the live Service's (but not a key the
// implementation takes from its own resource instead). A value loopguard wrote on the Gateway
// that the implementation has not copied yet is then found, and taken back from the Gateway.
type rendered struct {
	core.ClusterReader
	v *view
}

func (r rendered) Get(ctx context.Context, key core.ObjectKey) (*unstructured.Unstructured, error) {
	u, err := r.ClusterReader.Get(ctx, key)
	if err != nil || u == nil || !isService(&key, r.v.svc) {
		return u, err
	}
	gw, err := r.ClusterReader.Get(ctx, KeyOf(r.v.gw))
	if err != nil || gw == nil {
		return u, err
	}
	out := u.DeepCopy()
	for _, meta := range []string{"annotations", "labels"} {
		infra, _, _ := unstructured.NestedStringMap(gw.Object, "spec", "infrastructure", meta)
		if len(infra) == 0 {
			continue
		}
		cur, _, _ := unstructured.NestedStringMap(out.Object, "metadata", meta)
		if cur == nil {
			cur = map[string]string{}
		}
		for k, val := range infra {
			if _, elsewhere := overrideOf(r.v, meta, k); !elsewhere {
				cur[k] = val
			}
		}
		if err := unstructured.SetNestedStringMap(out.Object, cur, "metadata", meta); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// viewFor is the Gateway view of a request's object: a Gateway, or a Service a Gateway's
// implementation generated. ok is false for any other object.
func (d *Driver) viewFor(req *core.PlanRequest) (*view, bool, error) {
	var v *view
	switch {
	case IsGateway(req.Object):
		gw, err := AsGateway(req.Object)
		if err != nil {
			return nil, false, err
		}
		v = d.dialect.look(gw, req.Cluster)
		if v.err != nil {
			return nil, false, v.err
		}
	default:
		svc, ok := req.Object.(*corev1.Service)
		if !ok || svc == nil {
			return nil, false, nil
		}
		o, ok := OwnerOf(svc)
		if class, by, u, shared := classServiceOf(svc); !ok && shared {
			// The class's one Service planned on its own: never written directly either.
			gw := &gwv1.Gateway{}
			gw.Namespace, gw.Name = svc.Namespace, svc.Name
			gw.Spec.GatewayClassName = gwv1.ObjectName(class)
			v = &view{gw: gw, svc: svc, unit: u, shared: true,
				owner: Owner{Namespace: svc.Namespace, Name: svc.Name, Implementation: u.id(), By: by}}
			break
		}
		if !ok {
			return nil, false, nil
		}
		// A generated Service planned on its own (its Gateway is not among the inputs):
		// still never written directly.
		gw := &gwv1.Gateway{}
		gw.Namespace, gw.Name = o.Namespace, o.Name
		v = &view{gw: gw, svc: svc, owner: o, unit: unitOf(o.Implementation)}
		if req.Cluster != nil {
			if u := req.Cluster.Custom(Group, "Gateway", o.Namespace, o.Name); u != nil {
				if typed, err := AsGateway(u); err == nil {
					v.gw = typed
				}
			}
		}
	}
	if v.class == nil && req.Cluster != nil && v.gw.Spec.GatewayClassName != "" {
		v.class = classOf(req.Cluster, string(v.gw.Spec.GatewayClassName))
	}
	v.cluster = req.Cluster
	if v.cfg == nil {
		v.read(req.Cluster, d.dialect.opts)
	}
	return v, true, nil
}

// serviceResult is req.Result as the wrapped driver plans it: on the Service, with the
// Service's own offers. A Gateway's Result names its offers' edits where they stick
// (translateGateway places them), so the offers are those of the Service translated again, as
// translateGateway translated it (same object, same cluster, same offer IDs), and the Driver
// then places what the wrapped driver plans, with the checks that wait for the implementation.
func (d *Driver) serviceResult(req *core.PlanRequest, svc runtime.Object, v *view) (*core.Result, error) {
	res := *req.Result
	res.Exposure.Object = core.ObjectRef{Kind: "Service", Namespace: v.svc.Namespace, Name: v.svc.Name}
	if IsGateway(req.Object) && !v.published {
		t, err := d.dialect.inner.Translate(svc, req.Cluster)
		if err != nil {
			return nil, err
		}
		res.Offers = t.Offers
	}
	return &res, nil
}

// rewrite moves every change the wrapped driver planned on the generated Service to where the
// implementation copies it from.
func (d *Driver) rewrite(v *view, p *core.Plan, obj core.ObjectRef) *core.Plan {
	out := *p
	out.Object = obj
	var checks []core.Check
	out.Changes, checks = place(v, p.Changes)
	out.Checks = append(append([]core.Check(nil), p.Checks...), checks...)
	return &out
}

// place moves each change on the generated Service to where the implementation copies it
// from (redirect), with the checks that wait for the copy; other changes stay as they are.
// translateGateway places its offers' changes the same way, so that what a host reads from a
// Gateway's offers is what the Driver plans.
func place(v *view, changes []core.Change) (out []core.Change, checks []core.Check) {
	for i := range changes {
		ch := changes[i]
		if v.published || ch.By != core.WriterCluster || ch.Object == nil || !isService(ch.Object, v.svc) {
			out = append(out, ch)
			continue
		}
		moved, user, c := redirect(v, &ch)
		out = appendMerged(out, moved)
		out = append(out, user...)
		checks = append(checks, c...)
	}
	return out, checks
}

// appendMerged appends moved changes, folding one into an earlier server-side apply on the
// same object: each apply under loopguard's field manager names every field loopguard wants
// there, and two applies naming different fields would each take back the other's.
func appendMerged(list, moved []core.Change) []core.Change {
	for _, m := range moved {
		merged := false
		for i := range list {
			if c := &list[i]; c.By == core.WriterCluster && c.Strategy == core.StrategyApply && c.Object != nil && *c.Object == *m.Object && !c.Create {
				// Clipped: the earlier change's edits may share their array with an offer's.
				c.Edits = append(slices.Clip(c.Edits), m.Edits...)
				c.Field += ", " + m.Field
				c.From += ", " + m.From
				c.To += ", " + m.To
				merged = true
				break
			}
		}
		if !merged {
			list = append(list, m)
		}
	}
	return list
}

func isService(k *core.ObjectKey, svc *corev1.Service) bool {
	return k.Kind == "Service" && k.Namespace == svc.Namespace && k.Name == svc.Name && (k.APIVersion == "v1" || k.APIVersion == "")
}

// redirect turns one change on the generated Service into changes where they stick: the
// annotations and labels on the Gateway's spec.infrastructure (or, for Envoy Gateway, on the
// EnvoyProxy whose envoyService sets the same key, since it is copied last), anything else
// into a change for the user. Checks wait for the implementation to carry each value to the
// Service.
func redirect(v *view, ch *core.Change) (moved, user []core.Change, checks []core.Check) {
	gwKey := KeyOf(v.gw)
	svcKey := *ch.Object
	byTarget := map[core.ObjectKey]*core.Change{}
	var order []core.ObjectKey
	var rest []core.Edit
	fields := map[core.ObjectKey][]string{}
	patched := map[core.ObjectKey][]core.Edit{}
	var patchedOrder []core.ObjectKey
	reason := ruleInfrastructure.Because(fmt.Sprintf("%s rewrites Service %s/%s from the Gateway; %s",
		implName(v), v.svc.Namespace, v.svc.Name, ch.Reason.Message))
	for _, e := range ch.Edits {
		meta, key, ok := metadataLeaf(e.Path)
		if !ok || ch.Create || ch.CreateOnly || ch.Delete {
			rest = append(rest, e)
			continue
		}
		target, path := gwKey, []core.PathElem{{Field: "spec"}, {Field: "infrastructure"}, {Field: meta}, {Field: key}}
		o, overridden := overrideOf(v, meta, key)
		switch {
		case overridden && o.userOwned:
			if _, seen := patched[o.key]; !seen {
				patchedOrder = append(patchedOrder, o.key)
			}
			patched[o.key] = append(patched[o.key], e)
			continue
		case overridden:
			target, path = o.key, o.path
		case v.shared:
			rest = append(rest, e) // no Gateway's spec.infrastructure holds for the class's Service
			continue
		}
		c, ok := byTarget[target]
		if !ok {
			t := target
			// A copy of the wrapped driver's change, so that what identifies it stays.
			moved := *ch
			moved.Object, moved.Strategy, moved.Edits, moved.Reason = &t, core.StrategyApply, nil, reason
			c = &moved
			byTarget[target] = c
			order = append(order, target)
			if overridden && !e.Remove {
				c.Edits = append(c.Edits, o.also...)
			}
		}
		edit := core.Edit{Path: path, Value: e.Value, Remove: e.Remove}
		c.Edits = append(c.Edits, edit)
		fields[target] = append(fields[target], leafField(edit.Path))
		if !e.Remove && !v.synthesized {
			checks = append(checks, core.Check{Object: svcKey, Edit: e,
				Pending: fmt.Sprintf("%s has not copied %s from %s to the Service yet; it does on its next reconcile of the Gateway", implName(v), key, target)})
		}
	}
	for _, k := range order {
		c := byTarget[k]
		c.Field = strings.Join(fields[k], ", ")
		moved = append(moved, *c)
	}
	if len(rest) > 0 {
		names := make([]string, len(rest))
		for i, e := range rest {
			names[i] = e.String()
		}
		u := *ch
		u.By, u.Edits, u.Strategy = core.WriterUser, rest, ""
		u.Reason = ruleImplementationOwns.Because(fmt.Sprintf("%s owns Service %s/%s and would revert %s; set it through %s. %s",
			implName(v), v.svc.Namespace, v.svc.Name, strings.Join(names, ", "), ownResource(v), ch.Reason.Message))
		user = append(user, u)
	}
	for _, k := range patchedOrder {
		names := make([]string, len(patched[k]))
		for i, e := range patched[k] {
			names[i] = e.String()
		}
		u := *ch
		u.By, u.Edits, u.Strategy = core.WriterUser, patched[k], ""
		var what, how string
		for _, e := range patched[k] {
			if meta, key, ok := metadataLeaf(e.Path); ok {
				if o, ok := overrideOf(v, meta, key); ok {
					what, how = o.what, o.how
					break
				}
			}
		}
		u.Reason = ruleImplementationOwns.Because(fmt.Sprintf("%s applies %s %s/%s's %s to Service %s/%s after the Gateway's annotations, and it sets %s: %s. %s",
			implName(v), k.Kind, k.Namespace, k.Name, what, v.svc.Namespace, v.svc.Name, strings.Join(names, ", "), how, ch.Reason.Message))
		user = append(user, u)
	}
	return moved, user, checks
}

// metadataLeaf reports whether path is metadata.annotations[key] or metadata.labels[key].
func metadataLeaf(path []core.PathElem) (meta, key string, ok bool) {
	if len(path) != 3 || path[0].Field != "metadata" || path[0].Keys != nil || path[2].Keys != nil {
		return "", "", false
	}
	switch path[1].Field {
	case "annotations", "labels":
		return path[1].Field, path[2].Field, true
	}
	return "", "", false
}

// leafField renders a path to a map's key as people read a change's field:
// spec.infrastructure.annotations["key"].
func leafField(path []core.PathElem) string {
	if len(path) == 0 {
		return ""
	}
	last := len(path) - 1
	return core.Edit{Path: path[:last]}.String() + fmt.Sprintf("[%q]", path[last].Field)
}

// ownResource names where the implementation takes the Service's other fields from.
func ownResource(v *view) string {
	if v.unit == nil {
		return "the implementation's own configuration"
	}
	return v.unit.ownResource(v)
}

// ClusterObject converts a typed Gateway API object (a Gateway, a GatewayClass) to the
// unstructured form a core.Cluster indexes, so that a host holding typed objects (an SDK call)
// can hand them to core.NewCluster; other objects are returned as they are.
func ClusterObject(obj runtime.Object) (runtime.Object, error) {
	switch o := obj.(type) {
	case *gwv1.Gateway, *gwv1.GatewayClass:
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{Object: m}
		kind := "Gateway"
		if _, ok := o.(*gwv1.GatewayClass); ok {
			kind = "GatewayClass"
		}
		u.SetAPIVersion(gwv1.GroupVersion.String())
		u.SetKind(kind)
		return u, nil
	}
	return obj, nil
}
