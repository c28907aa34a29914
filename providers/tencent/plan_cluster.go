package tencent

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// ConfigSuffix ends the name of a TkeServiceConfig loopguard creates for an object that
// references none: <object>-loopguard. TKE's controllers name theirs <object>-auto-service-config
// and <object>-auto-ingress-config (457/45490, 457/45700), so the two never collide.
const ConfigSuffix = "-loopguard"

// AnnotationConfigOwner marks a TkeServiceConfig loopguard created, with the object it was
// created for ("Service/web", "Ingress/web"). loopguard merges into an unreferenced
// <object>-loopguard config only when it carries this mark, so it never takes over a config
// someone else made under that name.
const AnnotationConfigOwner = "loopguard.io/created-for"

// LabelManagedBy marks objects loopguard created.
const LabelManagedBy = "app.kubernetes.io/managed-by"

// ServiceConfigAPIVersion is TkeServiceConfig's apiVersion.
const ServiceConfigAPIVersion = ServiceConfigGroup + "/" + ServiceConfigVersion

// interceptVIP plans prevent-loopback: one annotation, by server-side apply, so every other
// annotation (and an explicit "false" another manager owns) is left to its owner.
func (pr *planning) interceptVIP(ctx context.Context) error {
	svc, ok := pr.req.Object.(*corev1.Service)
	if !ok {
		pr.block(&core.KindError{Kind: core.ErrUnsupported, Object: pr.plan.Object,
			Msg: ruleL7NoForwarding.Summary, Reason: ruleL7NoForwarding.Reason()})
		return nil
	}
	p := pr.profile
	if p.ProxyMode == core.ProxyModeIPVS {
		if support, min, _ := pr.d.dialect.revisions.check(p.KubeProxyVersion); support == TooOld {
			need := min.String() + " or later"
			pr.block(&core.PreconditionError{Object: pr.plan.Object, Component: "kube-proxy", Have: p.KubeProxyVersion, Need: need,
				Reason: rulePreventLoopbackTooOld.Because("kube-proxy " + p.KubeProxyVersion + " does not bind LB addresses to the IPVS interface, so prevent-loopback would have no effect; upgrade the kube-proxy DaemonSet image to " + need)})
		}
	}
	pr.blockUnmet()
	pr.ensureNotes(ruleHealthCheckSource.Reason(), ruleLongConnections.Reason())

	key, _ := core.KeyOf(svc)
	ann, err := pr.liveAnnotations(ctx, key, svc.Annotations)
	if err != nil {
		return err
	}
	cur, set := ann[AnnotationPreventLoopback]
	if cur == "true" {
		return nil
	}
	from := cur
	if !set {
		from = ""
	}
	pr.plan.Changes = append(pr.plan.Changes, core.Change{
		By:       core.WriterCluster,
		Object:   &key,
		Field:    annotationField(AnnotationPreventLoopback),
		From:     from,
		To:       "true",
		Edits:    []core.Edit{annotationEdit(AnnotationPreventLoopback, "true")},
		Strategy: core.StrategyApply,
		Reason:   ruleOfferPreventLoopback.Reason(),
	})
	return nil
}

// stopsIntercept is whether the decision takes in-cluster traffic off the VIP path that
// prevent-loopback made, because the backends need the CLB (core.Assessment.NeedsLB).
func (pr *planning) stopsIntercept() bool {
	r := pr.req.Result
	return r.Assessment.NeedsLB == core.Yes && r.Exposure.Intercept == core.Yes && pr.profile.ProxyMode == core.ProxyModeIPVS
}

// preventLoopbackOff sets prevent-loopback to "false" where it is "true" now: in IPVS mode that
// stops the node intercepting the CLB VIP. The value is set, not removed: the annotation may
// belong to another field manager, whose other fields stay as they are.
func (pr *planning) preventLoopbackOff(ctx context.Context) error {
	svc, ok := pr.req.Object.(*corev1.Service)
	if !ok {
		return nil
	}
	key, _ := core.KeyOf(svc)
	ann, err := pr.liveAnnotations(ctx, key, svc.Annotations)
	if err != nil {
		return err
	}
	if ann[AnnotationPreventLoopback] != "true" {
		return nil
	}
	pr.plan.Changes = append(pr.plan.Changes, core.Change{
		By:       core.WriterCluster,
		Object:   &key,
		Field:    annotationField(AnnotationPreventLoopback),
		From:     "true",
		To:       "false",
		Edits:    []core.Edit{annotationEdit(AnnotationPreventLoopback, "false")},
		Strategy: core.StrategyApply,
		Reason:   ruleOfferStopPreventLoopback.Reason(),
	})
	return nil
}

