package drivertest_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
	"github.com/loopguard/loopguard/core/drivertest"
)

func svc(ann map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Annotations: ann},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
}

func TestClusterKeepsResourceVersionsAndConflicts(t *testing.T) {
	ctx := context.Background()
	u, err := drivertest.ToUnstructured(svc(map[string]string{"a": "1"}))
	if err != nil || u.GetKind() != "Service" || u.GetAPIVersion() != "v1" {
		t.Fatalf("ToUnstructured = %v, %v", u, err)
	}
	c := drivertest.NewCluster(u)
	key := drivertest.KeyOf(u)
	live, _ := c.Get(ctx, key)
	stale := live.DeepCopy()
	if err := c.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, stale); !errors.Is(err, core.ErrConflict) {
		t.Errorf("stale update: %v", err)
	}
	c.InjectConflicts(1)
	live, _ = c.Get(ctx, key)
	if err := c.Update(ctx, live); !errors.Is(err, core.ErrConflict) {
		t.Errorf("injected conflict: %v", err)
	}
	partial := &unstructured.Unstructured{Object: map[string]any{}}
	partial.SetAPIVersion("v1")
	partial.SetKind("Service")
	partial.SetNamespace("default")
	partial.SetName("web")
	partial.SetAnnotations(map[string]string{"b": "2"})
	if err := c.Apply(ctx, partial); err != nil {
		t.Fatal(err)
	}
	live, _ = c.Get(ctx, key)
	if got := live.GetAnnotations(); got["a"] != "1" || got["b"] != "2" || live.GetLabels()["drivertest/touched"] == "" {
		t.Errorf("after apply: annotations %v labels %v", got, live.GetLabels())
	}
	if err := c.Create(ctx, partial); !errors.Is(err, core.ErrConflict) {
		t.Errorf("create of an existing object: %v", err)
	}
	if w := c.Writes(); len(w) != 5 {
		t.Errorf("writes = %v", w)
	}
}

// annotationDriver is the smallest driver: it plans one annotation on the Service.
type annotationDriver struct{ blocked error }

var edit = core.Edit{Path: []core.PathElem{dialect.F("metadata"), dialect.F("annotations"), dialect.F("example.com/intercept")}, Value: "true"}

func (d annotationDriver) Plan(ctx context.Context, req *core.PlanRequest) (*core.Plan, error) {
	p := &core.Plan{Object: req.Result.Exposure.Object, Decision: req.Result.Decision}
	p.Block(d.blocked)
	key, _ := core.KeyOf(req.Object)
	live, err := req.Reader.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if live == nil || !edit.Satisfied(live.Object) {
		p.Changes = []core.Change{{By: core.WriterCluster, Object: &key, Strategy: core.StrategyApply, Edits: []core.Edit{edit}, Field: edit.String(), To: "true"}}
	}
	return p, nil
}

func (annotationDriver) ApplyCloud(context.Context, *core.Change) (core.ApplyResult, error) {
	return core.ApplyResult{}, core.ErrUnsupported
}

// annotationDialect: at risk until the annotation is set.
type annotationDialect struct{}

func (annotationDialect) Name() string       { return "test" }
func (annotationDialect) Rules() []core.Rule { return nil }
func (annotationDialect) Translate(obj runtime.Object, _ *core.Cluster) (*core.Result, error) {
	s := obj.(*corev1.Service)
	e := core.Exposure{Object: core.ObjectRef{Kind: "Service", Namespace: s.Namespace, Name: s.Name}, Scope: core.Private,
		Layer: core.Layer4, Intercept: core.No, LBSourceNAT: core.No, Binding: core.NodePortCluster, Placement: core.Placement{NodesBehindLB: 2}}
	if s.Annotations["example.com/intercept"] == "true" {
		e.Intercept = core.Yes
	}
	return &core.Result{Exposure: e, Offers: []core.Offer{{Remedy: core.InterceptVIP, Path: core.PathVIP, Reason: core.CodeIntercepted.Rule().Reason()}}}, nil
}

func TestRunCases(t *testing.T) {
	c, _ := core.NewCluster(core.ClusterProfile{})
	drivertest.RunCases(t, drivertest.CaseHarness{Provider: core.NewProvider(annotationDialect{}, annotationDriver{}), Cases: []drivertest.Case{
		{Name: "annotate", Object: svc(map[string]string{"owner": "a"}), Cluster: c},
		{Name: "already so", Object: svc(map[string]string{"example.com/intercept": "true"}), Cluster: c},
	}})
	drivertest.RunCases(t, drivertest.CaseHarness{Provider: core.NewProvider(annotationDialect{}, annotationDriver{blocked: &core.KindError{Kind: core.ErrPrecondition, Msg: "too old"}}),
		Cases: []drivertest.Case{{Name: "blocked", Object: svc(nil), Cluster: c, Blocked: core.ErrPrecondition}}})
}

// TestMemoryConformance runs the shared scenarios on the in-memory provider.
func TestMemoryConformance(t *testing.T) {
	drivertest.RunConformance(t, drivertest.Harness{New: func(t *testing.T, s drivertest.Setup) *drivertest.Env {
		cloud := drivertest.NewMemoryCloud()
		profile := core.ClusterProfile{Allowlists: []core.Capability{drivertest.MemorySNAT}}
		if s.NotAllowlisted {
			profile.Allowlists = nil
		}
		web := svc(map[string]string{"owner": "team-a"})
		web.Spec.Ports = []corev1.ServicePort{{Port: 80}, {Port: 53, Protocol: corev1.ProtocolUDP}}
		facts, err := core.NewCluster(profile, node("node-1"), node("node-2"))
		if err != nil {
			t.Fatal(err)
		}
		u, err := drivertest.ToUnstructured(web)
		if err != nil {
			t.Fatal(err)
		}
		return &drivertest.Env{
			Provider: drivertest.NewMemoryProvider(cloud), Live: drivertest.NewCluster(u), Facts: func() *core.Cluster { return facts }, Object: web,
			Policy:      core.Policy{Prefer: core.PreferLBFeatures},
			CloudWrites: cloud.Writes, CloudState: cloud.State,
			Refuse: cloud.Refuse, Busy: func() { cloud.SetBusy(true) }, Calm: func() { cloud.SetBusy(false) },
			Revert: func(*testing.T) { cloud.Set("default/web:TCP/80", false) },
		}
	}})
}

func node(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
