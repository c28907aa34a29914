package gateway

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/loopguard/loopguard/core"
)

// Options configure the Gateway layer. A nil *Options means the defaults.
type Options struct {
	// EnvoyGatewayNamespace is where Envoy Gateway creates the proxies' Services (its own
	// namespace, "envoy-gateway-system" by default); used to name a Service judged from the
	// Gateway when none is among the inputs.
	EnvoyGatewayNamespace string
	// IstioNamespace is istiod's namespace ("istio-system" by default), where Istio reads a
	// GatewayClass's defaults ConfigMap.
	IstioNamespace string
}

// withDefaults fills every option a unit reads with its default.
func (o Options) withDefaults() Options {
	for _, u := range units {
		u.defaults(&o)
	}
	return o
}

// Dialect is a core.Dialect that reads Gateways and hands every other object, and the Service
// a Gateway's implementation generated, to the wrapped dialect. It is safe for concurrent use
// when the wrapped one is.
type Dialect struct {
	inner core.Dialect
	opts  Options
}

var _ core.Dialect = (*Dialect)(nil)

// NewDialect wraps a cloud's dialect; opts may be nil.
func NewDialect(inner core.Dialect, opts *Options) *Dialect {
	d := &Dialect{inner: inner}
	if opts != nil {
		d.opts = *opts
	}
	d.opts = d.opts.withDefaults()
	return d
}

// Options are the options the dialect was built with, defaults filled in.
func (d *Dialect) Options() Options { return d.opts }

// Name is the wrapped dialect's: the cloud decides the provider.
func (d *Dialect) Name() string { return d.inner.Name() }

// Rules are the wrapped dialect's; the Gateway layer's own are listed once by Rules (a host
// that lists every code, like docs/reasons.md, adds them beside the clouds').
func (d *Dialect) Rules() []core.Rule { return d.inner.Rules() }

// Inner is the wrapped dialect.
func (d *Dialect) Inner() core.Dialect { return d.inner }

// IsGateway reports whether obj is a Gateway (a typed v1 Gateway, or one read as
// unstructured, any version of the gateway.networking.k8s.io group).
func IsGateway(obj runtime.Object) bool {
	switch o := obj.(type) {
	case *gwv1.Gateway:
		return o != nil
	case *unstructured.Unstructured:
		gvk := o.GroupVersionKind()
		return gvk.Group == Group && gvk.Kind == "Gateway"
	}
	return false
}

// AsGateway returns obj as a typed v1 Gateway. An unstructured Gateway (v1 or v1beta1, whose
// schema is the same) is converted strictly: an unknown field or a wrong type is an
// *core.InvalidError naming the field.
func AsGateway(obj runtime.Object) (*gwv1.Gateway, error) {
	switch o := obj.(type) {
	case *gwv1.Gateway:
		return o, nil
	case *unstructured.Unstructured:
		gw := &gwv1.Gateway{}
		ref := core.ObjectRef{Kind: "Gateway", Namespace: o.GetNamespace(), Name: o.GetName()}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, gw, true); err != nil {
			return nil, &core.InvalidError{Object: ref, Errs: field.ErrorList{field.Invalid(field.NewPath("spec"), nil, err.Error())}}
		}
		if errs := validate(gw); len(errs) > 0 {
			return nil, &core.InvalidError{Object: ref, Errs: errs}
		}
		return gw, nil
	}
	return nil, fmt.Errorf("gateway: %w: %T is not a Gateway", core.ErrInvalid, obj)
}

// validate checks what the Gateway CRD's schema would refuse and loopguard relies on.
func validate(gw *gwv1.Gateway) field.ErrorList {
	var errs field.ErrorList
	if gw.Spec.GatewayClassName == "" {
		errs = append(errs, field.Required(field.NewPath("spec", "gatewayClassName"), "a Gateway names its GatewayClass"))
	}
	for i, l := range gw.Spec.Listeners {
		if l.Port < 1 || l.Port > 65535 {
			errs = append(errs, field.Invalid(field.NewPath("spec", "listeners").Index(i).Child("port"), l.Port, "must be between 1 and 65535"))
		}
	}
	return errs
}