// ensureNotes adds notes the plan does not carry yet (a host may plan from a Result without
// offers).
func (pr *planning) ensureNotes(notes ...core.Reason) {
	for _, n := range notes {
		found := false
		for _, have := range pr.plan.Notes {
			found = found || have.Code == n.Code
		}
		if !found {
			pr.plan.Notes = append(pr.plan.Notes, n)
		}
	}
}

// liveAnnotations returns an object's annotations as the cluster has them now, else (offline,
// or the object is gone) the ones given.
func (pr *planning) liveAnnotations(ctx context.Context, key core.ObjectKey, given map[string]string) (map[string]string, error) {
	if pr.req.Reader == nil {
		return given, nil
	}
	u, err := pr.req.Reader.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return given, nil
	}
	return u.GetAnnotations(), nil
}

// get reads a live object through the request's reader; offline it finds TkeServiceConfigs
// in the Cluster.
func (pr *planning) get(ctx context.Context, key core.ObjectKey) (*unstructured.Unstructured, error) {
	if pr.req.Reader != nil {
		return pr.req.Reader.Get(ctx, key)
	}
	if pr.req.Cluster != nil && key.Kind == ServiceConfigKind {
		return pr.req.Cluster.Custom(ServiceConfigGroup, ServiceConfigKind, key.Namespace, key.Name), nil
	}
	return nil, nil
}

// preventLoopbackField is annotationField of the annotation nearly every plan edits.
var preventLoopbackField = "metadata.annotations[\"" + AnnotationPreventLoopback + "\"]"

func annotationField(key string) string {
	if key == AnnotationPreventLoopback {
		return preventLoopbackField
	}
	return "metadata.annotations[\"" + key + "\"]"
}

func annotationEdit(key, value string) core.Edit {
	return core.Edit{Path: []core.PathElem{dialect.F("metadata"), dialect.F("annotations"), dialect.F(key)}, Value: value}
}

// configTarget is what one TkeServiceConfig merge needs to know.
type configTarget struct {
	owner core.ObjectKey
	// name is the referenced config ("" when none); auto says it is the controller's -auto one.
	name string
	auto bool
	// refAnnotation references a config from the owner.
	refAnnotation string
	// list is "l4Listeners" or "l7Listeners"; field and value the attribute to set.
	list      string
	field     string
	value     any
	listeners []ListenerKey
	// done reports whether a config's entry for k already has the attribute on; it returns
	// the entry (nil when there is none) so the edit can keep its protocol's spelling.
	done   func(cfg *ServiceConfig, k ListenerKey) (entryIndex int, on bool)
	caps   []core.Capability
	reason core.Reason
}

// configService plans layer-4 SNAT through the Service's TkeServiceConfig (seeds 000/001
// solution 2).
func (pr *planning) configService(ctx context.Context, svc *corev1.Service) error {
	key, _ := core.KeyOf(svc)
	ann, err := pr.liveAnnotations(ctx, key, svc.Annotations)
	if err != nil {
		return err
	}
	live := *svc
	live.Annotations = ann
	name, auto, err := ServiceConfigName(&live)
	if err != nil {
		return err
	}
	listeners, ok := pr.l4Listeners(svc)
	if !ok {
		return nil
	}
	pr.noteSourceAddress(listeners)
	return pr.mergeConfig(ctx, configTarget{
		owner: key, name: name, auto: auto, refAnnotation: AnnotationServiceConfig,
		list: "l4Listeners", field: "snatEnable", value: true, listeners: listeners,
		done: func(cfg *ServiceConfig, k ListenerKey) (int, bool) {
			if l := cfg.L4(k); l != nil {
				return l.Index, l.SNAT()
			}
			return -1, false
		},
		caps:   []core.Capability{CapL4SNAT},
		reason: ruleOfferL4SNAT.Reason(),
	})
}

