package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilwait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/loopguard/loopguard/providers/gateway"
)

// configMapSyncTimeout bounds the wait for a ConfigMap watch's first list: a reconcile (or an
// admission review, which has seconds) that cannot read a Gateway's ConfigMaps fails and is
// retried instead of waiting for ever. A list the API server refused (a ServiceAccount without
// list on configmaps) fails the read at once, without waiting for this.
const configMapSyncTimeout = 5 * time.Second

// configMapWatches reads and watches the ConfigMaps Gateways name (providers/gateway
// ConfigMaps: an Istio Gateway's spec.infrastructure.parametersRef, Istio's class defaults),
// and only those. The manager's cache is not used for them: it caches a kind in a fixed set of
// namespaces (ManagerConfig.ConfigMaps), and a Gateway may name a ConfigMap in any namespace,
// so caching them there would mean caching every ConfigMap of the cluster, often the larger
// part of its objects (Helm releases' values, dashboards, certificates' bundles). Instead each
// named ConfigMap gets an informer of its own, listing and watching that one name (a
// metadata.name field selector), and each namespace of class defaults one that lists by
// label: started when a reconcile first needs it, stopped with the manager. Their events go
// to the Gateway reconciler (events), which maps them to the Gateways that name them.
type configMapWatches struct {
	cs     kubernetes.Interface
	events chan event.GenericEvent
	// ctx lives as long as the manager: the informers run under it.
	ctx context.Context

	mu        sync.Mutex
	informers map[gateway.ConfigMapRef]*configMapInformer
}

type configMapInformer struct {
	toolscache.SharedIndexInformer
	// lastErr is the last list or watch error, for the message when the first list never
	// succeeds.
	mu      sync.Mutex
	lastErr error
}

func newConfigMapWatches(ctx context.Context, cs kubernetes.Interface) *configMapWatches {
	return &configMapWatches{cs: cs, ctx: ctx, events: make(chan event.GenericEvent, 64), informers: map[gateway.ConfigMapRef]*configMapInformer{}}
}

// read returns the ConfigMaps refs name, as their informers hold them (a named one that does
// not exist is left out), starting the informers not started yet. When an informer has not
// listed, because the API server refused its list or did not answer within
// configMapSyncTimeout, nothing is returned: a Gateway judged as if those ConfigMaps did not
// exist would get a verdict they may contradict. The error is a *configMapsUnreadable naming
// each ConfigMap not read and why.
func (w *configMapWatches) read(ctx context.Context, refs []gateway.ConfigMapRef) ([]runtime.Object, error) {
	infs := make([]*configMapInformer, len(refs))
	for i, r := range refs {
		infs[i] = w.informer(r) // all started before any wait, so they list side by side
	}
	var out []runtime.Object
	unread := &configMapsUnreadable{}
	for i, inf := range infs {
		if err := inf.waitListed(ctx); err != nil {
			unread.refs, unread.errs = append(unread.refs, refs[i]), append(unread.errs, err)
			continue
		}
		for _, o := range inf.GetStore().List() {
			if cm, ok := o.(*corev1.ConfigMap); ok {
				out = append(out, cm)
			}
		}
	}
	if len(unread.refs) > 0 {
		return nil, unread
	}
	return out, nil
}

// waitListed waits until the informer has listed, the API server has refused its list, or
// configMapSyncTimeout passes; another error (a connection lost) may pass while it waits. A
// failed list is retried by the informer (with client-go's backoff, less than a minute apart),
// so a rule granted later takes effect without a restart.
func (inf *configMapInformer) waitListed(ctx context.Context) error {
	if inf.HasSynced() {
		return nil
	}
	err := utilwait.PollUntilContextTimeout(ctx, 20*time.Millisecond, configMapSyncTimeout, true, func(context.Context) (bool, error) {
		if inf.HasSynced() {
			return true, nil
		}
		inf.mu.Lock()
		defer inf.mu.Unlock()
		if apierrors.IsForbidden(inf.lastErr) || apierrors.IsUnauthorized(inf.lastErr) {
			return false, inf.lastErr
		}
		return false, nil
	})
	if err != nil && utilwait.Interrupted(err) {
		err = fmt.Errorf("not listed after %v", configMapSyncTimeout)
		inf.mu.Lock()
		if inf.lastErr != nil {
			err = inf.lastErr
		}
		inf.mu.Unlock()
	}
	return err
}

// configMapsUnreadable is a read of the ConfigMaps a Gateway's evaluation needs that did not
// complete: refs[i] could not be read because of errs[i] (the API server's answer to the list,
// when there was one).
type configMapsUnreadable struct {
	refs []gateway.ConfigMapRef
	errs []error
}

