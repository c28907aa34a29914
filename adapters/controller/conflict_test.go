package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loopguard/loopguard/providers/tencent"
)

// TestPermanentConflictIsBlocked: a field loopguard's plan sets is owned by another field
// manager (a GitOps tool applied it): the server-side apply conflict is a state, not a loop.
// The verdict says Blocked and names the manager and the field, one Warning Event says so,
// and the object is not retried every second (the backoff starts at 5 s and doubles).
func TestPermanentConflictIsBlocked(t *testing.T) {
	h := start(t, true)
	for _, n := range []string{"-1", "-2"} {
		h.node(h.ns+n, nil)
	}
	h.serviceBy("web", "argocd", map[string]string{tencent.AnnotationPreventLoopback: "false"})
	h.eventually("a Blocked verdict naming argocd", func() (bool, string) {
		c := condition(h.get("web"))
		if c == nil {
			return false, "no condition"
		}
		return c.Reason == ReasonBlocked && strings.Contains(c.Message, `"argocd"`) &&
			strings.Contains(c.Message, tencent.AnnotationPreventLoopback), c.Reason + ": " + c.Message
	})
	h.eventually("one Blocked Event", func() (bool, string) {
		evs := h.events("web")
		n := 0
		for _, e := range evs {
			if e.Reason == ReasonBlocked && strings.Contains(e.Note, "argocd") {
				n++
			}
		}
		return n == 1, reasons(evs)
	})
	before := h.evaluations("web")
	time.Sleep(3 * time.Second) // the window measured: a 1 s requeue would reconcile 3 times
	if got := h.evaluations("web") - before; got > 1 {
		t.Errorf("%d reconciles in 3 s of a permanent conflict; want at most 1 (backoff from 5 s)", got)
	}
	if v := h.get("web").Annotations[tencent.AnnotationPreventLoopback]; v != "false" {
		t.Errorf("argocd's value was overwritten: %q", v)
	}
	if got := counter(h.c.metrics.errors.WithLabelValues("Service")); got != 0 {
		t.Errorf("reconcile errors = %v; a blocked object is a state, not a failure", got)
	}
}

func (h *harness) serviceBy(name, manager string, ann map[string]string) {
	h.t.Helper()
	a := map[string]string{tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d"}
	for k, v := range ann {
		a[k] = v
	}
	svc := &corev1.Service{}
	svc.Name, svc.Annotations = name, a
	svc.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
		Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}
	if _, err := h.srv.Client().CoreV1().Services(h.ns).Create(context.Background(), svc, metav1CreateBy(manager)); err != nil {
		h.t.Fatal(err)
	}
}

func metav1CreateBy(manager string) metav1.CreateOptions {
	return metav1.CreateOptions{FieldManager: manager}
}