func refOf(gw *gwv1.Gateway) core.ObjectRef {
	return core.ObjectRef{Kind: "Gateway", Namespace: gw.Namespace, Name: gw.Name}
}

// inputError is bad input in an object the Gateway's evaluation reads besides the Gateway (a
// policy, a ListenerSet, an implementation's configuration, a proxy's Pod): the Gateway is not
// judged, and the error names that object and its field, so that a typo is not taken for a
// setting left unset. A field of the Gateway itself is a *core.InvalidError instead, which
// hosts locate in the Gateway's manifest.
func inputError(gw *gwv1.Gateway, kind, ns, name string, fe *field.Error) error {
	return &core.KindError{Kind: core.ErrInvalid, Object: refOf(gw), Msg: fmt.Sprintf("%s %s/%s: %s", kind, ns, name, fe.Error())}
}

// KeyOf is the Gateway's ObjectKey for a cluster change.
func KeyOf(gw *gwv1.Gateway) core.ObjectKey {
	return core.ObjectKey{APIVersion: gwv1.GroupVersion.String(), Kind: "Gateway", Namespace: gw.Namespace, Name: gw.Name}
}

// Translate reads a Gateway through the Service its implementation generated; a Service that
// belongs to a Gateway among the cluster's objects is ErrNotExposed (the Gateway carries its
// verdict); every other object goes to the wrapped dialect.
func (d *Dialect) Translate(obj runtime.Object, c *core.Cluster) (*core.Result, error) {
	if IsGateway(obj) {
		gw, err := AsGateway(obj)
		if err != nil {
			return nil, err
		}
		return d.translateGateway(gw, c)
	}
	if svc, ok := obj.(*corev1.Service); ok && svc != nil {
		if o, ok := OwnerOf(svc); ok && c != nil && gatewayIn(c, o.Namespace, o.Name) {
			return nil, &core.KindError{Kind: core.ErrNotExposed, Object: core.ObjectRef{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name},
				Msg:    fmt.Sprintf("generated for Gateway %s/%s (%s); assessed as that Gateway", o.Namespace, o.Name, o.By),
				Reason: ruleOwnedService.Reason()}
		}
		if class, by, _, ok := classServiceOf(svc); ok && c != nil {
			if gws := gatewaysOfClass(c, class); len(gws) > 0 {
				return nil, &core.KindError{Kind: core.ErrNotExposed, Object: core.ObjectRef{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name},
					Msg: fmt.Sprintf("generated for every Gateway of GatewayClass %s (%s); assessed as Gateway %s",
						class, by, strings.Join(gws, ", ")),
					Reason: ruleOwnedService.Reason()}
			}
		}
	}
	return d.inner.Translate(obj, c)
}

// classOf finds a GatewayClass by name. GatewayClasses are cluster-scoped, but a reader that
// does not know the kind may have given it a default namespace.
func classOf(c *core.Cluster, name string) *unstructured.Unstructured {
	if u := c.Custom(Group, "GatewayClass", "", name); u != nil {
		return u
	}
	for _, u := range c.CustomList(Group, "GatewayClass") {
		if u.GetName() == name {
			return u
		}
	}
	return nil
}

// view is what the Gateway layer knows about one Gateway.
type view struct {
	gw    *gwv1.Gateway
	class *unstructured.Unstructured
	// unit is the Gateway's implementation's; nil when it is not known.
	unit unit
	// svc is the generated Service, or the one the implementation would generate.
	svc         *corev1.Service
	synthesized bool
	owner       Owner
	// published: the Service is the implementation's own (unit.published), not generated for
	// the Gateway; nothing rewrites it from the Gateway, so its fixes stay on it.
	published bool
	// shared: the Service is the one the implementation generates for every Gateway of the
	// class (unit.classService, unit.sharedByClass).
	shared bool
	// cfg is what the unit's read found: its own objects that configure the Gateway.
	cfg any
	// cluster is what the Gateway is judged among; nil when nothing is known.
	cluster *core.Cluster
	// listeners are the Gateway's own and those of the ListenerSets attached to it (sets), in
	// the order Gateway API merges them.
	listeners []listener
	sets      listenerSets
	// err is bad input look found in what the Gateway names (its ListenerSets).
	err error
}

