package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/loopguard/loopguard/adapters/kube"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/gateway"
)

// Options configure the controller. A nil *Options means report-only with a zero profile.
type Options struct {
	// Profile is what is known about the cluster that its objects do not say (proxy mode,
	// kube-proxy version, allowlists, declared clients); its Policy is the decision policy.
	Profile core.ClusterProfile
	// Enforce applies plans. The default only reports: Events, metrics and the verdict.
	Enforce bool
	// ConfigMaps names the ConfigMaps the provider's dialect reads (TKE's controller version
	// ConfigMaps in kube-system); they are read and watched, no other ConfigMap is.
	ConfigMaps []types.NamespacedName
	// Custom lists namespaced custom kinds the dialect and driver read (TKE's
	// TkeServiceConfig). A kind the cluster does not serve when Setup runs is left out.
	Custom []schema.GroupVersionKind
	// Logger defaults to a null logger.
	Logger hclog.Logger
	// Registerer receives the metrics; default controller-runtime's registry, which the
	// manager's metrics endpoint serves.
	Registerer prometheus.Registerer
	// Workers is the number of objects reconciled at once per kind; default 2.
	Workers int
	// CapabilityTTL is how long the cloud's allowlist refusals are remembered; default 1 h.
	CapabilityTTL time.Duration
	// WedgedAfter is how long one reconcile may run before /healthz fails, so the kubelet
	// restarts a manager that is stuck (a call that never returns, a lock never released);
	// default 5 min, far beyond any reconcile's API and cloud timeouts.
	WedgedAfter time.Duration
	// Verify, when set, verifies Services with probe Pods when their verdict turns at-risk
	// and after a fix is written, and records what was observed (VerifyOptions). Off by
	// default: it is the only thing that makes the controller create Pods.
	Verify *VerifyOptions
	// Gateway configures the Gateway layer SetupGateways wraps the Provider with (istiod's
	// namespace, where Istio's class defaults ConfigMaps are read and watched); nil means its
	// defaults. A Provider gateway.Wrap already wrapped brings its own: giving both is an
	// error, since one of them would be ignored.
	Gateway *gateway.Options
}

// Controller reconciles LoadBalancer Services and Ingresses. Build it with Setup.
type Controller struct {
	provider core.Provider
	dialect  core.Dialect
	rec      *core.Reconciler
	profile  core.ClusterProfile
	enforce  bool
	cms      []types.NamespacedName
	custom   []schema.GroupVersionKind

	cache   client.Reader
	client  client.Client
	kube    kubernetes.Interface
	writer  *kube.Writer
	events  events.EventRecorder
	log     hclog.Logger
	metrics *metrics

	// seen is what the last reconcile of each object evaluated (a fingerprint of its
	// core.Result, or notExposedPrint), so a dependency's change requeues only the objects it
	// changes.
	seen sync.Map // objectID → uint64

	// evaluated, when set (tests), is called after every reconcile's evaluation.
	evaluated func(objectID)
	// mapped, when set (tests), is called with what each dependency change enqueued.
	mapped func(kind string, reqs []reconcile.Request)

	// blocked counts, per object, the reconciles in a row that met a server-side apply
	// conflict with another field manager: the exponent of its backoff.
	blocked sync.Map // objectID → int

	// inflight holds when each running reconcile started, for the liveness check.
	inflight    sync.Map // objectID → time.Time
	wedgedAfter time.Duration

	// verifier runs verifications (Options.Verify); nil when off.
	verifier *verifier
}

// objectID names a reconciled object.
type objectID struct {
	Kind string // "Service" or "Ingress"
	types.NamespacedName
}

func (id objectID) String() string { return id.Kind + " " + id.Namespace + "/" + id.Name }

// notExposedPrint is what seen holds for an object whose last reconcile found it not exposed
// (a ClusterIP Service, an Ingress of another class).
const notExposedPrint uint64 = 0

