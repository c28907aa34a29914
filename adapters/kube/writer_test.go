package kube_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/loopguard/loopguard/adapters/kube"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
	"github.com/loopguard/loopguard/core/drivertest"
	"github.com/loopguard/loopguard/internal/apiserver"
)

// server is one real kube-apiserver for the package, with a test CRD and the project's
// TkeServiceConfig CRD and the test copy of Cilium's CiliumGatewayClassConfig CRD installed.
var server = apiserver.NewShared(apiserver.WithCRDPaths("testdata/widget-crd.yaml", "../../providers/tencent/crds",
	"../../providers/gateway/testdata/crds"))

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(server.Run(m))
}

func writer(t *testing.T) (*kube.Writer, *apiserver.Server, string) {
	t.Helper()
	srv := server.Get(t)
	w, err := kube.NewWriter(srv.Config(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return w, srv, srv.Namespace(t)
}

func service(ns string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Annotations: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80}}},
	}
}

func annotate(ns, key, value string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion("v1")
	u.SetKind("Service")
	u.SetNamespace(ns)
	u.SetName("web")
	u.SetAnnotations(map[string]string{key: value})
	return u
}

func TestGetMissingIsNil(t *testing.T) {
	w, _, ns := writer(t)
	u, err := w.Get(context.Background(), core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: ns, Name: "absent"})
	if u != nil || err != nil {
		t.Errorf("got %v, %v; want nil, nil", u, err)
	}
}

func TestApplyKeepsOtherManagersAnnotations(t *testing.T) {
	w, srv, ns := writer(t)
	ctx := context.Background()
	if _, err := srv.Client().CoreV1().Services(ns).Create(ctx, service(ns), metav1.CreateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Apply(ctx, annotate(ns, "service.cloud.tencent.com/prevent-loopback", "true")); err != nil {
		t.Fatal(err)
	}
	got, err := srv.Client().CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"team": "a", "service.cloud.tencent.com/prevent-loopback": "true"}
	if !cmp.Equal(got.Annotations, want) {
		t.Errorf("annotations = %v, want %v", got.Annotations, want)
	}
	managers := map[string]bool{}
	for _, mf := range got.ManagedFields {
		managers[mf.Manager] = true
	}
	if !managers[core.FieldManager] || !managers["kubectl"] {
		t.Errorf("managers = %v, want loopguard next to kubectl", managers)
	}
}

func TestApplyConflictsWithAnotherApplier(t *testing.T) {
	w, srv, ns := writer(t)
	ctx := context.Background()
	if _, err := srv.Client().CoreV1().Services(ns).Create(ctx, service(ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other, err := kube.NewWriter(srv.Config(), &kube.Options{FieldManager: "tke-service-controller"})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Apply(ctx, annotate(ns, "example.com/mode", "a")); err != nil {
		t.Fatal(err)
	}
	err = w.Apply(ctx, annotate(ns, "example.com/mode", "b"))
	if !errors.Is(err, core.ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict: loopguard never forces another manager's field", err)
	}
	got, _ := srv.Client().CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	if got.Annotations["example.com/mode"] != "a" {
		t.Errorf("the other manager's value was overwritten: %v", got.Annotations)
	}
}

func widget(ns string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"listeners": []any{
			map[string]any{"protocol": "TCP", "port": int64(80), "healthCheck": map[string]any{"enable": true, "intervalTime": int64(5)}},
			map[string]any{"protocol": "UDP", "port": int64(53), "scheduler": "WRR"},
		}, "internetMaxBandwidthOut": int64(10)},
	}}
	u.SetAPIVersion("test.loopguard.io/v1")
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName("cfg")
	return u
}

var widgetKey = func(ns string) core.ObjectKey {
	return core.ObjectKey{APIVersion: "test.loopguard.io/v1", Kind: "Widget", Namespace: ns, Name: "cfg"}
}

