package tencent_test

import (
	"context"
	"encoding/json"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
)

func (l *live) reconciler(pol core.Policy) *core.Reconciler {
	l.t.Helper()
	p, err := tencent.NewProvider(nil)
	if err != nil {
		l.t.Fatal(err)
	}
	return core.NewReconciler(p, &core.ReconcilerOptions{ClusterWriter: l.writer, Policy: pol})
}

// TestAPIServerRemovePreventLoopback: Remove takes back the annotation loopguard applied and
// leaves every other annotation; a second Remove writes nothing. When another field manager
// has applied the same value too, the annotation is theirs as well and stays.
func TestAPIServerRemovePreventLoopback(t *testing.T) {
	for _, shared := range []bool{false, true} {
		name := "loopguard's alone"
		if shared {
			name = "shared with another manager"
		}
		t.Run(name, func(t *testing.T) {
			l := newLive(t)
			ctx := context.Background()
			svc := l.createService(privateService("web", map[string]string{"team": "a"}, "TCP/80"))
			r := l.reconciler(core.Policy{})
			c := cluster(t, ipvsProfile(), svc)
			if _, err := r.Reconcile(ctx, svc, c); err != nil {
				t.Fatal(err)
			}
			if got := l.service("web").Annotations[tencent.AnnotationPreventLoopback]; got != "true" {
				t.Fatalf("prevent-loopback = %q after reconcile", got)
			}
			if shared {
				patch, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Service",
					"metadata": map[string]any{"name": "web", "annotations": map[string]string{tencent.AnnotationPreventLoopback: "true"}}})
				force := true
				if _, err := l.srv.Client().CoreV1().Services(l.ns).Patch(ctx, "web", types.ApplyPatchType, patch,
					metav1.PatchOptions{FieldManager: "platform-team", Force: &force}); err != nil {
					t.Fatal(err)
				}
			}
			out, err := r.Remove(ctx, l.service("web"), c)
			if err != nil {
				t.Fatal(err)
			}
			after := l.service("web")
			if after.Annotations["team"] != "a" {
				t.Errorf("Remove touched another annotation: %v", after.Annotations)
			}
			_, kept := after.Annotations[tencent.AnnotationPreventLoopback]
			if kept != shared || (len(out.Written) == 0) != shared {
				t.Errorf("annotation kept %v, written %v; want kept only when shared", kept, out.Written)
			}
			rv := after.ResourceVersion
			out, err = r.Remove(ctx, after, c)
			if err != nil || len(out.Written) != 0 || l.service("web").ResourceVersion != rv {
				t.Errorf("second Remove: %v, written %v", err, out.Written)
			}
		})
	}
}

// TestAPIServerRemoveCreatedConfig: the TkeServiceConfig loopguard creates is owned by its
// Service (an ownerReference, so the garbage collector removes it with the Service); Remove
// drops the reference annotation first, then deletes the config.
func TestAPIServerRemoveCreatedConfig(t *testing.T) {
	l := newLive(t)
	ctx := context.Background()
	svc := l.createService(privateService("web", map[string]string{"team": "a"}, "TCP/80", "UDP/53"))
	r := l.reconciler(snatPolicy)
	prof := ipvsProfile(tencent.CapL4SNAT)
	if _, err := r.Reconcile(ctx, svc, cluster(t, prof, svc)); err != nil {
		t.Fatal(err)
	}
	cfg := l.config("web" + tencent.ConfigSuffix)
	if refs := cfg.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != svc.UID || refs[0].Kind != "Service" {
		t.Errorf("ownerReferences = %+v, want the Service %s", refs, svc.UID)
	}
	live := l.service("web")
	if live.Annotations[tencent.AnnotationServiceConfig] != "web"+tencent.ConfigSuffix {
		t.Fatalf("reference annotation = %v", live.Annotations)
	}
	out, err := r.Remove(ctx, live, cluster(t, prof, live, cfg))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Written) != 2 {
		t.Errorf("written %v, want the reference removed and the config deleted", out.Written)
	}
	after := l.service("web")
	if _, ok := after.Annotations[tencent.AnnotationServiceConfig]; ok || after.Annotations["team"] != "a" {
		t.Errorf("annotations after Remove: %v", after.Annotations)
	}
	if _, err := l.dyn.Resource(configGVR).Namespace(l.ns).Get(ctx, "web"+tencent.ConfigSuffix, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the created config is still there: %v", err)
	}
}