// Delays of requeues that are not the cloud's RetryError.
const (
	// conflictDelay: another writer got there first; read again soon, without an Event.
	conflictDelay = time.Second
	// blockedDelay, doubled for each reconcile in a row up to blockedMaxDelay: a field another
	// field manager owns (a GitOps tool's annotation) stays theirs until a person changes
	// something, so retrying every second only loads the API server.
	blockedDelay    = 5 * time.Second
	blockedMaxDelay = 10 * time.Minute
)

// Setup builds the controller and registers it, its watches, its metrics and its health and
// readiness checks with mgr. p is the cloud's Provider (tencent.NewProvider,
// volcengine.NewProvider, kubernetes.NewProvider); with a Provider that has no driver,
// enforcing mode reports the ErrUnsupported plan as a failure.
func Setup(mgr manager.Manager, p core.Provider, opts *Options) (*Controller, error) {
	if p == nil {
		return nil, &core.KindError{Kind: core.ErrInvalid, Msg: "controller: a Provider is required"}
	}
	if opts == nil {
		opts = &Options{}
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	log = log.Named("controller")
	cfg := mgr.GetConfig()
	w, err := kube.NewWriter(cfg, &kube.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	reg := opts.Registerer
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	ttl := opts.CapabilityTTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	c := &Controller{
		provider: p, dialect: p.Dialect(), profile: opts.Profile, enforce: opts.Enforce,
		cms: opts.ConfigMaps, cache: mgr.GetCache(), client: mgr.GetClient(), kube: cs, writer: w,
		events: mgr.GetEventRecorder(core.FieldManager), log: log, metrics: m, wedgedAfter: opts.WedgedAfter,
	}
	if c.wedgedAfter <= 0 {
		c.wedgedAfter = 5 * time.Minute
	}
	c.rec = core.NewReconciler(p, &core.ReconcilerOptions{ClusterWriter: w, Logger: log, Policy: opts.Profile.Policy, CapabilityCache: &core.CapabilityCache{TTL: ttl}})
	for _, gvk := range opts.Custom {
		if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			if meta.IsNoMatchError(err) {
				log.Info("custom kind not served; not watched", "kind", gvk.String())
				continue
			}
			return nil, err
		}
		c.custom = append(c.custom, gvk)
	}
	if opts.Verify != nil {
		if c.verifier, err = newVerifier(c, opts.Verify, reg); err != nil {
			return nil, err
		}
		if err := mgr.Add(c.verifier); err != nil {
			return nil, err
		}
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = 2
	}
	if err := c.register(mgr, workers); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("reconciles", c.wedged); err != nil {
		return nil, err
	}
	// Ready once the informers this controller reads are synced: before that, a verdict would
	// be computed from a partial cluster.
	if err := mgr.AddReadyzCheck("informers", func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("informer caches not synced yet")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Reconcile reconciles one Service (the Service controller's entry point).
func (c *Controller) reconcileService(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return c.reconcile(ctx, objectID{Kind: "Service", NamespacedName: req.NamespacedName})
}

func (c *Controller) reconcileIngress(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return c.reconcile(ctx, objectID{Kind: "Ingress", NamespacedName: req.NamespacedName})
}

// wedged fails when a reconcile has been running for longer than wedgedAfter: the worker
// is stuck, and with it (two workers) soon the whole controller; a restart recovers it.
func (c *Controller) wedged(*http.Request) error {
	var stuck error
	c.inflight.Range(func(k, v any) bool {
		if d := time.Since(v.(time.Time)); d > c.wedgedAfter {
			stuck = fmt.Errorf("reconcile of %s running for %s (limit %s)", k.(objectID), d.Round(time.Second), c.wedgedAfter)
			return false
		}
		return true
	})
	return stuck
}

func (c *Controller) reconcile(ctx context.Context, id objectID) (res reconcile.Result, err error) {
	start := time.Now()
	c.inflight.Store(id, start)
	defer func() {
		c.inflight.Delete(id)
		c.metrics.latency.WithLabelValues(id.Kind).Observe(time.Since(start).Seconds())
		if err != nil {
			c.metrics.errors.WithLabelValues(id.Kind).Inc()
			c.log.Debug("reconcile failed; retried with backoff", "object", id.String(), "error", err)
		}
	}()
	obj, err := c.get(ctx, id)
	if err != nil || obj == nil {
		if obj == nil && err == nil {
			c.forget(id)
		}
		return reconcile.Result{}, err
	}
	cl, err := c.facts(ctx, id.Namespace, obj)
	if err != nil {
		return reconcile.Result{}, err
	}
	result, evalErr := core.Evaluate(c.dialect, obj, cl, c.profile.Policy)
	if c.evaluated != nil {
		defer c.evaluated(id)
	}
	if errors.Is(evalErr, core.ErrNotExposed) {
		c.forget(id)
		c.seen.Store(id, notExposedPrint)
		// A Service turned ClusterIP, an Ingress of another class: take the verdict back.
		return reconcile.Result{}, c.unpublish(ctx, obj)
	}
	if evalErr != nil && !errors.Is(evalErr, core.ErrInvalid) {
		return reconcile.Result{}, fmt.Errorf("%s: evaluate: %w", id, evalErr)
	}
	c.seen.Store(id, fingerprint(result, evalErr))
	v := verdictOf(result, evalErr)
	if evalErr == nil {
		c.metrics.exposure(id, c.provider.Name(), string(result.Assessment.Risk), string(result.Decision.Remedy))
	}

	fixed := false
	if c.enforce && evalErr == nil {
		var stop bool
		res, stop, fixed, err = c.enforcePlan(ctx, id, obj, cl, result, &v)
		if stop {
			return res, err
		}
	}
	var was *metav1.Condition
	verified := false
	if svc, ok := obj.(*corev1.Service); ok {
		was, verified = findCondition(svc), hasCondition(svc, VerifiedConditionType)
	}
	wrote, perr := c.publish(ctx, id, obj, v)
	if perr != nil {
		if errors.Is(perr, core.ErrConflict) {
			return reconcile.Result{RequeueAfter: conflictDelay}, nil
		}
		return reconcile.Result{}, perr
	}
	if c.verifier != nil && id.Kind == "Service" {
		switch {
		case fixed:
			c.verifier.request(id.NamespacedName, c.verifier.o.AfterFix)
		case v.reason == ReasonAtRisk && (!verified || wrote && (was == nil || was.Reason != ReasonAtRisk)):
			// Turned at-risk, or at risk and never verified (verification just turned on).
			c.verifier.request(id.NamespacedName, 0)
		}
	}
	return res, err
}

// enforcePlan plans from the reconcile's one evaluation (result) and applies. stop says the
// reconcile ends here (a conflict to retry silently) without publishing a verdict; fixed that
// the plan's changes were written and the apply succeeded (a verification follows,
// Options.Verify).
func (c *Controller) enforcePlan(ctx context.Context, id objectID, obj client.Object, cl *core.Cluster, result *core.Result, v *verdict) (res reconcile.Result, stop, fixed bool, err error) {
	plan, err := c.rec.PlanEvaluated(ctx, obj, cl, result)
	if err != nil {
		res, stop, err = c.failed(id, obj, "Plan", err)
		return res, stop, false, err
	}
	if plan.Blocked != nil {
		v.block(plan.Blocked)
		return reconcile.Result{}, false, false, nil
	}
	if plan.Empty() {
		return reconcile.Result{}, false, false, nil
	}
	out, err := c.rec.Apply(ctx, plan)
	if manager, field, ok := fieldConflict(err); ok {
		return c.blockedBy(id, v, manager, field), false, false, nil
	}
	c.blocked.Delete(id)
	if out != nil {
		for _, ch := range out.Written {
			c.metrics.writes.WithLabelValues(string(ch.By)).Inc()
			c.events.Eventf(obj, nil, corev1.EventTypeNormal, "Changed", "Apply", "%s", truncate(ch.String(), noteMax))
		}
	}
	if err != nil {
		res, stop, err = c.failed(id, obj, "Apply", err)
		return res, stop, false, err
	}
	return reconcile.Result{}, false, out != nil && len(out.Written) > 0, nil
}

// fieldConflict returns the other field manager and the field of a server-side apply
// conflict (the API server's FieldManagerConflict cause, whose message reads
// `conflict with "<manager>"...`); a resourceVersion conflict is not one.
func fieldConflict(err error) (manager, field string, ok bool) {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) || !apierrors.IsConflict(err) {
		return "", "", false
	}
	d := status.Status().Details
	if d == nil {
		return "", "", false
	}
	for _, cause := range d.Causes {
		if cause.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		manager = cause.Message
		if _, rest, found := strings.Cut(cause.Message, `"`); found {
			manager, _, _ = strings.Cut(rest, `"`)
		}
		return manager, cause.Field, true
	}
	return "", "", false
}

// blockedBy makes a permanent conflict a state: the verdict says Blocked and names the
// other manager and the field (publish records it as one Warning Event, when the verdict
// changes), and the object is looked at again after an exponential backoff rather than
// every second.
func (c *Controller) blockedBy(id objectID, v *verdict, manager, field string) reconcile.Result {
	n := 1
	if prev, ok := c.blocked.Load(id); ok {
		n = prev.(int) + 1
	}
	c.blocked.Store(id, n)
	msg := fmt.Sprintf("field %s is owned by field manager %q; loopguard does not take it over (server-side apply without force): change or release it there", field, manager)
	v.reason = ReasonBlocked
	v.message = truncate(v.message+"; blocked: "+msg, noteMax)
	delay := blockedMaxDelay
	if n < 12 {
		delay = min(blockedDelay<<(n-1), blockedMaxDelay)
	}
	c.log.Debug("blocked by another field manager", "object", id.String(), "manager", manager, "field", field, "retry-after", delay)
	return reconcile.Result{RequeueAfter: delay}
}

// failed turns a plan or apply error into the controller's answer: a RetryError requeues after
// its delay, a conflict requeues silently, anything else is a Warning Event and an error (the
// workqueue backs off).
func (c *Controller) failed(id objectID, obj client.Object, action string, err error) (reconcile.Result, bool, error) {
	var retry *core.RetryError
	switch {
	case errors.As(err, &retry):
		c.log.Debug("retry later", "object", id.String(), "after", retry.After, "reason", err)
		return reconcile.Result{RequeueAfter: retry.After}, false, nil
	case errors.Is(err, core.ErrConflict):
		c.log.Debug("conflict; requeued", "object", id.String())
		return reconcile.Result{RequeueAfter: conflictDelay}, true, nil
	}
	c.events.Eventf(obj, nil, corev1.EventTypeWarning, action+"Failed", action, "%s", truncate(err.Error(), noteMax))
	return reconcile.Result{}, true, fmt.Errorf("%s: %w", id, err)
}

// get reads the object from the cache as a copy with its TypeMeta set; nil when it is gone.
func (c *Controller) get(ctx context.Context, id objectID) (client.Object, error) {
	var obj client.Object
	switch id.Kind {
	case "Service":
		obj = &corev1.Service{}
	default:
		obj = &networkingv1.Ingress{}
	}
	if err := c.cache.Get(ctx, id.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	switch o := obj.(type) {
	case *corev1.Service:
		o.APIVersion, o.Kind = "v1", "Service"
	case *networkingv1.Ingress:
		o.APIVersion, o.Kind = "networking.k8s.io/v1", "Ingress"
	}
	return obj, nil
}

func (c *Controller) forget(id objectID) {
	c.seen.Delete(id)
	c.metrics.forget(id)
	if c.verifier != nil && id.Kind == "Service" {
		c.verifier.forget(id.NamespacedName)
	}
}
