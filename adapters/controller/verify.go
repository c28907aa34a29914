package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/loopguard/loopguard/adapters/verify"
	"github.com/loopguard/loopguard/adapters/verify/probe"
	"github.com/loopguard/loopguard/core"
)

// VerifiedConditionType is the status.conditions entry the controller keeps on a Service it
// verified (VerifyOptions): True when what the probe Pods observed agrees with the verdict
// for every client placement, False when one disagrees (the verdict, or a fix, does not hold
// on this cluster), Unknown when the run did not finish (a probe Pod that never started, did
// not report or could not be removed).
const VerifiedConditionType = "loopguard.io/Verified"

// Reasons of the Verified condition.
const (
	ReasonVerifyAgrees      = "Agrees"
	ReasonVerifyDisagrees   = "Disagrees"
	ReasonVerifyNotObserved = "NotObserved"
)

// VerifyFieldManager writes the Verified condition. It is not core.FieldManager on purpose:
// the verdict's own server-side apply names only the LoopSafe condition, and under one field
// manager that apply would remove the Verified condition it does not name.
const VerifyFieldManager = "loopguard-verify"

// LabelVerifyHost marks the probe Pods the controller creates (value "controller"), so that a
// newly elected leader removes what a killed one left in the probe namespace, and nothing of
// a `loopguard verify` run's.
const LabelVerifyHost = "verify.loopguard.io/host"

// VerifyOptions turn on verifying exposures on the cluster itself (adapters/verify): short-lived
// probe Pods, pinned to a node that holds a backend and to one that holds none, connect to
// the LB's addresses, and the controller records what they observed against the verdict as
// the Service's Verified condition and in loopguard_verifications_total. A Service is
// verified when its published verdict turns at-risk, and, in enforcing mode, AfterFix after
// the controller wrote a fix for it. Off unless set: it creates Pods, which a report-only
// controller otherwise never does. Only LoadBalancer Services are verified (an Ingress or a
// Gateway is not). docs/controller.md, "Verifying", has the RBAC (deploy/components/verify).
type VerifyOptions struct {
	// Probe bounds each run: Connections, the timeouts, StartTimeout, Resources, Command,
	// NoProxyCheck as for `loopguard verify`. Probe.Image (the loopguard image with the probe
	// subcommand) and Probe.Namespace (the one namespace the probe Pods run in, where the
	// controller may create and delete Pods) are required; Probe.Owner should be the
	// controller's own Pod, so that removing the controller removes a probe Pod it left.
	// Parallel, Progress and Labels are the controller's.
	Probe verify.Options
	// Interval: a Service is verified at most once per Interval (a trigger within it waits
	// for its end); default 1 h.
	Interval time.Duration
	// Gap: at least this long between two verifications in the cluster, one at a time, so a
	// thousand Services turning at-risk at once start two probe Pods at a time, not two
	// thousand; default 30 s.
	Gap time.Duration
	// AfterFix: how long after writing a fix the Service is verified; the cloud's own
	// controller has to carry the change to the LB first. Default 1 min.
	AfterFix time.Duration
}

func (o *VerifyOptions) withDefaults() (VerifyOptions, error) {
	v := *o
	var errs []error
	if v.Probe.Image == "" {
		errs = append(errs, errors.New("Probe.Image: the loopguard image with the probe subcommand is required"))
	}
	if v.Probe.Namespace == "" {
		errs = append(errs, errors.New("Probe.Namespace: the namespace the probe Pods run in is required"))
	}
	if v.Interval < 0 || v.Gap < 0 || v.AfterFix < 0 {
		errs = append(errs, fmt.Errorf("negative Interval %v, Gap %v or AfterFix %v", v.Interval, v.Gap, v.AfterFix))
	}
	if err := errors.Join(errs...); err != nil {
		return v, fmt.Errorf("controller: VerifyOptions: %w", err)
	}
	if v.Interval == 0 {
		v.Interval = time.Hour
	}
	if v.Gap == 0 {
		v.Gap = 30 * time.Second
	}
	if v.AfterFix == 0 {
		v.AfterFix = time.Minute
	}
	v.Probe.Parallel, v.Probe.Progress = 1, nil
	v.Probe.Labels = map[string]string{LabelVerifyHost: "controller"}
	return v, nil
}

