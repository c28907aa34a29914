package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/loopguard/loopguard/adapters/kube"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/gateway"
)

// GatewayController reconciles Gateway API Gateways: it judges each through the LoadBalancer
// Service its implementation generated (providers/gateway), publishes the verdict on the
// Gateway (the loopguard.io/verdict annotation and an Event), and in enforcing mode applies
// the plan, which writes the Gateway's spec.infrastructure (or the implementation's own
// resource), never the generated Service. Build it with SetupGateways, beside Setup.
type GatewayController struct {
	rec     *core.Reconciler
	dialect core.Dialect
	profile core.ClusterProfile
	enforce bool
	cms     []types.NamespacedName
	// extra are the implementations' kinds the cluster serves (GatewayClass, EnvoyProxy, ...).
	extra []schema.GroupVersionKind
	// params reads and watches the ConfigMaps Gateways name (Istio's), those alone.
	params *configMapWatches
	// gwOpts are the Gateway layer's options the dialect was built with.
	gwOpts gateway.Options
	cache  client.Reader
	writer *kube.Writer
	// verdicts writes the verdict annotation under a field manager of its own: a server-side
	// apply under loopguard's manager that named only the annotation would take back the
	// remedy the Reconciler applied to the same Gateway under that manager, and the next
	// remedy apply would take back the annotation.
	verdicts *kube.Writer
	events   events.EventRecorder
	log      hclog.Logger
	// unreadable is, per Gateway, the last ConfigMapsUnreadable Event's note, so that a
	// reconcile retried with the same problem records no Event again.
	unreadable sync.Map // types.NamespacedName → string
}

// VerdictFieldManager owns the verdict annotation on Gateways.
const VerdictFieldManager = core.FieldManager + "-verdict"

// ReasonConfigMapsUnreadable is the reason of the Warning Event on a Gateway whose ConfigMaps
// (Istio's parameters and class defaults) could not be read: the API server refused the list
// (a ClusterRole without list and watch on configmaps) or did not answer. The Gateway's
// verdict is left as it was rather than judged without them.
const ReasonConfigMapsUnreadable = "ConfigMapsUnreadable"

var gatewayGVK = schema.GroupVersionKind{Group: gateway.Group, Version: "v1", Kind: "Gateway"}

// SetupGateways registers the Gateway reconciler with mgr. p is the cloud's Provider, as for
// Setup; it is wrapped with gateway.Wrap and opts.Gateway. A cluster that does not serve Gateways gets no
// reconciler and no error (nil, nil), so a host can always call it.
func SetupGateways(mgr manager.Manager, p core.Provider, opts *Options) (*GatewayController, error) {
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
	log = log.Named("gateway")
	if _, err := mgr.GetRESTMapper().RESTMapping(gatewayGVK.GroupKind(), gatewayGVK.Version); err != nil {
		if meta.IsNoMatchError(err) {
			log.Info("Gateway API is not served; Gateways are not reconciled")
			return nil, nil
		}
		return nil, err
	}
	w, err := kube.NewWriter(mgr.GetConfig(), &kube.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	verdicts, err := kube.NewWriter(mgr.GetConfig(), &kube.Options{Logger: log, FieldManager: VerdictFieldManager})
	if err != nil {
		return nil, err
	}
	wp, ok := p.(*gateway.Provider)
	switch {
	case ok && opts.Gateway != nil:
		return nil, &core.KindError{Kind: core.ErrInvalid, Msg: "controller: Options.Gateway is set and the Provider is already wrapped by gateway.Wrap with options of its own; give one of them"}
	case !ok:
		wp = gateway.Wrap(p, opts.Gateway)
	}
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	pctx, pcancel := context.WithCancel(context.Background())
	if err := mgr.Add(configMapWatchesRunnable{cancel: pcancel}); err != nil {
		pcancel()
		return nil, err
	}
	g := &GatewayController{
		dialect: wp.Dialect(), profile: opts.Profile, enforce: opts.Enforce, cms: opts.ConfigMaps,
		params: newConfigMapWatches(pctx, cs),
		cache:  mgr.GetCache(), writer: w, verdicts: verdicts, events: mgr.GetEventRecorder(core.FieldManager), log: log,
		rec: core.NewReconciler(wp, &core.ReconcilerOptions{ClusterWriter: w, Logger: log, Policy: opts.Profile.Policy}),
	}
	if d, ok := wp.Dialect().(*gateway.Dialect); ok {
		g.gwOpts = d.Options()
	}
	nsd, cl := gateway.Resources()
	for _, gvr := range append(nsd, cl...) {
		gvk, err := mgr.GetRESTMapper().KindFor(gvr)
		if err != nil {
			continue // not served: nothing of that kind to read
		}
		if gvk != gatewayGVK {
			g.extra = append(g.extra, gvk)
		}
	}
	implKinds := len(g.extra)
	// The cloud's own kinds (TKE's TkeServiceConfig), as Setup reads them.
	for _, gvk := range opts.Custom {
		if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			g.extra = append(g.extra, gvk)
		}
	}
	gw := &unstructured.Unstructured{}
	gw.SetGroupVersionKind(gatewayGVK)
	workers := opts.Workers
	if workers <= 0 {
		workers = 2
	}
	b := ctrl.NewControllerManagedBy(mgr).Named("loopguard-gateway").
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(gw).
		// The generated Service changes (created, its endpoints, an annotation copied): the
		// Gateway's verdict may change with it.
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(g.gatewaysOf)).
		// So may a ConfigMap a Gateway names (Istio's parameters and class defaults).
		WatchesRawSource(source.Channel(g.params.events, handler.EnqueueRequestsFromMapFunc(g.gatewaysNamingConfigMap)))
	// And the GatewayClasses and the implementations' own objects (a CiliumGatewayClassConfig,
	// an EnvoyProxy), for the Gateways that name them.
	for _, gvk := range g.extra[:implKinds] {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		b = b.Watches(u, handler.EnqueueRequestsFromMapFunc(g.gatewaysReferencing))
	}
	if err := b.Complete(reconcile.Func(g.reconcile)); err != nil {
		return nil, err
	}
	return g, nil
}

