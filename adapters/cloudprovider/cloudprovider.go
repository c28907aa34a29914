package cloudprovider

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/go-logr/logr"
	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// AnnotationIgnore on a Service, set to "true", makes the decorator pass it through untouched.
const AnnotationIgnore = "loopguard.io/ignore"

// Event reasons the decorator records on a Service.
const (
	// EventChangeNeeded: the decision needs a change the cloud-controller-manager does not make
	// (an annotation, a TkeServiceConfig, anti-affinity for the clients).
	EventChangeNeeded = "LoopguardChangeNeeded"
	// EventBlocked: the decision cannot be carried out yet (an allowlist, a version, an
	// unknown fact, a load balancer that is not the Service's); the cloud's status stands.
	EventBlocked = "LoopguardBlocked"
	// EventApplied: loopguard changed the load balancer.
	EventApplied = "LoopguardApplied"
	// EventIPMode: loopguard published an ipMode other than the one the status held.
	EventIPMode = "LoopguardIPMode"
	// EventKeptCloudIPMode: the cloud published ipMode Proxy and loopguard kept it although
	// its decision prefers VIP, because it does not know that nothing behind the load
	// balancer needs the load balancer.
	EventKeptCloudIPMode = "LoopguardKeptCloudIPMode"
	// EventKeptUserIPMode: the Service sets its ipMode in the cloud's own annotation (or the
	// PROXY-protocol switch its controller derives it from); loopguard publishes what it says
	// and never changes it, but its decision would publish the other ipMode: the Event says
	// which and why (a Warning; Normal when the decision is tentative).
	EventKeptUserIPMode = "LoopguardKeptUserIPMode"
	// EventFailedOpen: loopguard's part failed (a bad annotation, an error, a panic); the
	// cloud's own result was returned unchanged and the sync went on.
	EventFailedOpen = "LoopguardFailedOpen"
	// EventFailed: loopguard's part failed and, with WithFailClosed, failed the sync.
	EventFailed = "LoopguardFailed"
	// EventCleanupFailed: taking back loopguard's load-balancer changes failed while the
	// Service was deleted; the delete went on.
	EventCleanupFailed = "LoopguardCleanupFailed"
	// EventStatusPassedThrough: the cloud returned a status the API server would refuse;
	// loopguard returned it as it is, as without loopguard.
	EventStatusPassedThrough = "LoopguardStatusPassedThrough"
)

// Option configures Wrap.
type Option func(*options)

type options struct {
	log          hclog.Logger
	recorder     record.EventRecorder
	profile      core.ClusterProfile
	controller   []func(*core.ClusterProfile) // WithControllerSettings and WithController, in order
	policy       core.Policy
	reportOnly   bool
	failClosed   bool
	optOut       string
	slices       discoverylisters.EndpointSliceLister
	pods         corelisters.PodLister
	configMaps   corelisters.ConfigMapLister
	fromInformer bool
}

// WithLogger sets the logger (named "loopguard"); the default discards.
func WithLogger(l hclog.Logger) Option { return func(o *options) { o.log = l } }

// WithLogr sends the decorator's log lines to a logr.Logger instead: klog.Background() in a
// cloud-controller-manager, whose other lines go through klog. Errors are logged with
// Error, changes and warnings at V(0), debug lines at V(4). It replaces WithLogger.
func WithLogr(l logr.Logger) Option { return func(o *options) { o.log = hclogToLogr(l) } }

// WithEventRecorder sets where Events go: the cloud-controller-manager's own recorder. Without
// it the decorator records no Events (its log lines still say everything).
func WithEventRecorder(r record.EventRecorder) Option { return func(o *options) { o.recorder = r } }

// WithProfile declares the facts no object carries (the proxy mode, kube-proxy's and the API
// server's versions, allowlists), as a ClusterProfile.
func WithProfile(p core.ClusterProfile) Option { return func(o *options) { o.profile = p } }

