package cloudprovider

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
	// EventBlocked: the decision's load-balancer part cannot be carried out (an allowlist, a
	// version, an invalid annotation).
	EventBlocked = "LoopguardBlocked"
	// EventApplied: loopguard changed the load balancer.
	EventApplied = "LoopguardApplied"
)

// Option configures Wrap.
type Option func(*options)

type options struct {
	log          hclog.Logger
	recorder     record.EventRecorder
	profile      core.ClusterProfile
	policy       core.Policy
	reportOnly   bool
	optOut       string
	slices       discoverylisters.EndpointSliceLister
	pods         corelisters.PodLister
	configMaps   corelisters.ConfigMapLister
	fromInformer bool
}

// WithLogger sets the logger (named "loopguard"); the default discards.
func WithLogger(l hclog.Logger) Option { return func(o *options) { o.log = l } }

// WithEventRecorder sets where Events go: the cloud-controller-manager's own recorder.
func WithEventRecorder(r record.EventRecorder) Option { return func(o *options) { o.recorder = r } }

// WithProfile declares the facts no object carries (the proxy mode, kube-proxy's and the API
// server's versions, allowlists), as a ClusterProfile.
func WithProfile(p core.ClusterProfile) Option { return func(o *options) { o.profile = p } }

// WithPolicy sets the decision policy.
func WithPolicy(p core.Policy) Option { return func(o *options) { o.policy = p } }

// ReportOnly makes the decorator publish the status and record Events, and never write to the
// load balancer.
func ReportOnly() Option { return func(o *options) { o.reportOnly = true } }

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
// from looping: its LoadBalancer, after the inner EnsureLoadBalancer or UpdateLoadBalancer
// succeeds, evaluates the Service with p's dialect, carries out the load-balancer part of the
// decision through p's driver where the host owns the load balancer (cloud changes, such as
// TKE's listener SNAT in direct mode), and returns the inner status with ipMode set on every
// IP entry (kubernetes.IngressStatus). It never writes the Service or the Nodes: changes the
// cloud-controller-manager does not own are recorded as Events. Everything but LoadBalancer
// passes through to inner untouched.
func Wrap(inner cloudprovider.Interface, p core.Provider, opts ...Option) cloudprovider.Interface {
	o := options{log: hclog.NewNullLogger(), optOut: AnnotationIgnore}
	for _, opt := range opts {
		opt(&o)
	}
	o.log = o.log.Named("loopguard")
	c := &cloud{Interface: inner, provider: p, opts: &o}
	rec := []core.ReconcilerOption{core.WithPolicy(o.policy), core.WithLogger(o.log)}
	c.reconciler = core.NewReconciler(p, rec...)
	return c
}

// cloud is the decorated provider. Embedding passes every method but LoadBalancer through.
type cloud struct {
	cloudprovider.Interface
	provider   core.Provider
	opts       *options
	reconciler *core.Reconciler
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

// EnsureLoadBalancer calls the inner one, then carries out the decision's load-balancer part
// and returns the status with the decided ipMode.
func (lb *loadBalancer) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	st, err := lb.LoadBalancer.EnsureLoadBalancer(ctx, clusterName, svc, nodes)
	if err != nil || st == nil || lb.c.ignored(svc) {
		return st, err
	}
	withStatus := svc.DeepCopy()
	withStatus.Status.LoadBalancer = *st
	path, err := lb.c.sync(ctx, withStatus, nodes)
	if err != nil {
		return nil, err
	}
	return kubernetes.IngressStatus(path, kubernetes.StoresIPMode(lb.c.opts.profile.KubernetesVersion), st), nil
}

// UpdateLoadBalancer calls the inner one (the nodes changed), then carries out the decision's
// load-balancer part again; the status is not returned by this call.
func (lb *loadBalancer) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) error {
	if err := lb.LoadBalancer.UpdateLoadBalancer(ctx, clusterName, svc, nodes); err != nil || lb.c.ignored(svc) {
		return err
	}
	_, err := lb.c.sync(ctx, svc, nodes)
	return err
}

// EnsureLoadBalancerDeleted takes back what loopguard set on the load balancer, then calls
// the inner one.
func (lb *loadBalancer) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *corev1.Service) error {
	if !lb.c.ignored(svc) && !lb.c.opts.reportOnly {
		if err := lb.c.remove(ctx, svc); err != nil {
			return err
		}
	}
	return lb.LoadBalancer.EnsureLoadBalancerDeleted(ctx, clusterName, svc)
}

func (c *cloud) ignored(svc *corev1.Service) bool { return svc.Annotations[c.opts.optOut] == "true" }