// l4Listeners returns the Service's listeners, blocking the plan for a protocol
// TkeServiceConfig's l4Listeners cannot select (docs/sources.md#tkeserviceconfig: TCP or UDP).
func (pr *planning) l4Listeners(svc *corev1.Service) ([]ListenerKey, bool) {
	listeners := ServiceListeners(svc)
	for _, k := range listeners {
		if k.Protocol != "TCP" && k.Protocol != "UDP" {
			pr.block(&core.KindError{Kind: core.ErrUnsupported, Object: pr.plan.Object,
				Msg: "port " + k.String() + ": CLB layer-4 listeners are TCP or UDP; no listener SNAT can be set for " + k.Protocol})
			return nil, false
		}
	}
	if len(listeners) == 0 {
		pr.block(&core.KindError{Kind: core.ErrInvalid, Object: pr.plan.Object, Msg: "the Service has no ports, so it has no CLB listener to change"})
		return nil, false
	}
	return listeners, true
}

// noteSourceAddress says what the backend sees once the LB replaces the source (docs/sources.md#source-address).
func (pr *planning) noteSourceAddress(listeners []ListenerKey) {
	tcp, udp := false, false
	for _, k := range listeners {
		tcp = tcp || k.Protocol == "TCP"
		udp = udp || k.Protocol == "UDP"
	}
	if tcp {
		pr.ensureNotes(core.CodeSourceLBLostTCP.Rule().Reason())
	}
	if udp {
		pr.ensureNotes(core.CodeSourceLBLostUDP.Rule().Reason())
	}
}

// configIngress plans layer-7 SNAT through the Ingress's TkeServiceConfig (seeds 000/001
// solution 3): snatEnable: true from ingress controller v2.9.0, keepaliveEnable: 1 before.
func (pr *planning) configIngress(ctx context.Context, ing *networkingv1.Ingress) error {
	key, _ := core.KeyOf(ing)
	ann, err := pr.liveAnnotations(ctx, key, ing.Annotations)
	if err != nil {
		return err
	}
	live := *ing
	live.Annotations = ann
	name, auto, err := IngressConfigName(&live)
	if err != nil {
		return err
	}
	listeners, ok := pr.l7Listeners(ing)
	if !ok {
		return nil
	}
	attr, ok := pr.l7Attribute()
	if !ok {
		return nil
	}
	pr.noteLayer7()
	return pr.mergeConfig(ctx, configTarget{
		owner: key, name: name, auto: auto, refAnnotation: AnnotationIngressServiceConfig,
		list: "l7Listeners", field: attr.configField, value: attr.configValue, listeners: listeners,
		done: func(cfg *ServiceConfig, k ListenerKey) (int, bool) {
			if l := cfg.L7(k); l != nil {
				if attr.keepalive {
					return l.Index, l.Keepalive()
				}
				return l.Index, l.SNAT()
			}
			return -1, false
		},
		caps:   attr.capabilities(),
		reason: ruleOfferL7SNAT.Reason(),
	})
}

// l7Listeners returns the Ingress's listeners, blocking the plan when custom listen ports
// make them unknown.
func (pr *planning) l7Listeners(ing *networkingv1.Ingress) ([]ListenerKey, bool) {
	listeners, custom := IngressListeners(ing)
	if custom {
		pr.block(&core.KindError{Kind: core.ErrUnsupported, Object: pr.plan.Object,
			Msg: AnnotationIngressListenPorts + " sets the listener ports, which loopguard does not read: " + ruleListenPorts.Summary, Reason: ruleListenPorts.Reason()})
		return nil, false
	}
	return listeners, true
}

func (pr *planning) noteLayer7() {
	pr.ensureNotes(core.CodeSourceLBXFF.Rule().Reason(), ruleL7SNATSecurityGroup.Reason())
}

// l7Attr is how layer-7 SNAT is turned on for the ingress controller at hand.
type l7Attr struct {
	keepalive   bool
	configField string
	configValue any
}

