package controller

import (
	"context"
	"errors"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/internal/ingress"
)

// ingressBackendIndex indexes Ingresses by the Services they route to ("namespace/name").
const ingressBackendIndex = "loopguard.io/backend-service"

func (c *Controller) register(mgr manager.Manager, workers int) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &networkingv1.Ingress{}, ingressBackendIndex,
		func(o client.Object) []string {
			ing := o.(*networkingv1.Ingress)
			var out []string
			for _, n := range ingress.BackendNames(ing) {
				out = append(out, ing.Namespace+"/"+n)
			}
			return out
		}); err != nil {
		return err
	}
	for _, o := range []client.Object{&corev1.Service{}, &networkingv1.Ingress{}} {
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), o, clientsIndex, declaresClients); err != nil {
			return err
		}
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Service{}, loadBalancerIndex, func(o client.Object) []string {
		if isLoadBalancer(o) {
			return []string{"true"}
		}
		return nil
	}); err != nil {
		return err
	}
	opts := controller.Options{MaxConcurrentReconciles: workers}

	svc := ctrl.NewControllerManagedBy(mgr).Named("loopguard-service").WithOptions(opts).
		For(&corev1.Service{}, builder.WithPredicates(wasOrIsLoadBalancer, notOwnVerdict)).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(c.sliceToService))
	svc = c.dependencies(svc, "Service")
	if err := svc.Complete(reconcile.Func(c.reconcileService)); err != nil {
		return err
	}

	ing := ctrl.NewControllerManagedBy(mgr).Named("loopguard-ingress").WithOptions(opts).
		For(&networkingv1.Ingress{}, builder.WithPredicates(notOwnVerdict)).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(c.serviceToIngresses)).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(c.sliceToIngresses))
	ing = c.dependencies(ing, "Ingress")
	return ing.Complete(reconcile.Func(c.reconcileIngress))
}

// dependencies adds the watches shared by both kinds: Nodes, declared client Pods, the named
// ConfigMaps and the custom objects.
func (c *Controller) dependencies(b *builder.Builder, kind string) *builder.Builder {
	b = b.Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		return c.affected(ctx, kind, nil)
	}), builder.WithPredicates(nodeChanged))
	b = b.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		keep := func(obj client.Object) bool { return c.declaresClient(obj, o) }
		if !c.profileSelects(o) {
			// Only an object's own annotation can declare this Pod a client: look at those
			// objects only, not at every cached one for each of 50,000 Pod events.
			return c.affectedAmong(ctx, kind, c.declaring(ctx, kind), keep)
		}
		return c.affected(ctx, kind, keep)
	}), builder.WithPredicates(podChanged))
	if len(c.cms) > 0 {
		b = b.Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
			return c.affected(ctx, kind, nil)
		}), builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			for _, k := range c.cms {
				if k.Namespace == o.GetNamespace() && k.Name == o.GetName() {
					return true
				}
			}
			return false
		})))
	}
	for _, gvk := range c.custom {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		b = b.Watches(u, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return c.referencing(ctx, kind, o)
		}))
	}
	return b
}

// notOwnVerdict drops the update events of loopguard's own verdict writes (the condition, the
// annotation): they change nothing an evaluation reads, and reconciling on them would defeat
// a RetryError's delay.
var notOwnVerdict = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		if o.GetGeneration() != n.GetGeneration() || !reflect.DeepEqual(o.GetLabels(), n.GetLabels()) ||
			!sameExceptVerdict(o.GetAnnotations(), n.GetAnnotations()) {
			return true
		}
		// A Service's generation does not move when its spec changes: compare the spec.
		switch os := o.(type) {
		case *corev1.Service:
			ns := n.(*corev1.Service)
			return !reflect.DeepEqual(os.Spec, ns.Spec) || !reflect.DeepEqual(os.Status.LoadBalancer, ns.Status.LoadBalancer)
		case *networkingv1.Ingress:
			ns := n.(*networkingv1.Ingress)
			return !reflect.DeepEqual(os.Spec, ns.Spec) || !reflect.DeepEqual(os.Status, ns.Status)
		}
		return true
	},
}