// impl is the Gateway's implementation.
func (v *view) impl() Implementation {
	if v.unit == nil {
		return ImplementationUnknown
	}
	return v.unit.id()
}

// reader is the unit that reads the Gateway's settings: its own, or, for a Gateway whose
// implementation is not known, the unit that reads such Gateways' policies.
func (v *view) reader() unit {
	if v.unit != nil {
		return v.unit
	}
	for _, u := range units {
		if u.readsUnknown() {
			return u
		}
	}
	return nil
}

// read asks the Gateway's unit for its own objects that configure the Gateway.
func (v *view) read(c *core.Cluster, o Options) {
	if c != nil && v.unit != nil {
		v.unit.read(v, c, o)
	}
}

// look gathers the Gateway's class, implementation and Service.
func (d *Dialect) look(gw *gwv1.Gateway, c *core.Cluster) *view {
	v := &view{gw: gw, cluster: c}
	if c != nil {
		v.class = classOf(c, string(gw.Spec.GatewayClassName))
	}
	v.listeners = ownListeners(gw)
	if sets, err := listenerSetsOf(gw, c); err != nil {
		v.err = err
	} else if ls, err := listenersOf(gw, sets); err != nil {
		v.err = err
	} else {
		v.sets, v.listeners = sets, ls
	}
	v.unit = unitOfClass(v.class)
	var candidates []*corev1.Service
	if c != nil {
		for _, owned := range ownedServices(c)[types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}] {
			candidates = append(candidates, owned.svc)
			if v.unit == nil {
				v.unit = unitOf(owned.owner.Implementation)
			}
			v.owner = owned.owner
		}
		if len(candidates) == 0 {
			class := string(gw.Spec.GatewayClassName)
			for _, cs := range classServices(c)[class] {
				if v.unit != nil && v.unit != cs.u {
					continue
				}
				candidates = append(candidates, cs.svc)
				v.unit, v.shared = cs.u, true
				v.owner = Owner{Namespace: gw.Namespace, Name: gw.Name, Implementation: cs.u.id(),
					By: fmt.Sprintf("%s: %s, one Service for every Gateway of the class", cs.by, class)}
			}
		}
	}
	v.read(c, d.opts)
	if !v.shared && v.unit != nil && v.unit.sharedByClass(v) {
		v.shared = true
	}
	// An implementation may generate more than one Service; the LoadBalancer one is the
	// exposure.
	sort.SliceStable(candidates, func(i, j int) bool {
		return candidates[i].Spec.Type == corev1.ServiceTypeLoadBalancer && candidates[j].Spec.Type != corev1.ServiceTypeLoadBalancer
	})
	if len(candidates) > 0 {
		v.svc = candidates[0]
		return v
	}
	if v.unit != nil && c != nil {
		if svc, by := v.unit.published(v, c); svc != nil {
			v.svc, v.published = svc, true
			v.owner = Owner{Namespace: gw.Namespace, Name: gw.Name, Implementation: v.unit.id(), By: by}
			return v
		}
	}
	v.svc, v.synthesized = d.synthesize(v), true
	return v
}