func (e *configMapsUnreadable) Error() string {
	parts := make([]string, len(e.refs))
	forbidden := false
	for i, r := range e.refs {
		parts[i] = "cannot read " + describeRef(r) + ": " + e.errs[i].Error()
		forbidden = forbidden || apierrors.IsForbidden(e.errs[i])
	}
	msg := strings.Join(parts, "; ")
	if forbidden {
		msg += ". The controller's ServiceAccount needs list and watch on configmaps in every namespace (deploy/base/rbac.yaml's ClusterRole; docs/permissions.md)"
	}
	return msg
}

func (e *configMapsUnreadable) Unwrap() []error { return e.errs }

func describeRef(r gateway.ConfigMapRef) string {
	if r.Name != "" {
		return "ConfigMap " + r.Namespace + "/" + r.Name
	}
	return "the ConfigMaps of " + r.Namespace + " labelled " + r.LabelSelector
}

// informer returns the running informer for r, starting it if need be.
func (w *configMapWatches) informer(r gateway.ConfigMapRef) *configMapInformer {
	w.mu.Lock()
	defer w.mu.Unlock()
	if inf, ok := w.informers[r]; ok {
		return inf
	}
	narrow := func(o *metav1.ListOptions) {
		if r.Name != "" {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", r.Name).String()
		} else {
			o.LabelSelector = r.LabelSelector
		}
	}
	cms := w.cs.CoreV1().ConfigMaps(r.Namespace)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			narrow(&o)
			return cms.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			narrow(&o)
			return cms.Watch(ctx, o)
		},
	}
	inf := &configMapInformer{SharedIndexInformer: toolscache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{})}
	_ = inf.SetWatchErrorHandler(func(_ *toolscache.Reflector, err error) {
		inf.mu.Lock()
		inf.lastErr = err
		inf.mu.Unlock()
	})
	_ = inf.SetTransform(func(o any) (any, error) {
		if m, ok := o.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		return o, nil
	})
	// The initial list's objects are read by the reconcile that started the informer; only
	// later changes are events.
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(o any, initial bool) {
			if !initial {
				w.send(o)
			}
		},
		UpdateFunc: func(_, o any) { w.send(o) },
		DeleteFunc: func(o any) {
			if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			w.send(o)
		},
	})
	go inf.RunWithContext(w.ctx)
	w.informers[r] = inf
	return inf
}

func (w *configMapWatches) send(o any) {
	cm, ok := o.(*corev1.ConfigMap)
	if !ok {
		return
	}
	select {
	case w.events <- event.GenericEvent{Object: cm}:
	case <-w.ctx.Done():
	}
}

// configMapWatchesRunnable ties the informers to the manager's life on every replica (the
// admission webhook reads ConfigMaps too, leader or not).
type configMapWatchesRunnable struct{ cancel context.CancelFunc }

func (r configMapWatchesRunnable) Start(ctx context.Context) error {
	<-ctx.Done()
	r.cancel()
	return nil
}

func (configMapWatchesRunnable) NeedLeaderElection() bool { return false }

// gatewaysNamingConfigMap maps a ConfigMap to the Gateways it shapes: the Istio Gateways of
// its namespace whose spec.infrastructure.parametersRef names it, and, for Istio's class
// defaults (labelled gateway.istio.io/defaults-for-class, in istiod's namespace), every Gateway
// of that class.
func (g *GatewayController) gatewaysNamingConfigMap(ctx context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	if class := o.GetLabels()[istioDefaultsForClass]; class != "" && o.GetNamespace() == g.gwOpts.IstioNamespace {
		out = g.gatewaysOfClasses(ctx, map[string]bool{class: true})
	}
	gws := &unstructured.UnstructuredList{}
	gws.SetGroupVersionKind(gatewayGVK.GroupVersion().WithKind("GatewayList"))
	if err := g.cache.List(ctx, gws, client.InNamespace(o.GetNamespace())); err != nil {
		return out
	}
	for _, gw := range gws.Items {
		ref, _, _ := unstructured.NestedStringMap(gw.Object, "spec", "infrastructure", "parametersRef")
		if ref["group"] == "" && ref["kind"] == "ConfigMap" && ref["name"] == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: gw.GetNamespace(), Name: gw.GetName()}})
		}
	}
	return out
}

// istioDefaultsForClass is Istio's label on a GatewayClass's defaults ConfigMap
// (pilot/pkg/config/kube/gatewaycommon/gateway_utils.go GatewayClassDefaults).
const istioDefaultsForClass = "gateway.istio.io/defaults-for-class"

