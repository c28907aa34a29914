package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/loopguard/loopguard/core"
)

const (
	// ConditionType is the status.conditions entry loopguard keeps on a Service:
	// True when no in-cluster connection can loop, False when some can, Unknown when a fact
	// the verdict needs is missing or an annotation is invalid.
	ConditionType = "loopguard.io/LoopSafe"
	// AnnotationVerdict carries the same verdict on an Ingress ("<Reason>: <message>"), which
	// has no status conditions.
	AnnotationVerdict = "loopguard.io/verdict"
)

// Condition reasons (also the reasons of the Events recorded on a new verdict).
const (
	ReasonNoLoop      = "NoLoop"
	ReasonAtRisk      = "AtRisk"
	ReasonRiskUnknown = "RiskUnknown"
	ReasonInvalid     = "Invalid"
	// ReasonBlocked: enforcing, and the plan cannot be applied as is (an allowlist to
	// request, a version too old); the message says what is missing.
	ReasonBlocked = "Blocked"
)

// noteMax bounds an Event note (events.k8s.io allows 1 kB) and a condition message.
const noteMax = 1000

// verdict is what an object's condition or annotation says.
type verdict struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

func verdictOf(res *core.Result, err error) verdict {
	if err != nil {
		return verdict{status: metav1.ConditionUnknown, reason: ReasonInvalid, message: truncate(err.Error(), noteMax)}
	}
	a, d := &res.Assessment, &res.Decision
	v := verdict{}
	switch a.Risk {
	case core.RiskNone:
		v.status, v.reason = metav1.ConditionTrue, ReasonNoLoop
	case core.RiskAtRisk:
		v.status, v.reason = metav1.ConditionFalse, ReasonAtRisk
	default:
		v.status, v.reason = metav1.ConditionUnknown, ReasonRiskUnknown
	}
	msg := "risk " + string(a.Risk)
	if a.Risk == core.RiskAtRisk {
		msg += fmt.Sprintf(" (%s", a.Symptom)
		if a.WorstCase.Known() {
			msg += fmt.Sprintf(", worst case %.0f%% of connections", 100*a.WorstCase.Value())
		}
		msg += ")"
	}
	if len(a.Missing) > 0 {
		msg += fmt.Sprintf(" (missing %v)", a.Missing)
	}
	if d.Remedy != "" {
		msg += "; remedy " + string(d.Remedy)
	}
	if d.Why != "" {
		msg += ": " + d.Why
	}
	if d.Reason.Code != "" {
		msg += " [" + string(d.Reason.Code) + "]"
	}
	v.message = truncate(msg, noteMax)
	return v
}

// block marks the verdict of an enforcing reconcile whose plan is blocked.
func (v *verdict) block(b *core.Blocker) {
	v.reason = ReasonBlocked
	v.message = truncate(v.message+"; blocked: "+b.Err().Error(), noteMax)
}

func (v verdict) eventType() string {
	if v.status == metav1.ConditionTrue {
		return corev1.EventTypeNormal
	}
	return corev1.EventTypeWarning
}

// publish makes the verdict visible to kubectl, and records an Event, only when it differs
// from what the object already shows: a resync that finds the same verdict writes nothing.
// wrote says it wrote.
func (c *Controller) publish(ctx context.Context, id objectID, obj client.Object, v verdict) (wrote bool, err error) {
	switch o := obj.(type) {
	case *corev1.Service:
		wrote, err = c.publishCondition(ctx, o, v)
		if err != nil || !wrote {
			return wrote, err
		}
	case *networkingv1.Ingress:
		want := v.reason + ": " + v.message
		if o.Annotations[AnnotationVerdict] == want {
			return false, nil
		}
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetAPIVersion("networking.k8s.io/v1")
		u.SetKind("Ingress")
		u.SetNamespace(o.Namespace)
		u.SetName(o.Name)
		u.SetAnnotations(map[string]string{AnnotationVerdict: want})
		if err = c.writer.Apply(ctx, u); err != nil {
			return false, err
		}
	}
	c.metrics.writes.WithLabelValues("verdict").Inc()
	c.events.Eventf(obj, nil, v.eventType(), v.reason, "Evaluate", "%s", v.message)
	c.log.Info("verdict", "object", id.String(), "reason", v.reason, "message", v.message)
	return true, nil
}

