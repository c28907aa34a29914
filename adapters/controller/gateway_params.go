package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
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
// retried instead of waiting for ever (a ServiceAccount without list on configmaps).
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
// not exist is left out), starting the informers not started yet.
func (w *configMapWatches) read(ctx context.Context, refs []gateway.ConfigMapRef) ([]runtime.Object, error) {
	var out []runtime.Object
	for _, r := range refs {
		inf := w.informer(r)
		if !inf.HasSynced() {
			wctx, cancel := context.WithTimeout(ctx, configMapSyncTimeout)
			synced := toolscache.WaitForCacheSync(wctx.Done(), inf.HasSynced)
			cancel()
			if !synced {
				inf.mu.Lock()
				err := inf.lastErr
				inf.mu.Unlock()
				if err == nil {
					err = errors.New("not listed yet")
				}
				return nil, fmt.Errorf("read ConfigMap %s: %w", describeRef(r), err)
			}
		}
		for _, o := range inf.GetStore().List() {
			if cm, ok := o.(*corev1.ConfigMap); ok {
				out = append(out, cm)
			}
		}
	}
	return out, nil
}

func describeRef(r gateway.ConfigMapRef) string {
	if r.Name != "" {
		return r.Namespace + "/" + r.Name
	}
	return "in " + r.Namespace + " labelled " + r.LabelSelector
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
// name or its targetSelectors match (gateway.PolicyTargets). On an update
// handler.EnqueueRequestsFromMapFunc maps the old object and the new one, so the Gateways a
// changed policy stops naming or selecting are judged again too, as on a delete those the
// deleted policy did. A Gateway whose labels change, so that a selector starts or stops
// matching it, is judged again through its own watch (For), which sees every change to it.
func (g *GatewayController) gatewaysReferencing(ctx context.Context, o client.Object) []reconcile.Request {
	gvk := o.GetObjectKind().GroupVersionKind()
	if gvk.Group == gateway.Group && gvk.Kind == "GatewayClass" {
		return g.gatewaysOfClasses(ctx, map[string]bool{o.GetName(): true})
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
	u, _ := o.(*unstructured.Unstructured)
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
	return out
}