// gatewaysReferencing maps an implementation's object (an EnvoyProxy, NginxProxy,
// ContourDeployment, GatewayParameters, CiliumGatewayClassConfig, a policy) or a GatewayClass
// to the Gateways whose evaluation reads it: the Gateways of a class named, or of every class
// whose spec.parametersRef names it; the Gateways of its namespace whose
// spec.infrastructure.parametersRef names it; those of its namespace a policy's targetRefs
// name or its targetSelectors match (gateway.PolicyTargets), and the Gateways of the
// ListenerSets it targets (gateway.PolicyTargetsListenerSet); for a ListenerSet, the Gateway
// its parentRef names; for a ContourConfiguration, the Gateway Contour's provisioner made it
// for. On an update
// handler.EnqueueRequestsFromMapFunc maps the old object and the new one, so the Gateways a
// changed policy stops naming or selecting are judged again too, as on a delete those the
// deleted policy did. A Gateway whose labels change, so that a selector starts or stops
// matching it, is judged again through its own watch (For), which sees every change to it.
func (g *GatewayController) gatewaysReferencing(ctx context.Context, o client.Object) []reconcile.Request {
	gvk := o.GetObjectKind().GroupVersionKind()
	u, _ := o.(*unstructured.Unstructured)
	switch {
	case gvk.Group == gateway.Group && gvk.Kind == "GatewayClass":
		return g.gatewaysOfClasses(ctx, map[string]bool{o.GetName(): true})
	case gvk.Group == gateway.Group && gvk.Kind == "ListenerSet" && u != nil:
		// Its listeners are the Gateway's its parentRef names (when that Gateway admits it).
		if gw, ok := gateway.ListenerSetParent(u); ok {
			return []reconcile.Request{{NamespacedName: gw}}
		}
		return nil
	case gvk.Group == "projectcontour.io" && gvk.Kind == "ContourConfiguration":
		// What the Contour provisioned for one Gateway reads (contourconfig-<gateway>).
		if gw, ok := gateway.ContourConfigurationGateway(o); ok {
			return []reconcile.Request{{NamespacedName: gw}}
		}
		return nil
	}
	classes := &unstructured.UnstructuredList{}
	classes.SetGroupVersionKind(gatewayGVK.GroupVersion().WithKind("GatewayClassList"))
	named := map[string]bool{}
	if err := g.cache.List(ctx, classes); err == nil {
		for _, c := range classes.Items {
			r, _, _ := unstructured.NestedStringMap(c.Object, "spec", "parametersRef")
			if r["group"] == gvk.Group && r["kind"] == gvk.Kind && r["name"] == o.GetName() && r["namespace"] == o.GetNamespace() {
				named[c.GetName()] = true
			}
		}
	}
	var out []reconcile.Request
	if len(named) > 0 {
		out = g.gatewaysOfClasses(ctx, named)
	}
	gws := &unstructured.UnstructuredList{}
	gws.SetGroupVersionKind(gatewayGVK.GroupVersion().WithKind("GatewayList"))
	if err := g.cache.List(ctx, gws, client.InNamespace(o.GetNamespace())); err != nil {
		return out
	}
	for _, gw := range gws.Items {
		ref, _, _ := unstructured.NestedStringMap(gw.Object, "spec", "infrastructure", "parametersRef")
		match := ref["group"] == gvk.Group && ref["kind"] == gvk.Kind && ref["name"] == o.GetName()
		if !match && u != nil {
			match = gateway.PolicyTargets(u, &gw)
		}
		if match {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: gw.GetNamespace(), Name: gw.GetName()}})
		}
	}
	// A ClientTrafficPolicy for a ListenerSet of its namespace (by targetRefs or
	// targetSelectors of kind ListenerSet) configures listeners of the Gateway that ListenerSet
	// attaches to, which may be in another namespace.
	if u != nil && gvk.Kind == "ClientTrafficPolicy" {
		sets := &unstructured.UnstructuredList{}
		sets.SetGroupVersionKind(gatewayGVK.GroupVersion().WithKind("ListenerSetList"))
		if err := g.cache.List(ctx, sets, client.InNamespace(o.GetNamespace())); err == nil { // not served: none
			for i := range sets.Items {
				if !gateway.PolicyTargetsListenerSet(u, &sets.Items[i]) {
					continue
				}
				if gw, ok := gateway.ListenerSetParent(&sets.Items[i]); ok {
					out = append(out, reconcile.Request{NamespacedName: gw})
				}
			}
		}
	}
	return out
}