// gatewaysOf maps a Service to the Gateways judged through it: the one whose implementation
// generated it, every Gateway of the class for Envoy Gateway's merged Service (labelled with
// the class), or, for a LoadBalancer Service no Gateway generated, every Gateway of a class
// whose implementation serves its Gateways from its own Service (Traefik, docs/gateway.md), since
// that Service names no Gateway.
func (g *GatewayController) gatewaysOf(ctx context.Context, o client.Object) []reconcile.Request {
	svc, ok := o.(*corev1.Service)
	if !ok {
		return nil
	}
	if owner, ok := gateway.OwnerOf(svc); ok {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: owner.Namespace, Name: owner.Name}}}
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return nil
	}
	if class, ok := gateway.MergedClassOf(svc); ok {
		// Envoy Gateway's one Service for every Gateway of a class (mergeGateways).
		return g.gatewaysOfClasses(ctx, map[string]bool{class: true})
	}
	classes := &unstructured.UnstructuredList{}
	classes.SetGroupVersionKind(gatewayGVK.GroupVersion().WithKind("GatewayClassList"))
	if err := g.cache.List(ctx, classes); err != nil {
		return nil
	}
	published := map[string]bool{}
	for _, c := range classes.Items {
		name, _, _ := unstructured.NestedString(c.Object, "spec", "controllerName")
		if gateway.ImplementationOf(name) == gateway.Traefik {
			published[c.GetName()] = true
		}
	}
	if len(published) == 0 {
		return nil
	}
	return g.gatewaysOfClasses(ctx, published)
}

// gatewaysOfClasses lists, as requests, the Gateways of the named GatewayClasses.
func (g *GatewayController) gatewaysOfClasses(ctx context.Context, classes map[string]bool) []reconcile.Request {
	gws := &unstructured.UnstructuredList{}
	gws.SetGroupVersionKind(gatewayGVK.GroupVersion().WithKind("GatewayList"))
	if err := g.cache.List(ctx, gws); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, gw := range gws.Items {
		if class, _, _ := unstructured.NestedString(gw.Object, "spec", "gatewayClassName"); classes[class] {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: gw.GetNamespace(), Name: gw.GetName()}})
		}
	}
	return out
}