// capabilities are the allowlists checked before layer-7 SNAT is written.
func (a l7Attr) capabilities() []core.Capability {
	switch {
	case l7SNATNeedsKeepalive:
		return []core.Capability{CapL7SNAT, CapKeepalive}
	case a.keepalive:
		return []core.Capability{CapKeepalive}
	}
	return []core.Capability{CapL7SNAT}
}

// l7Attribute picks the field by the ingress controller's version (seeds 000/001 solution 3)
// and blocks the plan when the version is not known: loopguard does not guess.
func (pr *planning) l7Attribute() (l7Attr, bool) {
	var ctrl controllerVersion
	if pr.req.Cluster != nil {
		ctrl = pr.d.dialect.ingressController(pr.req.Cluster)
	}
	switch ctrl.atLeast(l7SNATFieldVersion) {
	case core.Yes:
		return l7Attr{configField: "snatEnable", configValue: true}, true
	case core.No:
		// keepaliveEnable is an INTEGER (docs/sources.md#tkeserviceconfig); a boolean would not do.
		return l7Attr{keepalive: true, configField: "keepaliveEnable", configValue: int64(1)}, true
	}
	msg := ruleIngressControllerUnknown.Summary
	if ctrl.note != "" {
		msg += " (" + ctrl.note + ")"
	}
	pr.block(&core.PreconditionError{Object: pr.plan.Object, Component: "tke-ingress-controller", Have: ctrl.raw,
		Need:   "a known version: v" + l7SNATFieldVersion.String() + " or later turns layer-7 SNAT on with snatEnable: true, older versions with keepaliveEnable: 1",
		Reason: ruleIngressControllerUnknown.Because(msg)})
	return l7Attr{}, false
}