// WithControllerSettings states, once, the settings the inner cloud-controller-manager runs
// with that decide what it does for a Service that does not say: Hetzner's
// HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL turns the PROXY protocol on, and so ipMode Proxy, for
// every Service without load-balancer.hetzner.cloud/uses-proxyprotocol. Keys are the names the
// controller reads, values as written there; the provider's dialect parses them as that
// controller does (for the kubernetes provider, kubernetes.ControllerSettingNames lists them).
// A fork's own environment is its controller's: kubernetes.SettingsFromEnv(os.LookupEnv)
// states every setting the dialect reads, set or not. Without them loopguard cannot see these defaults (it lists
// Pods only in the Service's namespace) and keeps the cloud's ipMode Proxy on unknown facts.
// They are added to WithProfile's controllerSettings, replacing a setting of the same name.
func WithControllerSettings(s map[string]string) Option {
	later := core.ClusterProfile{ControllerSettings: make(map[string]string, len(s))}
	for k, v := range s {
		later.ControllerSettings[k] = v
	}
	return func(o *options) {
		o.controller = append(o.controller, func(p *core.ClusterProfile) { p.Overlay(&later) })
	}
}

// WithController states the inner cloud-controller-manager's release and settings as the
// provider's own type for that controller (kubernetes.HetznerController{UsesProxyProtocol:
// "true"}), for a host that knows them by field rather than by environment. It ends in the same
// profile fields as WithControllerSettings (ccmVersion, controllerSettings), over WithProfile's;
// of several such options, a later one wins per setting.
func WithController(cfg kubernetes.ControllerConfig) Option {
	return func(o *options) {
		if cfg != nil {
			o.controller = append(o.controller, cfg.Overlay)
		}
	}
}

// WithPolicy sets the decision policy.
func WithPolicy(p core.Policy) Option { return func(o *options) { o.policy = p } }

// ReportOnly makes the decorator evaluate, log and record Events only: it returns the inner
// status exactly as the cloud gave it and never writes to the load balancer.
func ReportOnly() Option { return func(o *options) { o.reportOnly = true } }

// WithFailClosed makes a failure of loopguard's part fail the load-balancer sync (the service
// controller retries it with its backoff) instead of returning the cloud's own result. By
// default the decorator fails open: after the inner call succeeded, loopguard can only
// improve the status, never withhold it. Deletion never waits for loopguard either way.
func WithFailClosed() Option { return func(o *options) { o.failClosed = true } }

// WithOptOutAnnotation changes the per-Service annotation that turns the decorator off
// (AnnotationIgnore by default).
func WithOptOutAnnotation(key string) Option { return func(o *options) { o.optOut = key } }

// WithListers gives the decorator the placement facts (EndpointSlices, Pods) and the cloud
// controllers' version ConfigMaps from the host's informers, so a sync costs no API call. Any
// may be nil. Without WithListers, the listers come from the informer factory the
// cloud-controller-manager hands to SetInformers.
func WithListers(slices discoverylisters.EndpointSliceLister, pods corelisters.PodLister, configMaps corelisters.ConfigMapLister) Option {
	return func(o *options) { o.slices, o.pods, o.configMaps = slices, pods, configMaps }
}