// facts builds the cluster loopguard evaluates against: the profile, the nodes the service
// controller passes, and what the listers hold for the Service's namespace.
func (c *cloud) facts(svc *corev1.Service, nodes []*corev1.Node) (*core.Cluster, error) {
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

// sync evaluates the Service, applies the cloud changes of its plan (unless report-only),
// records Events for what the host does not own, and returns the decided path.
func (c *cloud) sync(ctx context.Context, svc *corev1.Service, nodes []*corev1.Node) (core.Path, error) {
	log := c.opts.log.With("service", svc.Namespace+"/"+svc.Name)
	facts, err := c.facts(svc, nodes)
	if err != nil {
		return core.PathUnknown, fmt.Errorf("loopguard: Service %s/%s: reading the cluster facts: %w", svc.Namespace, svc.Name, err)
	}
	res, err := core.Evaluate(c.provider.Dialect(), svc, facts, c.opts.policy)
	switch {
	case core.IsNotExposed(err):
		return core.PathUnknown, nil
	case err != nil:
		c.event(svc, corev1.EventTypeWarning, EventBlocked, err.Error())
		return core.PathUnknown, fmt.Errorf("loopguard: %w", err)
	}
	path := res.Decision.Path
	if _, ok := c.provider.Driver(); !ok || res.Decision.Remedy == core.RemedyNone {
		return path, nil
	}
	// Planned from this evaluation: the Reconciler's Plan would translate the Service again.
	plan, err := c.reconciler.PlanEvaluated(ctx, svc, facts, res)
	if err != nil {
		return path, c.fail(svc, err)
	}
	cloudPart := *plan
	cloudPart.Changes = nil
	for _, ch := range plan.Changes {
		switch ch.By {
		case core.WriterCloud:
			cloudPart.Changes = append(cloudPart.Changes, ch)
		case core.WriterCluster, core.WriterUser:
			msg := "loopguard needs " + ch.String() + " for " + string(plan.Decision.Remedy) + "; the cloud-controller-manager does not make it"
			log.Info("change for someone else", "change", ch.String())
			c.event(svc, corev1.EventTypeNormal, EventChangeNeeded, msg)
		}
	}
	if plan.Blocked != nil {
		// What blocks the load balancer's own part, bad input, or a load balancer not ready
		// yet fails the sync (a retry-later requeues it after its delay); a block on a
		// change the host does not make is only reported.
		if len(cloudPart.Changes) > 0 || plan.Blocked.Kind == "invalid" || plan.Blocked.Kind == "retry-later" {
			return path, c.fail(svc, plan.Blocked.Err())
		}
		c.event(svc, corev1.EventTypeWarning, EventBlocked, plan.Blocked.Message)
		return path, nil
	}
	if len(cloudPart.Changes) == 0 || c.opts.reportOnly {
		return path, nil
	}
	cloudPart.Checks = nil // what the host owns is verified by the next sync
	out, err := c.reconciler.Apply(ctx, &cloudPart)
	if out != nil && len(out.Written) > 0 {
		c.event(svc, corev1.EventTypeNormal, EventApplied, fmt.Sprintf("loopguard wrote %d load-balancer change(s) for %s", len(out.Written), plan.Decision.Remedy))
	}
	if err != nil {
		return path, c.fail(svc, err)
	}
	return path, nil
}

// remove takes back the cloud changes loopguard made for svc.
func (c *cloud) remove(ctx context.Context, svc *corev1.Service) error {
	drv, ok := c.provider.Driver()
	if !ok {
		return nil
	}
	rem, ok := drv.(core.Remover)
	if !ok {
		return nil
	}
	facts, err := core.NewCluster(c.opts.profile)
	if err != nil {
		return err
	}
	plan, err := rem.PlanRemoval(ctx, &core.PlanRequest{Object: svc, Cluster: facts, Policy: c.opts.policy})
	if err != nil {
		return c.fail(svc, err)
	}
	cloudPart := *plan
	cloudPart.Changes = nil
	for _, ch := range plan.Changes {
		if ch.By == core.WriterCloud {
			cloudPart.Changes = append(cloudPart.Changes, ch)
		}
	}
	if len(cloudPart.Changes) == 0 {
		return nil
	}
	_, err = c.reconciler.Apply(ctx, &cloudPart)
	if err != nil {
		return c.fail(svc, err)
	}
	return nil
}

// fail turns a loopguard error into what the service controller acts on: a RetryError, with
// its delay, becomes cloud-provider's api.RetryError (wrapped with %w, as the controller
// requeues with errors.As); anything else fails the sync with the message, and an Event.
func (c *cloud) fail(svc *corev1.Service, err error) error {
	var retry *core.RetryError
	if errors.As(err, &retry) {
		return fmt.Errorf("loopguard: Service %s/%s: %w", svc.Namespace, svc.Name, api.NewRetryError(retry.Error(), retry.After))
	}
	msg := err.Error()
	if !strings.Contains(msg, svc.Name) {
		msg = "Service " + svc.Namespace + "/" + svc.Name + ": " + msg
	}
	c.event(svc, corev1.EventTypeWarning, EventBlocked, msg)
	return fmt.Errorf("loopguard: %s: %w", core.BlockerOf(err).Kind, err)
}

func (c *cloud) event(svc *corev1.Service, typ, reason, msg string) {
	if c.opts.recorder != nil {
		c.opts.recorder.Event(svc, typ, reason, msg)
	}
}