// synthesize is the Service the implementation would generate: the listeners' ports (its
// attached ListenerSets' too: Gateway API's listenerset_types.go, "Listeners in a Gateway and
// their attached ListenerSets are concatenated as a list when programming the underlying
// infrastructure"; Envoy Gateway v1.9.1 builds the proxy's ports from that list,
// internal/gatewayapi/listener.go ProcessListeners), the Gateway's spec.infrastructure
// annotations and labels, and the implementation's defaults.
func (d *Dialect) synthesize(v *view) *corev1.Service {
	gw := v.gw
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: gw.Namespace, Name: gw.Name, Labels: map[string]string{LabelGatewayName: gw.Name}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
	}
	if inf := gw.Spec.Infrastructure; inf != nil {
		if len(inf.Annotations) > 0 {
			svc.Annotations = map[string]string{}
			for k, val := range inf.Annotations {
				svc.Annotations[string(k)] = string(val)
			}
		}
		for k, val := range inf.Labels {
			svc.Labels[string(k)] = string(val)
		}
	}
	seen := map[string]bool{}
	for _, l := range v.listeners {
		proto := corev1.ProtocolTCP
		if l.Protocol == gwv1.UDPProtocolType {
			proto = corev1.ProtocolUDP
		}
		key := fmt.Sprintf("%s/%d", proto, l.Port)
		if seen[key] {
			continue // listeners sharing a port share the Service port
		}
		seen[key] = true
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: string(l.Name), Protocol: proto, Port: int32(l.Port), TargetPort: intstr.FromInt32(int32(l.Port))})
	}
	if v.unit != nil {
		v.unit.service(v, svc, d.opts)
	}
	return svc
}

// withGatewayAnnotations returns the Service with the Gateway's own loopguard.io annotations
// added where the Service has none of its own (the Gateway is where a platform team declares
// clients, scope and expectations); svc is not modified.
func withGatewayAnnotations(svc *corev1.Service, gw *gwv1.Gateway) *corev1.Service {
	var add map[string]string
	for k, val := range gw.Annotations {
		if strings.HasPrefix(k, "loopguard.io/") {
			if _, ok := svc.Annotations[k]; !ok {
				if add == nil {
					add = map[string]string{}
				}
				add[k] = val
			}
		}
	}
	if add == nil {
		return svc
	}
	out := svc.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	for k, val := range add {
		out.Annotations[k] = val
	}
	return out
}