// Wrap decorates a cloud provider so that the load balancers it makes keep in-cluster clients
// from looping. Its LoadBalancer, after the inner EnsureLoadBalancer or UpdateLoadBalancer
// succeeds, evaluates the Service with p's dialect and hands the decision to a core.Reconciler
// that carries out what a cloud-controller-manager owns: the load balancer (through p's
// driver, such as TKE's listener SNAT in direct mode) and the ipMode of the status it returns
// (kubernetes.PlanStatus, for every provider). It never writes the Service or the Nodes:
// changes the cloud-controller-manager does not own are logged and recorded as Events.
//
// Inside the host loopguard can only make things better:
//   - after the inner call succeeded, an error or a panic in loopguard's part returns the
//     inner status unchanged, with an error log, a Warning Event and a metric (unless
//     WithFailClosed); a core.RetryError (a load balancer still busy) is requeued after its
//     delay;
//   - an ipMode Proxy from the cloud becomes VIP only on known facts (kubernetes.PlanStatus);
//   - a status loopguard changes is validated as the API server validates an update; a status
//     the cloud returned that the server would refuse is passed through as it is;
//   - EnsureLoadBalancerDeleted always calls the inner delete, whatever taking back
//     loopguard's changes did.
//
// Everything but LoadBalancer passes through to inner untouched.
func Wrap(inner cloudprovider.Interface, p core.Provider, opts ...Option) cloudprovider.Interface {
	register()
	o := options{log: hclog.NewNullLogger(), optOut: AnnotationIgnore}
	for _, opt := range opts {
		opt(&o)
	}
	o.log = o.log.Named("loopguard")
	for _, overlay := range o.controller {
		overlay(&o.profile)
	}
	// The host is the cloud-controller-manager: ipMode is its to publish whatever the
	// upstream controller of this cloud does (kubernetes.StatusOwner).
	hp := hostProvider{Provider: p, d: kubernetes.StatusOwner(p.Dialect())}
	c := &cloud{Interface: inner, dialect: hp.d, opts: &o, events: newEventLog()}
	c.stores = kubernetes.StoresIPMode(o.profile.KubernetesVersion)
	c.reconciler = core.NewReconciler(hp, &core.ReconcilerOptions{Policy: o.policy, Logger: o.log, HostWrites: []core.Writer{core.WriterCloud, core.WriterStatus}, OwnershipCheck: true})
	return c
}

// cloud is the decorated provider. Embedding passes every method but LoadBalancer through.
type cloud struct {
	cloudprovider.Interface
	dialect    core.Dialect
	opts       *options
	reconciler *core.Reconciler
	stores     core.Fact
	events     *eventLog
}

// SetInformers forwards the informer factory to the inner provider when it uses one, and takes
// the listers the decorator needs from it unless WithListers gave them.
func (c *cloud) SetInformers(f informers.SharedInformerFactory) {
	if iu, ok := c.Interface.(cloudprovider.InformerUser); ok {
		iu.SetInformers(f)
	}
	o := c.opts
	if o.slices == nil && o.pods == nil && o.configMaps == nil {
		o.slices = f.Discovery().V1().EndpointSlices().Lister()
		o.pods = f.Core().V1().Pods().Lister()
		o.configMaps = f.Core().V1().ConfigMaps().Lister()
		o.fromInformer = true
	}
}

// LoadBalancer returns the decorated inner LoadBalancer; false when the inner has none.
func (c *cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	lb, ok := c.Interface.LoadBalancer()
	if !ok {
		return nil, false
	}
	return &loadBalancer{LoadBalancer: lb, c: c}, true
}

type loadBalancer struct {
	cloudprovider.LoadBalancer
	c *cloud
}

var _ cloudprovider.LoadBalancer = (*loadBalancer)(nil)

// The operations the decorator's logs, Events and metrics name.
const (
	opEnsure = "ensure"
	opUpdate = "update"
	opDelete = "delete"
)

// EnsureLoadBalancer calls the inner one, then carries out the decision's load-balancer part
// and returns the inner status with the decided ipMode; on any failure of loopguard's part,
// the inner status as it is (WithFailClosed: the error).
func (lb *loadBalancer) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	st, err := lb.LoadBalancer.EnsureLoadBalancer(ctx, clusterName, svc, nodes)
	if err != nil || st == nil || len(st.Ingress) == 0 || lb.c.ignored(svc) {
		// An empty status (a load balancer without an address yet, as kube-vip's first
		// sync returns) has nothing to publish and nothing to judge: no Event either.
		return st, err
	}
	ev := lb.c.begin(svc, true)
	defer ev.end()
	out, err := protect(func() (*corev1.LoadBalancerStatus, error) { return lb.c.ensure(ctx, ev, svc, st, nodes) })
	if err != nil {
		if err := lb.c.failed(ev, opEnsure, svc, err); err != nil {
			return nil, err
		}
		return st, nil
	}
	return out, nil
}