// unpublish takes loopguard's verdict off an object that is no longer an exposure: applying
// loopguard's field manager's configuration without the condition (or the annotation) drops
// what it alone owns, and nothing of anyone else's.
func (c *Controller) unpublish(ctx context.Context, obj client.Object) error {
	switch o := obj.(type) {
	case *corev1.Service:
		if condition := findCondition(o); condition == nil {
			return nil
		}
		ac := corev1ac.Service(o.Name, o.Namespace).WithStatus(corev1ac.ServiceStatus())
		_, err := c.kube.CoreV1().Services(o.Namespace).ApplyStatus(ctx, ac, metav1.ApplyOptions{FieldManager: core.FieldManager})
		return err
	case *networkingv1.Ingress:
		if _, ok := o.Annotations[AnnotationVerdict]; !ok {
			return nil
		}
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetAPIVersion("networking.k8s.io/v1")
		u.SetKind("Ingress")
		u.SetNamespace(o.Namespace)
		u.SetName(o.Name)
		return c.writer.Apply(ctx, u)
	}
	return nil
}

func findCondition(svc *corev1.Service) *metav1.Condition {
	for i := range svc.Status.Conditions {
		if svc.Status.Conditions[i].Type == ConditionType {
			return &svc.Status.Conditions[i]
		}
	}
	return nil
}

// publishCondition server-side-applies loopguard's condition to the Service's status
// subresource under loopguard's field manager; conditions is a list map keyed by type, so the
// conditions other controllers keep there stay theirs.
func (c *Controller) publishCondition(ctx context.Context, svc *corev1.Service, v verdict) (bool, error) {
	old := findCondition(svc)
	if sameVerdict(old, v, svc.Generation) {
		return false, nil
	}
	// The cache may lag what was written a moment ago: a replica that has just taken the Lease
	// over reads the old leader's last writes late. The live object decides whether the
	// verdict is new, so a failover repeats neither the write nor its Event (deploy/test's
	// TestCluster deletes the leader Pod mid-reconcile and counts them). One read per change
	// of verdict, never on a resync that finds it unchanged; a list of the one name, which
	// report-only RBAC allows (list and watch on Services, no get: docs/permissions.md), and
	// which without a resourceVersion reads what etcd has now.
	live, err := c.kube.CoreV1().Services(svc.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + svc.Name})
	if err != nil {
		return false, err
	}
	if len(live.Items) != 1 {
		return false, nil // gone meanwhile: its deletion is the next reconcile's
	}
	if old = findCondition(&live.Items[0]); sameVerdict(old, v, live.Items[0].Generation) {
		return false, nil
	}
	svc = &live.Items[0]
	ltt := metav1.NewTime(time.Now().Truncate(time.Second))
	if old != nil && old.Status == v.status {
		ltt = old.LastTransitionTime
	}
	ac := corev1ac.Service(svc.Name, svc.Namespace).WithStatus(corev1ac.ServiceStatus().WithConditions(
		metav1ac.Condition().WithType(ConditionType).WithStatus(v.status).WithReason(v.reason).
			WithMessage(v.message).WithObservedGeneration(svc.Generation).WithLastTransitionTime(ltt)))
	_, err = c.kube.CoreV1().Services(svc.Namespace).ApplyStatus(ctx, ac, metav1.ApplyOptions{FieldManager: core.FieldManager})
	if apierrors.IsConflict(err) {
		return false, &core.KindError{Kind: core.ErrConflict, Object: core.ObjectRef{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name}, Msg: "conflict", Err: err}
	}
	return err == nil, err
}

func sameVerdict(c *metav1.Condition, v verdict, generation int64) bool {
	return c != nil && c.Status == v.status && c.Reason == v.reason && c.Message == v.message && c.ObservedGeneration == generation
}

// fingerprint identifies what an evaluation found, so a dependency's change can be tested for
// whether it changes anything for an object without reconciling it.
func fingerprint(res *core.Result, err error) uint64 {
	h := fnv.New64a()
	if err != nil {
		h.Write([]byte("error: " + err.Error()))
		return h.Sum64()
	}
	// A Result is plain data; encoding it cannot fail.
	b, _ := json.Marshal(res)
	h.Write(b)
	return h.Sum64()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-len("…")] + "…"
}