// verifier runs the verifications the reconciles ask for, one at a time, on the elected
// leader only (a manager Runnable that needs leader election).
type verifier struct {
	c     *Controller
	o     VerifyOptions
	log   hclog.Logger
	queue workqueue.TypedDelayingInterface[types.NamespacedName]
	runs  *prometheus.CounterVec

	mu   sync.Mutex
	last map[types.NamespacedName]time.Time // when each Service was last verified

	// verified, when set (tests), is called after each verification is recorded.
	verified func(types.NamespacedName, verify.Report)
}

func newVerifier(c *Controller, o *VerifyOptions, reg prometheus.Registerer) (*verifier, error) {
	opts, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	runs, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loopguard_verifications_total",
		Help: "Services verified with probe Pods, by result: agrees, disagrees (observed is not what the verdict predicts), not-observed."}, []string{"result"}))
	if err != nil {
		return nil, err
	}
	return &verifier{c: c, o: opts, log: c.log.Named("verify"), runs: runs, last: map[types.NamespacedName]time.Time{},
		queue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[types.NamespacedName]{Name: "loopguard-verify"})}, nil
}

// request asks for a verification of the Service after delay, or when its Interval since the
// last one ends, whichever is later; a Service already waiting is verified once.
func (v *verifier) request(key types.NamespacedName, delay time.Duration) {
	v.mu.Lock()
	if last, ok := v.last[key]; ok {
		delay = max(delay, time.Until(last.Add(v.o.Interval)))
	}
	v.mu.Unlock()
	v.queue.AddAfter(key, delay)
}

// forget drops what is known of a Service that is gone or no longer exposed.
func (v *verifier) forget(key types.NamespacedName) {
	v.mu.Lock()
	delete(v.last, key)
	v.mu.Unlock()
}

// Start runs verifications until ctx ends (the manager stops or loses the Lease); a run in
// progress then removes its probe Pods before it returns.
func (v *verifier) Start(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		v.queue.ShutDown()
	}()
	v.sweep(ctx)
	for {
		key, shutdown := v.queue.Get()
		if shutdown {
			return nil
		}
		v.run(ctx, key)
		v.queue.Done(key)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(v.o.Gap):
		}
	}
}

// sweep removes the probe Pods a previous leader left (killed in the middle of a run): only
// the leader verifies, so any the controller marked are left-overs.
func (v *verifier) sweep(ctx context.Context) {
	ns := v.o.Probe.Namespace
	sel := labels.SelectorFromSet(labels.Set{verify.LabelManagedBy: verify.ManagedBy, LabelVerifyHost: "controller"}).String()
	pods, err := v.c.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		v.log.Warn("cannot list left-over probe Pods", "namespace", ns, "error", err)
		return
	}
	zero := int64(0)
	for _, p := range pods.Items {
		err := v.c.kube.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			v.log.Warn("cannot delete a left-over probe Pod", "pod", ns+"/"+p.Name, "error", err)
			continue
		}
		v.log.Info("deleted a left-over probe Pod", "pod", ns+"/"+p.Name)
	}
}

// run verifies one Service as the cache shows it now (the verdict it is judged against is
// evaluated again: a fix may have landed since the request) and records the outcome.
func (v *verifier) run(ctx context.Context, key types.NamespacedName) {
	id := objectID{Kind: "Service", NamespacedName: key}
	// request already delays a trigger to the end of the Service's Interval; one that arrives
	// here within it was made while the last run was under way (a reconcile of the status that
	// run's address brought, say), and that run answered it: at most one run per Interval.
	v.mu.Lock()
	last, ok := v.last[key]
	v.mu.Unlock()
	if ok && time.Since(last) < v.o.Interval {
		v.log.Debug("not verified again: verified within the interval", "object", id.String(), "at", last)
		return
	}
	obj, err := v.c.get(ctx, id)
	if err != nil || obj == nil {
		return
	}
	svc := obj.(*corev1.Service)
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return
	}
	cl, err := v.c.facts(ctx, key.Namespace, svc)
	if err != nil {
		v.log.Warn("cannot read the facts to verify against", "object", id.String(), "error", err)
		return
	}
	res, err := core.Evaluate(v.c.dialect, svc, cl, v.c.profile.Policy)
	if err != nil {
		v.log.Debug("not verified: no verdict", "object", id.String(), "error", err)
		return
	}
	e := res.Exposure
	target := verify.Target{Service: svc, Exposure: &e, Nodes: verify.UsableNodes(cl.Nodes())}
	// Nothing to probe yet (a new Service before the cloud gave it an address, backends not
	// ready): not a verification. The change that brings it (the Service's status, an
	// EndpointSlice) reconciles the Service, which asks again while it has no Verified
	// condition.
	if backend, _ := verify.Nodes(&e, target.Nodes); len(verify.Addresses(svc)) == 0 || backend == "" {
		v.log.Debug("not verified yet: no LB address or no usable node holding a ready backend", "object", id.String())
		return
	}
	v.log.Info("verifying with probe Pods", "object", id.String(), "namespace", v.o.Probe.Namespace)
	rep, err := verify.Run(ctx, v.c.kube, []verify.Target{target}, &v.o.Probe)
	if err != nil {
		// Interrupted: the Pods are gone, and a half-run proves nothing.
		v.log.Info("verification interrupted", "object", id.String(), "error", err)
		return
	}
	v.mu.Lock()
	v.last[key] = time.Now()
	v.mu.Unlock()
	cond := verifiedCondition(rep)
	v.runs.WithLabelValues(map[string]string{ReasonVerifyAgrees: "agrees", ReasonVerifyDisagrees: "disagrees",
		ReasonVerifyNotObserved: "not-observed"}[cond.reason]).Inc()
	if err := v.publish(ctx, svc, cond); err != nil {
		v.log.Warn("cannot record the verification", "object", id.String(), "reason", cond.reason, "message", cond.message, "error", err)
	} else {
		v.log.Info("verified", "object", id.String(), "reason", cond.reason, "message", cond.message)
	}
	if v.verified != nil {
		v.verified(key, rep)
	}
}