// UpdateLoadBalancer calls the inner one (the nodes changed), then carries out the decision's
// load-balancer part again; the status is not returned by this call.
func (lb *loadBalancer) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) error {
	if err := lb.LoadBalancer.UpdateLoadBalancer(ctx, clusterName, svc, nodes); err != nil || lb.c.ignored(svc) ||
		len(svc.Status.LoadBalancer.Ingress) == 0 {
		return err
	}
	ev := lb.c.begin(svc, false)
	defer ev.end()
	_, err := protect(func() (struct{}, error) { return struct{}{}, lb.c.update(ctx, ev, svc, nodes) })
	if err != nil {
		return lb.c.failed(ev, opUpdate, svc, err)
	}
	return nil
}

// EnsureLoadBalancerDeleted takes back what loopguard set on the load balancer, then calls the
// inner one, always: a failure to take back is logged, recorded as an Event and counted, and
// tried again on the next delete call should the inner one fail; it never keeps the Service's
// finalizer.
func (lb *loadBalancer) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *corev1.Service) error {
	lb.c.forget(svc)
	if !lb.c.ignored(svc) && !lb.c.opts.reportOnly {
		_, err := protect(func() (struct{}, error) { return struct{}{}, lb.c.remove(ctx, svc) })
		if err != nil {
			b := core.BlockerOf(err)
			kind := kindOf(err)
			errorsTotal.WithLabelValues(opDelete, kind, "failed-open").Inc()
			lb.c.logFor(svc).Error("taking back loopguard's load-balancer changes failed; deleting the load balancer anyway",
				"kind", kind, "error", b.Message)
			lb.c.event(svc, corev1.EventTypeWarning, EventCleanupFailed,
				"loopguard could not take back its load-balancer changes ("+b.Message+"); the load balancer is deleted anyway")
		}
	}
	return lb.LoadBalancer.EnsureLoadBalancerDeleted(ctx, clusterName, svc)
}

func (c *cloud) ignored(svc *corev1.Service) bool { return svc.Annotations[c.opts.optOut] == "true" }

func (c *cloud) logFor(svc *corev1.Service) hclog.Logger {
	return c.opts.log.With("service", svc.Namespace+"/"+svc.Name)
}

// panicError is a panic in loopguard's part, recovered so that it cannot take the
// cloud-controller-manager down: the upstream service controller's HandleCrash re-panics.
type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string { return fmt.Sprintf("loopguard panicked: %v", e.value) }

// protect runs fn and turns a panic into a *panicError.
func protect[T any](fn func() (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r, stack: debug.Stack()}
		}
	}()
	return fn()
}

// kindOf names an error for logs and metrics: the core error kind, or panic.
func kindOf(err error) string {
	var p *panicError
	if errors.As(err, &p) {
		return "panic"
	}
	var s *statusError
	if errors.As(err, &s) {
		return "invalid-status"
	}
	return core.BlockerOf(err).Kind
}

// failed decides what a failure of loopguard's part does to the host's call: a RetryError is
// requeued after its own delay (cloud-provider's api.RetryError, wrapped with %w as the
// service controller matches it with errors.As); with WithFailClosed the call fails; otherwise
// nil, and the caller returns the inner result. Each is logged, evented and counted.
func (c *cloud) failed(ev *syncEvents, op string, svc *corev1.Service, err error) error {
	log := c.logFor(svc)
	kind := kindOf(err)
	var retry *core.RetryError
	if errors.As(err, &retry) {
		errorsTotal.WithLabelValues(op, kind, "retry").Inc()
		log.Info("load balancer not ready for loopguard's change; the service controller retries", "after", retry.After.String(), "error", err.Error())
		return fmt.Errorf("loopguard: Service %s/%s: %w", svc.Namespace, svc.Name, api.NewRetryError(retry.Error(), retry.After))
	}
	var p *panicError
	if errors.As(err, &p) {
		log.Error("recovered a panic in loopguard", "panic", fmt.Sprint(p.value), "stack", string(p.stack))
	}
	msg := err.Error()
	if !strings.Contains(msg, svc.Name) {
		msg = "Service " + svc.Namespace + "/" + svc.Name + ": " + msg
	}
	if c.opts.failClosed {
		errorsTotal.WithLabelValues(op, kind, "failed-closed").Inc()
		log.Error("loopguard failed; failing the load-balancer sync (WithFailClosed)", "kind", kind, "error", msg)
		ev.event(corev1.EventTypeWarning, EventFailed, msg+"; "+whatToDo(kind))
		return fmt.Errorf("loopguard: %s: %w", kind, err)
	}
	errorsTotal.WithLabelValues(op, kind, "failed-open").Inc()
	log.Error("loopguard failed; status.loadBalancer left as the cloud returned it", "kind", kind, "error", msg, "todo", whatToDo(kind))
	ev.event(corev1.EventTypeWarning, EventFailedOpen,
		msg+"; status.loadBalancer is left as the cloud returned it; "+whatToDo(kind))
	return nil
}