func sameExceptVerdict(a, b map[string]string) bool {
	for k, v := range a {
		if k != AnnotationVerdict && b[k] != v {
			return false
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok && k != AnnotationVerdict {
			return false
		}
	}
	return true
}

// wasOrIsLoadBalancer lets through LoadBalancer Services, and the update that turns one into
// another type, so that its verdict is taken back.
var wasOrIsLoadBalancer = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return isLoadBalancer(e.Object) },
	DeleteFunc:  func(e event.DeleteEvent) bool { return isLoadBalancer(e.Object) },
	UpdateFunc:  func(e event.UpdateEvent) bool { return isLoadBalancer(e.ObjectOld) || isLoadBalancer(e.ObjectNew) },
	GenericFunc: func(e event.GenericEvent) bool { return isLoadBalancer(e.Object) },
}

func isLoadBalancer(o client.Object) bool {
	s, ok := o.(*corev1.Service)
	return ok && s.Spec.Type == corev1.ServiceTypeLoadBalancer
}

// nodeChanged lets through what a dialect can read of a Node: that it exists and its labels
// (node kinds, exclusion from load balancers, backend pools). Status updates, which every
// node makes all the time, change no verdict. Nodes of the initial list are not let through,
// for the reason podChanged gives.
var nodeChanged = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return !e.IsInInitialList },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return !reflect.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// podChanged lets through what placement reads of a Pod: labels, node, readiness. The Pods of
// the informer's initial list are not let through: no object has been reconciled yet, so each
// would only enqueue, unevaluated, objects their own initial list enqueues anyway, and 50,000
// of them at start-up made tens of MB of garbage (BenchmarkInformerMemory, "at sync").
var podChanged = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return !e.IsInInitialList },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return !reflect.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) || stateOf(e.ObjectOld) != stateOf(e.ObjectNew)
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// clientsIndex indexes Services and Ingresses that carry core.AnnotationClients.
const clientsIndex = "loopguard.io/declares-clients"

func declaresClients(o client.Object) []string {
	if _, ok := o.GetAnnotations()[core.AnnotationClients]; ok {
		return []string{"true"}
	}
	return nil
}

// profileSelects reports whether the profile's client selector selects the Pod (an invalid
// one selects every Pod: the evaluation reports it).
func (c *Controller) profileSelects(pod client.Object) bool {
	if c.profile.Clients == "" {
		return false
	}
	s, err := labels.Parse(c.profile.Clients)
	return err != nil || s.Matches(labels.Set(pod.GetLabels()))
}

