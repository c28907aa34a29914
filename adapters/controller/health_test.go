package controller

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestLivenessFailsWhenAReconcileIsStuck: /healthz's check passes while reconciles finish,
// and fails, naming the object, once one has run longer than WedgedAfter (a call that never
// returns holds a worker forever; the kubelet's restart is the way out).
func TestLivenessFailsWhenAReconcileIsStuck(t *testing.T) {
	c := &Controller{wedgedAfter: time.Minute}
	if err := c.wedged(nil); err != nil {
		t.Fatalf("idle controller: %v", err)
	}
	id := objectID{Kind: "Service", NamespacedName: types.NamespacedName{Namespace: "shop", Name: "web"}}
	c.inflight.Store(id, time.Now().Add(-30*time.Second))
	if err := c.wedged(nil); err != nil {
		t.Errorf("a reconcile running 30 s of its 1 min: %v", err)
	}
	c.inflight.Store(id, time.Now().Add(-2*time.Minute))
	if err := c.wedged(nil); err == nil || !strings.Contains(err.Error(), "Service shop/web") {
		t.Errorf("a reconcile running 2 min: %v, want an error naming Service shop/web", err)
	}
	c.inflight.Delete(id)
	if err := c.wedged(nil); err != nil {
		t.Errorf("after the reconcile returned: %v", err)
	}
}