// whatToDo says, per kind of failure, what makes loopguard's part work.
func whatToDo(kind string) string {
	switch kind {
	case "invalid":
		return "fix the field named above (docs/annotations.md lists the loopguard.io annotations)"
	case "invalid-status":
		return "loopguard's ipMode would make the status invalid: report it as a loopguard bug"
	case "panic":
		return "report it as a loopguard bug, with the stack from the cloud-controller-manager's log; loopguard.io/ignore: \"true\" turns loopguard off for this Service"
	case "unauthenticated":
		return "check the credentials of the cloud-controller-manager's load-balancer client"
	case "not-allowlisted":
		return "ask the cloud's support for the capability named above"
	case "precondition":
		return "declare the missing facts in the decorator's ClusterProfile (WithProfile)"
	case "unsupported":
		return "the decision's remedy is not one the cloud-controller-manager can carry out; see the Event's action"
	}
	return "the next sync tries again"
}

// statusError is a status loopguard made that the API server would refuse as an update.
type statusError struct{ msg string }

func (e *statusError) Error() string { return e.msg }

// ensure is loopguard's part of EnsureLoadBalancer: st is what the inner call returned.
func (c *cloud) ensure(ctx context.Context, ev *syncEvents, svc *corev1.Service, st *corev1.LoadBalancerStatus, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	log := c.logFor(svc)
	path := kubernetes.IngressStatusPath()
	stored := svc.Status.LoadBalancer.Ingress
	if errs := kubernetes.ValidateIngressStatusUpdate(path, st.Ingress, stored); len(errs) > 0 {
		// The cloud's own status would be refused: not loopguard's to judge or to fix.
		errorsTotal.WithLabelValues(opEnsure, "invalid-status", "passed-through").Inc()
		log.Warn("the cloud returned a status the API server would refuse; loopguard leaves it as it is", "errors", errs.ToAggregate().Error())
		ev.event(corev1.EventTypeWarning, EventStatusPassedThrough,
			"the cloud-controller-manager returned a status the API server would refuse ("+errs.ToAggregate().Error()+"); loopguard left it as it is")
		return st, nil
	}
	facts, err := c.facts(svc, nodes)
	if err != nil {
		return nil, err
	}
	base, user := st, userIPMode{}
	if !c.opts.reportOnly && c.stores != core.No {
		base, user = withUserIPMode(st, svc, facts)
	}
	view := svc.DeepCopy()
	view.Status.LoadBalancer = *base.DeepCopy()
	// The server keeps an address it stored in a legacy form (203.0.113.07) on update; the
	// dialect reads statuses as new objects, so it sees the canonical form.
	view.Status.LoadBalancer.Ingress = kubernetes.CanonicalIngressStatus(base.Ingress)
	out, err := c.reconcile(ctx, ev, opEnsure, view, facts)
	if err != nil {
		return nil, err
	}
	if c.opts.reportOnly {
		return st, nil
	}
	var forStatus []core.Change
	if out != nil {
		forStatus = out.ForStatus
	}
	result := kubernetes.PublishStatus(base, forStatus, c.stores)
	if errs := kubernetes.ValidateIngressStatusUpdate(path, result.Ingress, stored); len(errs) > 0 {
		return nil, &statusError{msg: "the status loopguard would return is invalid: " + errs.ToAggregate().Error()}
	}
	c.reportIPModes(ev, svc, stored, result, forStatus, out, user)
	return result, nil
}