// declaring lists the candidates of kind that declare their own clients (the annotation).
func (c *Controller) declaring(ctx context.Context, kind string) []client.Object {
	var out []client.Object
	match := client.MatchingFields{clientsIndex: "true"}
	switch kind {
	case "Service":
		var list corev1.ServiceList
		if err := c.cache.List(ctx, &list, client.UnsafeDisableDeepCopy, match); err != nil {
			c.log.Warn("list Services", "error", err)
			return nil
		}
		for i := range list.Items {
			if list.Items[i].Spec.Type == corev1.ServiceTypeLoadBalancer {
				out = append(out, &list.Items[i])
			}
		}
	default:
		var list networkingv1.IngressList
		if err := c.cache.List(ctx, &list, client.UnsafeDisableDeepCopy, match); err != nil {
			c.log.Warn("list Ingresses", "error", err)
			return nil
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out
}

// declaresClient reports whether obj's declared clients (its loopguard.io/clients annotation,
// else the profile's) select the Pod.
func (c *Controller) declaresClient(obj client.Object, pod client.Object) bool {
	sel := c.profile.Clients
	if v, ok := obj.GetAnnotations()[core.AnnotationClients]; ok {
		sel = v
	}
	if sel == "" {
		return false
	}
	s, err := labels.Parse(sel)
	if err != nil {
		return true // the evaluation reports the bad selector; let it run
	}
	return s.Matches(labels.Set(pod.GetLabels()))
}

func (c *Controller) sliceToService(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[discoveryv1.LabelServiceName]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

func (c *Controller) sliceToIngresses(ctx context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[discoveryv1.LabelServiceName]
	if name == "" {
		return nil
	}
	return c.ingressesFor(ctx, o.GetNamespace(), name)
}

func (c *Controller) serviceToIngresses(ctx context.Context, o client.Object) []reconcile.Request {
	return c.ingressesFor(ctx, o.GetNamespace(), o.GetName())
}

func (c *Controller) ingressesFor(ctx context.Context, ns, svc string) []reconcile.Request {
	var list networkingv1.IngressList
	if err := c.cache.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{ingressBackendIndex: ns + "/" + svc}, client.UnsafeDisableDeepCopy); err != nil {
		c.log.Warn("list Ingresses by backend", "error", err)
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// loadBalancerIndex indexes the LoadBalancer Services.
const loadBalancerIndex = "loopguard.io/load-balancer"

// candidates lists the cached objects of one kind, LoadBalancer Services only. They are
// listed by loadBalancerIndex: a list of every Service copies each into a new array (17 MB
// with 10,000 Services, for every Node event).
func (c *Controller) candidates(ctx context.Context, kind string) []client.Object {
	var out []client.Object
	switch kind {
	case "Service":
		var list corev1.ServiceList
		if err := c.cache.List(ctx, &list, client.UnsafeDisableDeepCopy, client.MatchingFields{loadBalancerIndex: "true"}); err != nil {
			c.log.Warn("list Services", "error", err)
			return nil
		}
		for i := range list.Items {
			if list.Items[i].Spec.Type == corev1.ServiceTypeLoadBalancer {
				out = append(out, &list.Items[i])
			}
		}
	default:
		var list networkingv1.IngressList
		if err := c.cache.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			c.log.Warn("list Ingresses", "error", err)
			return nil
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out
}

// affected returns the objects of one kind (those keep selects, or all) whose evaluation on
// the cluster as cached now differs from what their last reconcile found, plus those never
// reconciled. Evaluation is pure and reads only the cache, so a Node's label change costs one
// in-memory evaluation per object and reconciles (API reads and writes) only those it changes.
func (c *Controller) affected(ctx context.Context, kind string, keep func(client.Object) bool) (out []reconcile.Request) {
	return c.affectedAmong(ctx, kind, c.candidates(ctx, kind), keep)
}

// affectedAmong is affected over the given candidates.
func (c *Controller) affectedAmong(ctx context.Context, kind string, objs []client.Object, keep func(client.Object) bool) (out []reconcile.Request) {
	if c.mapped != nil {
		defer func() { c.mapped(kind, out) }()
	}
	if keep != nil {
		kept := objs[:0]
		for _, o := range objs {
			if keep(o) {
				kept = append(kept, o)
			}
		}
		objs = kept
	}
	// An object never reconciled is enqueued as it is, unevaluated: its reconcile is due
	// anyway (its own informer event queues it too), and at start-up, when no object has been
	// reconciled yet, each of the many Node and Pod events would otherwise evaluate them all.
	var reconciled []client.Object
	for _, o := range objs {
		id := objectID{Kind: kind, NamespacedName: client.ObjectKeyFromObject(o)}
		if _, seen := c.seen.Load(id); seen {
			reconciled = append(reconciled, o)
			continue
		}
		out = append(out, reconcile.Request{NamespacedName: id.NamespacedName})
	}
	if len(reconciled) == 0 {
		return out
	}
	// The facts of one namespace at a time, as a reconcile reads them: the Pods of every
	// namespace at once would be 50,000 copies out of the compact Pod cache (cachedPod).
	byNS := map[string][]client.Object{}
	var order []string
	for _, o := range reconciled {
		if _, ok := byNS[o.GetNamespace()]; !ok {
			order = append(order, o.GetNamespace())
		}
		byNS[o.GetNamespace()] = append(byNS[o.GetNamespace()], o)
	}
	for _, ns := range order {
		objs := byNS[ns]
		cl, err := c.facts(ctx, ns, objs...)
		if err != nil {
			c.log.Warn("read facts for a dependency change", "namespace", ns, "error", err)
			continue
		}
		for _, o := range objs {
			id := objectID{Kind: kind, NamespacedName: client.ObjectKeyFromObject(o)}
			typed := o.DeepCopyObject()
			res, err := core.Evaluate(c.dialect, typed, cl, c.profile.Policy)
			fp := notExposedPrint
			if !errors.Is(err, core.ErrNotExposed) {
				fp = fingerprint(res, err)
			}
			if prev, seen := c.seen.Load(id); !seen || prev.(uint64) != fp {
				out = append(out, reconcile.Request{NamespacedName: id.NamespacedName})
			}
		}
	}
	return out
}

// referencing maps a custom object (a TkeServiceConfig) to the objects of its namespace that
// name it in an annotation, or whose name it extends ("<service>-auto-service-config", the
// config loopguard creates for a Service): the conventions by which TKE ties a config to its
// Service or Ingress.
func (c *Controller) referencing(ctx context.Context, kind string, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, obj := range c.candidates(ctx, kind) {
		if obj.GetNamespace() != o.GetNamespace() {
			continue
		}
		match := strings.HasPrefix(o.GetName(), obj.GetName()+"-")
		for _, v := range obj.GetAnnotations() {
			if v == o.GetName() {
				match = true
			}
		}
		if match {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
	}
	return out
}