func (d *Dialect) translateGateway(gw *gwv1.Gateway, c *core.Cluster) (*core.Result, error) {
	v := d.look(gw, c)
	if v.err != nil {
		return nil, v.err
	}
	ref := refOf(gw)
	if v.synthesized && v.unit != nil {
		if why := v.unit.noService(); why != "" {
			return nil, &core.KindError{Kind: core.ErrNotExposed, Object: ref, Reason: ruleAssumedService.Reason(), Msg: why}
		}
	}
	svc := withGatewayAnnotations(v.svc, gw)
	t, err := d.inner.Translate(svc, c)
	if err != nil {
		var ke *core.KindError
		if errors.Is(err, core.ErrNotExposed) {
			why := err.Error()
			if errors.As(err, &ke) {
				why = ke.Msg
			}
			return nil, &core.KindError{Kind: core.ErrNotExposed, Object: ref,
				Msg: fmt.Sprintf("its Service %s/%s is not a load-balancer exposure: %s", v.svc.Namespace, v.svc.Name, why)}
		}
		var inv *core.InvalidError
		if errors.As(err, &inv) && v.synthesized {
			// The Service's annotations came from the Gateway's spec.infrastructure.
			errs := make(field.ErrorList, 0, len(inv.Errs))
			for _, fe := range inv.Errs {
				e := *fe
				e.Field = strings.Replace(e.Field, "metadata.annotations", "spec.infrastructure.annotations", 1)
				errs = append(errs, &e)
			}
			return nil, &core.InvalidError{Object: ref, Errs: errs}
		}
		return nil, fmt.Errorf("Gateway %s/%s: its Service %s/%s: %w", gw.Namespace, gw.Name, v.svc.Namespace, v.svc.Name, err)
	}
	e := &t.Exposure
	e.Object = ref
	var lead []core.Reason
	if v.synthesized {
		lead = append(lead, ruleAssumedService.Because(fmt.Sprintf("No Service generated for this Gateway is among the inputs; judged as %s would generate it: LoadBalancer, the listeners' ports%s.",
			v.impl(), extraDefaults(v))))
	} else if v.published {
		lead = append(lead, rulePublishedService.Because(fmt.Sprintf("%s serves this Gateway from its own Service %s/%s (%s); it generates none per Gateway and does not read spec.infrastructure.",
			implName(v), v.svc.Namespace, v.svc.Name, v.owner.By)))
	} else {
		lead = append(lead, ruleGeneratedService.Because(fmt.Sprintf("%s generated Service %s/%s for this Gateway (%s).", implName(v), v.svc.Namespace, v.svc.Name, v.owner.By)))
	}
	need, ok, err := proxyNeeds(v, c)
	if err != nil {
		return nil, err
	}
	if ok {
		switch need.fact {
		case core.Yes:
			e.Needs.ProxyHeader = core.Yes
			if need.version != "" {
				e.Needs.ProxyVersion = need.version
			}
			lead = append(lead, ruleProxyProtocol.Because(need.msg))
			if e.ProxyProtocol != core.Yes {
				e.Notes = append(e.Notes, ruleProxyNotSent.Because(fmt.Sprintf("%s requires the PROXY protocol header on Gateway %s/%s, and nothing says the load balancer sends it.", implName(v), gw.Namespace, gw.Name)))
			}
		case core.No:
			if e.ProxyProtocol == core.Yes {
				msg := fmt.Sprintf("The load balancer sends a PROXY protocol header, and %s does not read one on Gateway %s/%s: %s",
					implName(v), gw.Namespace, gw.Name, need.msg)
				if r := v.reader().expectProxy(); r.ID != "" {
					msg += fmt.Sprintf(" To have it read one (remedy %s): %s.", r.ID, r)
				}
				e.Notes = append(e.Notes, ruleProxyNotExpected.Because(msg))
			}
		default:
			e.Notes = append(e.Notes, ruleProxyOptional.Because(need.msg))
		}
	}
	if u := v.reader(); u != nil {
		e.Notes = append(e.Notes, u.notes(v, c)...)
	}
	ca, ok, err := clientAddressOf(v, c)
	if err != nil {
		return nil, err
	}
	if ok {
		e.Needs.ClientAddress = core.Yes
		lead = append(lead, ruleClientAddress.Because(ca.why))
		e.Notes = append(e.Notes, ca.notes...)
	}
	e.Reasons = append(lead, e.Reasons...)
	e.Notes = append([]core.Reason{ruleListeners.Because(listeners(v))}, e.Notes...)
	// The offers name each edit where it sticks, as the Driver plans it: the implementation
	// rewrites its generated Service from the Gateway, so an edit of that Service would be
	// reverted (Driver.serviceResult gives the wrapped driver the Service's own offers).
	for i := range t.Offers {
		t.Offers[i].Changes, _ = place(v, t.Offers[i].Changes)
	}
	return t, nil
}

func implName(v *view) string {
	if v.unit == nil {
		return "The Gateway's implementation"
	}
	return v.unit.name()
}

// extraDefaults names the externalTrafficPolicy of a Service judged from the Gateway, when the
// implementation or its configuration sets one.
func extraDefaults(v *view) string {
	if p := v.svc.Spec.ExternalTrafficPolicy; p != "" {
		return fmt.Sprintf(", externalTrafficPolicy %s", p)
	}
	return ""
}

// listeners renders the Gateway's listeners as name port/protocol[ hostname], then those of
// each attached ListenerSet.
func listeners(v *view) string {
	if len(v.listeners) == 0 {
		return "The Gateway has no listeners." + v.sets.undecidedNote()
	}
	var parts []string
	var set *unstructured.Unstructured
	for _, l := range v.listeners {
		s := fmt.Sprintf("%s %d/%s", l.Name, l.Port, l.Protocol)
		if l.Hostname != nil {
			s += " " + string(*l.Hostname)
		}
		if l.set != nil && l.set != set {
			set = l.set
			s = fmt.Sprintf("from ListenerSet %s/%s: %s", set.GetNamespace(), set.GetName(), s)
		}
		parts = append(parts, s)
	}
	return "Listeners: " + strings.Join(parts, ", ") + "." + v.sets.undecidedNote()
}

// stringMap reads a map of strings under key of m.
func stringMap(m map[string]any, key string) map[string]string {
	out, _, _ := unstructured.NestedStringMap(m, key)
	return out
}