// userIPMode is the ipMode the Service's own annotation gives its IP entries
// (kubernetes.UserIPMode), when it sets one.
type userIPMode struct {
	mode corev1.LoadBalancerIPMode
	why  core.Reason
	set  bool
	// changed holds the IPs the inner cloud returned with another ipMode (an absent one
	// reads as VIP, as the API server stores it).
	changed map[string]bool
}

// withUserIPMode returns st with the ipMode the Service's own annotation says on every IP
// entry, as the cloud's controller publishes it: the user's setting stands whatever the inner
// cloud returned or loopguard would decide. st is returned as it is when the Service sets none.
func withUserIPMode(st *corev1.LoadBalancerStatus, svc *corev1.Service, facts *core.Cluster) (*corev1.LoadBalancerStatus, userIPMode) {
	mode, why, ok := kubernetes.UserIPMode(svc, facts)
	if !ok {
		return st, userIPMode{}
	}
	out := st.DeepCopy()
	u := userIPMode{mode: mode, why: why, set: true, changed: map[string]bool{}}
	for i := range out.Ingress {
		in := &out.Ingress[i]
		if in.IP == "" {
			continue
		}
		if have := in.IPMode; have == nil && mode != corev1.LoadBalancerIPModeVIP || have != nil && *have != mode {
			u.changed[in.IP] = true
		}
		m := mode
		in.IPMode = &m
	}
	return out, u
}

// update is loopguard's part of UpdateLoadBalancer.
func (c *cloud) update(ctx context.Context, ev *syncEvents, svc *corev1.Service, nodes []*corev1.Node) error {
	facts, err := c.facts(svc, nodes)
	if err != nil {
		return err
	}
	view := svc.DeepCopy()
	view.Status.LoadBalancer.Ingress = kubernetes.CanonicalIngressStatus(svc.Status.LoadBalancer.Ingress)
	_, err = c.reconcile(ctx, ev, opUpdate, view, facts)
	return err
}