// mergeConfig plans the edits of one TkeServiceConfig: for each listener whose entry lacks the
// attribute, set it on the entry selected by (protocol, port), creating the entry (and the
// config) when absent. Every other entry, attribute and field is left as it is: the edits
// touch only their own leaves, and StrategyUpdate writes back the object as read.
func (pr *planning) mergeConfig(ctx context.Context, t configTarget) error {
	referenced := t.name != ""
	if !referenced {
		t.name = t.owner.Name + ConfigSuffix
		for _, msg := range validation.IsDNS1123Subdomain(t.name) {
			pr.block(&core.KindError{Kind: core.ErrInvalid, Object: pr.plan.Object,
				Msg: "cannot name a TkeServiceConfig " + t.name + ": " + msg + "; reference one with " + t.refAnnotation})
			return nil
		}
	}
	key := core.ObjectKey{APIVersion: ServiceConfigAPIVersion, Kind: ServiceConfigKind, Namespace: t.owner.Namespace, Name: t.name}
	live, err := pr.get(ctx, key)
	if err != nil {
		return err
	}
	if live == nil && t.auto {
		// TKE's controller creates the -auto config when it syncs the object; writing one
		// ourselves would race it.
		pr.block(&core.RetryError{After: autoConfigRetry, Msg: fmt.Sprintf("%s: %s %s does not exist yet: %s (%s)", pr.plan.Object, ServiceConfigKind, key.Namespace+"/"+key.Name,
			ruleAutoConfigPending.Summary, ruleAutoConfigPending.Code)})
		return nil
	}
	owner := t.owner.Kind + "/" + t.owner.Name
	if live != nil && !referenced && live.GetAnnotations()[AnnotationConfigOwner] != owner {
		pr.block(&core.KindError{Kind: core.ErrConflict, Object: pr.plan.Object, Msg: fmt.Sprintf(
			"%s %s/%s exists but loopguard did not create it for %s (no %s: %s); reference the config to use with %s, or rename it",
			ServiceConfigKind, key.Namespace, key.Name, owner, AnnotationConfigOwner, owner, t.refAnnotation)})
		return nil
	}
	var cfg *ServiceConfig
	if live != nil {
		var errs field.ErrorList
		if cfg, errs = ParseServiceConfig(live); len(errs) > 0 {
			return dialect.Invalid(core.ObjectRef{Kind: ServiceConfigKind, Namespace: key.Namespace, Name: key.Name}, errs)
		}
	}

	var edits []core.Edit
	var keys, froms []string
	for _, k := range t.listeners {
		protocol, from := k.Protocol, "(unset)"
		if cfg != nil {
			idx, on := t.done(cfg, k)
			if on {
				continue
			}
			if idx >= 0 {
				// Keep the entry's own spelling ("tcp"), or the edit would add a second entry.
				protocol, from = entryValue(live, t.list, idx, "protocol", k.Protocol), entryValue(live, t.list, idx, t.field, "(unset)")
			}
		}
		keys = append(keys, k.String())
		froms = append(froms, k.String()+" "+from)
		edits = append(edits, core.Edit{Path: []core.PathElem{
			dialect.F("spec"), dialect.F("loadBalancer"), dialect.F(t.list),
			dialect.K(map[string]any{"protocol": protocol, "port": int64(k.Port)}),
			dialect.F(t.field),
		}, Value: t.value})
	}
	if len(edits) > 0 {
		ch := core.Change{
			By:       core.WriterCluster,
			Object:   &key,
			Field:    "spec.loadBalancer." + t.list + "[" + strings.Join(keys, ",") + "]." + t.field,
			From:     strings.Join(froms, ", "),
			To:       valueText(t.value),
			Edits:    edits,
			Strategy: core.StrategyUpdate,
			Reason:   t.reason,
		}
		if live == nil {
			ch.Create = true
			ch.Template = configTemplate(owner, pr.req.Object)
			ch.Reason = ruleCreateServiceConfig.Because(fmt.Sprintf("%s references no %s; loopguard creates %s/%s with only the listener entries it needs", owner, ServiceConfigKind, key.Namespace, key.Name))
			if referenced {
				ch.Reason = ruleCreateServiceConfig.Because(fmt.Sprintf("%s references %s %s/%s, which does not exist; loopguard creates it with only the listener entries it needs", owner, ServiceConfigKind, key.Namespace, key.Name))
			}
		}
		pr.plan.Changes = append(pr.plan.Changes, ch)
	}
	if !referenced {
		// The config first, then the reference: the controller never reads a reference to a
		// config that does not exist yet.
		ownerKey := t.owner
		pr.plan.Changes = append(pr.plan.Changes, core.Change{
			By:       core.WriterCluster,
			Object:   &ownerKey,
			Field:    annotationField(t.refAnnotation),
			To:       t.name,
			Edits:    []core.Edit{annotationEdit(t.refAnnotation, t.name)},
			Strategy: core.StrategyApply,
			Reason:   ruleCreateServiceConfig.Because(owner + " references the " + ServiceConfigKind + " loopguard created through " + t.refAnnotation),
		})
	}
	pr.checkAllowlists(t.caps)
	return nil
}

// autoConfigRetry is how long to wait for TKE's controller to create an -auto config.
const autoConfigRetry = 15 * time.Second

// entryValue reads list[idx][field] of a config as text, or def when absent.
func entryValue(u *unstructured.Unstructured, list string, idx int, field, def string) string {
	// Walk the maps rather than call unstructured.NestedSlice, which deep-copies the list.
	spec, _ := u.Object["spec"].(map[string]any)
	lb, _ := spec["loadBalancer"].(map[string]any)
	l, _ := lb[list].([]any)
	if idx < 0 || idx >= len(l) {
		return def
	}
	m, _ := l[idx].(map[string]any)
	v, ok := m[field]
	if !ok || v == nil {
		return def
	}
	if s, ok := v.(string); ok && field != "protocol" {
		return strconv.Quote(s)
	}
	return valueText(v)
}

func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

// configTemplate is the metadata of a TkeServiceConfig loopguard creates; the edits add the
// listener entries. When the owner's UID is known (a live object) the config carries an
// ownerReference to it, so Kubernetes' garbage collector deletes the config with its Service
// or Ingress.
func configTemplate(owner string, obj runtime.Object) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetLabels(map[string]string{LabelManagedBy: "loopguard"})
	u.SetAnnotations(map[string]string{AnnotationConfigOwner: owner})
	if m, ok := obj.(metav1.Object); ok && m.GetUID() != "" {
		if key, ok := core.KeyOf(obj); ok {
			u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: key.APIVersion, Kind: key.Kind, Name: key.Name, UID: m.GetUID()}})
		}
	}
	return u
}