func TestUpdateDetectsConcurrentWriters(t *testing.T) {
	w, _, ns := writer(t)
	ctx := context.Background()
	if err := w.Create(ctx, widget(ns)); err != nil {
		t.Fatal(err)
	}
	if err := w.Create(ctx, widget(ns)); !errors.Is(err, core.ErrConflict) {
		t.Errorf("second create: %v, want ErrConflict", err)
	}
	a, _ := w.Get(ctx, widgetKey(ns))
	b, _ := w.Get(ctx, widgetKey(ns))
	_ = unstructured.SetNestedField(a.Object, "a", "spec", "note")
	if err := w.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(b.Object, "b", "spec", "note")
	if err := w.Update(ctx, b); !errors.Is(err, core.ErrConflict) {
		t.Errorf("stale update: %v, want ErrConflict", err)
	}
}

func TestUnservedKindIsUnsupported(t *testing.T) {
	w, _, ns := writer(t)
	_, err := w.Get(context.Background(), core.ObjectKey{APIVersion: "cloud.example.com/v1", Kind: "Gadget", Namespace: ns, Name: "x"})
	if !errors.Is(err, core.ErrUnsupported) {
		t.Errorf("err = %v, want ErrUnsupported naming the missing CRD", err)
	}
}

// TestReconcilerKeepsForeignFields runs the core Reconciler with this writer against the real
// API server: a keyed list edit on a CRD without list-map markers keeps every other entry and
// field, a second run writes nothing.
func TestReconcilerKeepsForeignFields(t *testing.T) {
	w, _, ns := writer(t)
	ctx := context.Background()
	if err := w.Create(ctx, widget(ns)); err != nil {
		t.Fatal(err)
	}
	key := widgetKey(ns)
	edit := core.Edit{Path: []core.PathElem{dialect.F("spec"), dialect.F("listeners"), dialect.K(map[string]any{"protocol": "TCP", "port": int64(80)}), dialect.F("snatEnable")}, Value: true}
	change := core.Change{By: core.WriterCluster, Object: &key, Strategy: core.StrategyUpdate, Edits: []core.Edit{edit}, Field: edit.String(), To: "true"}
	writes := 0
	drv := drivertest.DriverFuncs{PlanFn: func(ctx context.Context, req *core.PlanRequest) (*core.Plan, error) {
		p := &core.Plan{Object: req.Result.Exposure.Object, Decision: req.Result.Decision}
		live, err := req.Reader.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		if !edit.Satisfied(live.Object) {
			p.Changes = []core.Change{change}
		}
		return p, nil
	}}
	dialect := fixedDialect{}
	r := core.NewReconciler(core.NewProvider(dialect, drv), &core.ReconcilerOptions{ClusterWriter: w})
	for run := 0; run < 2; run++ {
		out, err := r.Reconcile(ctx, nil, nil)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		writes += len(out.Written)
	}
	if writes != 1 {
		t.Errorf("writes = %d over two runs, want 1", writes)
	}
	got, _ := w.Get(ctx, key)
	want := widget(ns).Object["spec"].(map[string]any)
	want["listeners"].([]any)[0].(map[string]any)["snatEnable"] = true
	if diff := cmp.Diff(want, got.Object["spec"]); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
}

// fixedDialect reports one at-risk exposure with an intercept offer, whatever the object.
type fixedDialect struct{}

func (fixedDialect) Name() string       { return "fixed" }
func (fixedDialect) Rules() []core.Rule { return nil }
func (fixedDialect) Translate(runtime.Object, *core.Cluster) (*core.Result, error) {
	return &core.Result{
		Exposure: core.Exposure{Object: core.ObjectRef{Kind: "Widget", Name: "cfg"}, Scope: core.Private, Layer: core.Layer4,
			Intercept: core.No, LBSourceNAT: core.No, Binding: core.NodePortCluster, Placement: core.Placement{NodesBehindLB: 2}},
		Offers: []core.Offer{{Remedy: core.LBSourceNAT, Path: core.PathProxy, Reason: core.Reason{Message: "snat"}}},
	}, nil
}