// reconcile evaluates svc (whose status is the one to publish) and has the Reconciler plan,
// validate and apply what the host owns. It returns nil and no error when the Service is not
// an exposure, or when the plan is blocked (logged and evented: the cloud's status stands);
// in report-only mode it plans and reports but applies nothing.
func (c *cloud) reconcile(ctx context.Context, ev *syncEvents, op string, svc *corev1.Service, facts *core.Cluster) (*core.Outcome, error) {
	log := c.logFor(svc)
	res, err := core.Evaluate(c.dialect, svc, facts, c.opts.policy)
	switch {
	case errors.Is(err, core.ErrNotExposed):
		return nil, nil
	case err != nil:
		return nil, err
	}
	plan, err := c.reconciler.PlanEvaluated(ctx, svc, facts, res)
	if err != nil {
		return nil, err
	}
	// Whichever remedy the decision picked (an ipMode, or a cloud's annotation fix), an ipMode
	// the user set stands, and where the decision's path differs the user hears why: a Warning
	// on a firm decision, Normal on a tentative one.
	if n, ok := kubernetes.UserIPModeNote(&core.PlanRequest{Object: svc, Cluster: facts, Result: res}); ok {
		typ := corev1.EventTypeWarning
		if res.Decision.Tentative {
			typ = corev1.EventTypeNormal
		}
		log.Info("kept the ipMode the Service's annotation says", "reason", string(n.Code), "why", n.Message)
		ev.event(typ, EventKeptUserIPMode, n.Message+" ("+string(n.Code)+")")
	}
	for _, n := range plan.Notes {
		if n.Code == kubernetes.CodeKeepCloudProxy {
			log.Info("kept the cloud's ipMode Proxy", "reason", string(n.Code), "why", n.Message)
		}
	}
	if plan.Blocked != nil {
		b := plan.Blocked
		if b.Kind == "retry-later" || c.opts.failClosed {
			return nil, b.Err()
		}
		errorsTotal.WithLabelValues(op, b.Kind, "blocked").Inc()
		log.Warn("loopguard's plan is blocked; the cloud's status stands", "kind", b.Kind, "reason", string(b.Code), "blocker", b.Message)
		ev.event(corev1.EventTypeWarning, EventBlocked, fmt.Sprintf("%s: %s (the cloud's status stands)", b.Kind, b.Message))
		return nil, nil
	}
	if c.opts.reportOnly {
		for _, ch := range plan.Changes {
			log.Info("report-only: loopguard would make a change", "change", ch.String(), "reason", string(ch.Reason.Code))
		}
		return nil, nil
	}
	out, err := c.reconciler.Apply(ctx, plan)
	if out != nil {
		for _, ch := range append(append([]core.Change(nil), out.Elsewhere...), out.ForUser...) {
			msg := "loopguard needs " + ch.String() + " for " + string(plan.Decision.Remedy) + "; the cloud-controller-manager does not make it"
			log.Info("change for someone else", "change", ch.String(), "reason", string(ch.Reason.Code))
			ev.event(corev1.EventTypeNormal, EventChangeNeeded, msg)
		}
		for _, ch := range out.Written {
			changesTotal.WithLabelValues(op, string(core.WriterCloud)).Inc()
			log.Info("wrote to the load balancer", "change", ch.String(), "reason", string(ch.Reason.Code))
		}
		if len(out.Written) > 0 {
			ev.event(corev1.EventTypeNormal, EventApplied, fmt.Sprintf("loopguard wrote %d load-balancer change(s) for %s: %s",
				len(out.Written), plan.Decision.Remedy, changeList(out.Written)))
		}
	}
	if err == nil {
		if msg, ok := keptCloudProxy(plan.Notes); ok {
			ev.event(corev1.EventTypeNormal, EventKeptCloudIPMode, msg+" ("+string(kubernetes.CodeKeepCloudProxy)+"): "+keepProxyHint(res, plan))
		}
	}
	return out, err
}

// keptCloudProxy is the message of the note PlanStatus makes when it keeps the cloud's Proxy:
// one note per Service, naming every entry kept.
func keptCloudProxy(notes []core.Reason) (string, bool) {
	var msgs []string
	for _, n := range notes {
		if n.Code == kubernetes.CodeKeepCloudProxy {
			msgs = append(msgs, n.Message)
		}
	}
	return strings.Join(msgs, "; "), len(msgs) > 0
}

func changeList(chs []core.Change) string {
	s := make([]string, len(chs))
	for i := range chs {
		s[i] = chs[i].String()
	}
	return strings.Join(s, "; ")
}

// reportIPModes logs, events and counts every ipMode the returned status sets differently from
// the stored one.
func (c *cloud) reportIPModes(ev *syncEvents, svc *corev1.Service, stored []corev1.LoadBalancerIngress, result *corev1.LoadBalancerStatus, forStatus []core.Change, out *core.Outcome, user userIPMode) {
	log := c.logFor(svc)
	for _, in := range result.Ingress {
		if in.IP == "" || in.IPMode == nil {
			continue
		}
		before := "(unset)"
		for _, s := range stored {
			if s.IP == in.IP && s.IPMode != nil {
				before = string(*s.IPMode)
			}
		}
		if before == string(*in.IPMode) {
			continue
		}
		ch := kubernetes.StatusChangeFor(forStatus, in.IP)
		if ch == nil && user.changed[in.IP] {
			// What the Service's own annotation says, as its cloud's controller publishes it.
			log.Info("published the ipMode the Service's annotation says", "ip", in.IP, "from", before, "to", string(*in.IPMode), "why", user.why.Message)
			ev.event(corev1.EventTypeNormal, EventIPMode, fmt.Sprintf("ipMode of %s: %s → %s (%s)", in.IP, before, *in.IPMode, user.why.Message))
			continue
		}
		if ch == nil {
			// Not loopguard's change: the cloud's value, or VIP made explicit.
			log.Debug("published the cloud's ipMode", "ip", in.IP, "ipMode", string(*in.IPMode))
			continue
		}
		changesTotal.WithLabelValues(opEnsure, string(core.WriterStatus)).Inc()
		log.Info("published ipMode", "ip", in.IP, "from", before, "to", string(*in.IPMode), "remedy", string(out.Plan.Decision.Remedy), "reason", string(ch.Reason.Code))
		ev.event(corev1.EventTypeNormal, EventIPMode, fmt.Sprintf("ipMode of %s: %s → %s (%s, %s)", in.IP, before, *in.IPMode, out.Plan.Decision.Remedy, ch.Reason.Code))
	}
}