// verifiedCondition sums a run of one Service up.
func verifiedCondition(rep verify.Report) verdict {
	var parts []string
	for _, e := range rep.Exposures {
		if e.Error != "" {
			parts = append(parts, e.Error)
		}
		for _, p := range e.Placements {
			s := fmt.Sprintf("client on %s (node %s): predicted %s", p.Side, orNone(p.Node), p.Predicted.Behaviour)
			switch {
			case p.Observed != nil:
				s += ", observed " + string(p.Observed.Behaviour)
				if c := counts(p.Observed); c != "" {
					s += " (" + c + ")"
				}
				if !p.Agree && p.Why != "" {
					s += ": " + p.Why
				}
			case p.Error != "":
				s += ", not observed: " + p.Error
			}
			parts = append(parts, s)
		}
	}
	// A placement with no node (every node holds a backend) does not exist on this cluster:
	// it neither agrees nor leaves the verification unfinished. One whose Pod ran and did
	// not report does.
	failed := false
	for _, e := range rep.Exposures {
		failed = failed || e.Error != ""
		for _, p := range e.Placements {
			failed = failed || (p.Node != "" && p.Observed == nil) || (p.Observed != nil && p.Error != "")
		}
	}
	v := verdict{status: metav1.ConditionTrue, reason: ReasonVerifyAgrees}
	switch {
	case rep.Disagree > 0:
		v.status, v.reason = metav1.ConditionFalse, ReasonVerifyDisagrees
	case failed || rep.Agree == 0:
		v.status, v.reason = metav1.ConditionUnknown, ReasonVerifyNotObserved
	}
	v.message = truncate(strings.Join(parts, "; "), noteMax)
	return v
}

func counts(o *verify.Observation) string {
	var parts []string
	for _, out := range probe.Outcomes {
		if n := o.Counts[out]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, out))
		}
	}
	return strings.Join(parts, ", ")
}

func hasCondition(svc *corev1.Service, typ string) bool {
	for _, c := range svc.Status.Conditions {
		if c.Type == typ {
			return true
		}
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// publish server-side-applies the Verified condition under VerifyFieldManager. The Service
// is the cache's copy: the last verification's write, an Interval ago, is in it.
func (v *verifier) publish(ctx context.Context, svc *corev1.Service, cond verdict) error {
	ltt := metav1.NewTime(time.Now().Truncate(time.Second))
	for _, old := range svc.Status.Conditions {
		if old.Type == VerifiedConditionType && old.Status == cond.status {
			ltt = old.LastTransitionTime
		}
	}
	ac := corev1ac.Service(svc.Name, svc.Namespace).WithStatus(corev1ac.ServiceStatus().WithConditions(
		metav1ac.Condition().WithType(VerifiedConditionType).WithStatus(cond.status).WithReason(cond.reason).
			WithMessage(cond.message).WithObservedGeneration(svc.Generation).WithLastTransitionTime(ltt)))
	_, err := v.c.kube.CoreV1().Services(svc.Namespace).ApplyStatus(ctx, ac, metav1.ApplyOptions{FieldManager: VerifyFieldManager, Force: true})
	return err
}