func (g *GatewayController) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	gw := &unstructured.Unstructured{}
	gw.SetGroupVersionKind(gatewayGVK)
	if err := g.cache.Get(ctx, req.NamespacedName, gw); err != nil {
		if apierrors.IsNotFound(err) {
			g.unreadable.Delete(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	gw = gw.DeepCopy()
	cl, err := g.facts(ctx, gw)
	if err != nil {
		var unread *configMapsUnreadable
		if errors.As(err, &unread) {
			// Judged without them, the Gateway could be called at risk or safe against what
			// they say: its verdict stays as it was, and the Event says what is missing. The
			// error retries the reconcile with backoff.
			const kept = "; the verdict is left as it was"
			note := truncate(err.Error(), noteMax-len(kept)) + kept
			if prev, ok := g.unreadable.Load(req.NamespacedName); !ok || prev.(string) != note {
				g.unreadable.Store(req.NamespacedName, note)
				g.events.Eventf(gw, nil, corev1.EventTypeWarning, ReasonConfigMapsUnreadable, "Evaluate", "%s", note)
			}
		}
		return reconcile.Result{}, fmt.Errorf("Gateway %s: %w", req.NamespacedName, err)
	}
	g.unreadable.Delete(req.NamespacedName)
	res, evalErr := core.Evaluate(g.dialect, gw, cl, g.profile.Policy)
	if errors.Is(evalErr, core.ErrNotExposed) {
		if _, had := gw.GetAnnotations()[AnnotationVerdict]; had {
			// No longer a load-balancer exposure (its class's CiliumGatewayClassConfig made the
			// Service a NodePort, say): the verdict published before is taken back, as the
			// Service reconciler takes back a Service's when it stops being a LoadBalancer.
			if err := g.verdicts.Apply(ctx, verdictPatch(gw, nil)); err != nil && !errors.Is(err, core.ErrConflict) {
				return reconcile.Result{}, err
			}
		}
		return reconcile.Result{}, nil
	}
	if evalErr != nil && !errors.Is(evalErr, core.ErrInvalid) {
		return reconcile.Result{}, fmt.Errorf("Gateway %s: evaluate: %w", req.NamespacedName, evalErr)
	}
	v := verdictOf(res, evalErr)
	var result reconcile.Result
	if g.enforce && evalErr == nil {
		p, err := g.rec.PlanEvaluated(ctx, gw, cl, res)
		if err == nil && p.Blocked != nil {
			v.block(p.Blocked)
		}
		if err == nil && p.Blocked == nil && !p.Empty() {
			var out *core.Outcome
			out, err = g.rec.Apply(ctx, p)
			if out != nil {
				for _, ch := range out.Written {
					g.events.Eventf(gw, nil, corev1.EventTypeNormal, "Changed", "Apply", "%s", truncate(ch.String(), noteMax))
				}
			}
		}
		var retry *core.RetryError
		switch {
		case errors.As(err, &retry):
			result.RequeueAfter = retry.After
		case errors.Is(err, core.ErrConflict):
			return reconcile.Result{RequeueAfter: conflictDelay}, nil
		case err != nil:
			g.events.Eventf(gw, nil, corev1.EventTypeWarning, "ApplyFailed", "Apply", "%s", truncate(err.Error(), noteMax))
			return reconcile.Result{}, fmt.Errorf("Gateway %s: %w", req.NamespacedName, err)
		}
	}
	want := v.reason + ": " + v.message
	if gw.GetAnnotations()[AnnotationVerdict] == want {
		return result, nil
	}
	if err := g.verdicts.Apply(ctx, verdictPatch(gw, map[string]string{AnnotationVerdict: want})); err != nil {
		if errors.Is(err, core.ErrConflict) {
			return reconcile.Result{RequeueAfter: conflictDelay}, nil
		}
		return reconcile.Result{}, err
	}
	g.events.Eventf(gw, nil, v.eventType(), v.reason, "Evaluate", "%s", v.message)
	g.log.Info("verdict", "object", "Gateway "+req.String(), "reason", v.reason, "message", v.message)
	return result, nil
}

// verdictPatch is what the verdict field manager applies to gw: the verdict annotation, or,
// with none, nothing, which removes the one it applied before.
func verdictPatch(gw *unstructured.Unstructured, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gatewayGVK)
	u.SetNamespace(gw.GetNamespace())
	u.SetName(gw.GetName())
	if annotations != nil {
		u.SetAnnotations(annotations)
	}
	return u
}

// facts reads what gw's evaluation reads from the cache: Nodes, Services, EndpointSlices and
// Pods of every namespace (the generated Service may live in the implementation's namespace,
// the clients anywhere), the named ConfigMaps, the Gateway API and implementation objects the
// cluster serves, and, from their own watches, the ConfigMaps gw names (Istio's).
func (g *GatewayController) facts(ctx context.Context, gw *unstructured.Unstructured) (*core.Cluster, error) {
	shared := client.UnsafeDisableDeepCopy
	var objs []runtime.Object
	var nodes corev1.NodeList
	if err := g.cache.List(ctx, &nodes, shared); err != nil {
		return nil, fmt.Errorf("list Nodes: %w", err)
	}
	for i := range nodes.Items {
		objs = append(objs, &nodes.Items[i])
	}
	var svcs corev1.ServiceList
	if err := g.cache.List(ctx, &svcs, shared); err != nil {
		return nil, fmt.Errorf("list Services: %w", err)
	}
	for i := range svcs.Items {
		objs = append(objs, &svcs.Items[i])
	}
	var slices discoveryv1.EndpointSliceList
	if err := g.cache.List(ctx, &slices, shared); err != nil {
		return nil, fmt.Errorf("list EndpointSlices: %w", err)
	}
	for i := range slices.Items {
		objs = append(objs, &slices.Items[i])
	}
	pods, err := listPods(ctx, g.cache, "", nil)
	if err != nil {
		return nil, fmt.Errorf("list Pods: %w", err)
	}
	for _, p := range pods {
		objs = append(objs, p)
	}
	for _, key := range g.cms {
		var cm corev1.ConfigMap
		if err := g.cache.Get(ctx, key, &cm); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("get ConfigMap %s: %w", key, err)
		}
		objs = append(objs, &cm)
	}
	// own: gw and the classes, of which gateway.ConfigMaps names the ConfigMaps gw needs.
	own := []runtime.Object{gw}
	for _, gvk := range append([]schema.GroupVersionKind{gatewayGVK}, g.extra...) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := g.cache.List(ctx, list); err != nil {
			return nil, fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			objs = append(objs, &list.Items[i])
			if gvk.Kind == "GatewayClass" {
				own = append(own, &list.Items[i])
			}
		}
	}
	cms, err := g.params.read(ctx, gateway.ConfigMaps(own, &g.gwOpts))
	if err != nil {
		return nil, err
	}
	objs = append(objs, cms...)
	return core.NewCluster(g.profile, objs...)
}