// keepProxyHint says what lets loopguard intercept an address whose Proxy it kept. Declaring
// that the backends need nothing from the load balancer is enough only when the decision is
// firm: a tentative one (the risk is unknown) would then be blocked, so the hint names the
// unknown facts instead, and the cloud controller's settings first where one decides them.
func keepProxyHint(res *core.Result, plan *core.Plan) string {
	if !plan.Decision.Tentative {
		return "declare loopguard.io/backend-expects: none on the Service if nothing behind the load balancer needs it"
	}
	var unseen []string
	for _, n := range res.Exposure.Notes {
		if n.Code == kubernetes.CodeCloudDefaultUnseen {
			unseen = append(unseen, n.Message)
		}
	}
	hint := "the risk is unknown, so loopguard.io/backend-expects: none alone would not let loopguard publish VIP; "
	if len(unseen) > 0 {
		return hint + strings.Join(unseen, "; ")
	}
	return hint + "declare the facts the decision names (" + plan.Decision.Why + ")"
}

// facts builds the cluster loopguard evaluates against: the profile, the nodes the service
// controller passes, and what the listers hold for the Service's namespace.
func (c *cloud) facts(svc *corev1.Service, nodes []*corev1.Node) (*core.Cluster, error) {
	cl, err := c.listFacts(svc, nodes)
	if err != nil {
		return nil, fmt.Errorf("loopguard: Service %s/%s: reading the cluster facts: %w", svc.Namespace, svc.Name, err)
	}
	return cl, nil
}

func (c *cloud) listFacts(svc *corev1.Service, nodes []*corev1.Node) (*core.Cluster, error) {
	objs := make([]runtime.Object, 0, len(nodes)+8)
	for _, n := range nodes {
		objs = append(objs, n)
	}
	o := c.opts
	if o.slices != nil {
		sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc.Name})
		list, err := o.slices.EndpointSlices(svc.Namespace).List(sel)
		if err != nil {
			return nil, err
		}
		for _, s := range list {
			objs = append(objs, s)
		}
	}
	if o.pods != nil {
		list, err := o.pods.Pods(svc.Namespace).List(labels.Everything())
		if err != nil {
			return nil, err
		}
		for _, p := range list {
			objs = append(objs, p)
		}
	}
	if o.configMaps != nil {
		list, err := o.configMaps.ConfigMaps("kube-system").List(labels.Everything())
		if err != nil {
			return nil, err
		}
		for _, cm := range list {
			objs = append(objs, cm)
		}
	}
	return core.NewCluster(o.profile, objs...)
}

// remove takes back the load-balancer changes loopguard made for svc, through the Reconciler.
func (c *cloud) remove(ctx context.Context, svc *corev1.Service) error {
	facts, err := core.NewCluster(c.opts.profile)
	if err != nil {
		return err
	}
	plan, err := c.reconciler.PlanRemoval(ctx, svc, facts)
	if err != nil {
		return err
	}
	out, err := c.reconciler.Apply(ctx, plan)
	if out != nil {
		for _, ch := range out.Written {
			changesTotal.WithLabelValues(opDelete, string(core.WriterCloud)).Inc()
			c.logFor(svc).Info("took back a load-balancer change", "change", ch.String())
		}
	}
	return err
}

func (c *cloud) event(svc *corev1.Service, typ, reason, msg string) {
	if c.opts.recorder != nil {
		c.opts.recorder.Event(svc, typ, reason, msg)
	}
}
