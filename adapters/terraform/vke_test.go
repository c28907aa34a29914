package terraform

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/drivertest"
	"github.com/loopguard/loopguard/providers/volcengine"
)

// vkeFixture is a VKE cluster in memory with the Service ledger in Proxy mode and a declared
// client Pod on a backend's node: seed 003's loop.
func vkeFixture(t *testing.T) (*Backend, *drivertest.Cluster) {
	t.Helper()
	svc := &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: "orders", Annotations: map[string]string{
			volcengine.AnnotationIPMode: "Proxy", volcengine.AnnotationAddressType: "PRIVATE",
			"loopguard.io/clients": "app=billing"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "ledger"},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Ports:                 []corev1.ServicePort{{Port: 9000, Protocol: corev1.ProtocolTCP}}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.168.10.11", IPMode: ptr(corev1.LoadBalancerIPModeProxy)}}}},
	}
	u, err := drivertest.ToUnstructured(svc)
	if err != nil {
		t.Fatal(err)
	}
	cluster := drivertest.NewCluster(u)
	pod := func(name, app, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "orders", Labels: map[string]string{"app": app}},
			Spec:   corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0." + name[len(name)-1:], Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	}
	facts := []runtime.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}},
		pod("ledger-1", "ledger", "node-1"), pod("billing-2", "billing", "node-1"),
	}
	return &Backend{
		CheckInterval: 5 * time.Millisecond, CheckTimeout: 10 * time.Second,
		Provider: func(context.Context, runtime.Object) (core.Provider, error) {
			return volcengine.NewProvider(&volcengine.DriverOptions{NoClusterReads: true,
				ServerVersion: volcengine.ServerVersionFunc(func() (*version.Info, error) {
					return &version.Info{GitVersion: "v1.32.2", Major: "1", Minor: "32"}, nil
				})})
		},
		Cluster: cluster,
		Facts:   func(context.Context, string) ([]runtime.Object, error) { return facts, nil },
		Profile: core.ClusterProfile{Provider: volcengine.Name, KubernetesVersion: "v1.32.2", CCMVersion: "v1.43.0", ProxyMode: "ebpf",
			Dataplane: core.DataplaneProfile{CNI: "vpc-cni", PodInterface: "ipvlan"}},
	}, cluster
}

func ptr[T any](v T) *T { return &v }

// On VKE the ip-mode is read by the cloud-controller-manager only when a Service is created
// (seed 003, docs/vke.md). The default policy keeps Proxy and separates clients from
// backends, which only a person can do (a warning); allowing disruption switches to VIP
// through a new Service, which Terraform must show as a replacement: path forces it.
func TestVKEIPModeRequiresReplacement(t *testing.T) {
	ctx := context.Background()
	b, cluster := vkeFixture(t)
	spec := Spec{Namespace: "orders", Name: "ledger"}
	pl, ds := b.Plan(ctx, spec, nil)
	if ds.HasError() || pl.State.Remedy != "node-separation" || pl.State.Path != "Proxy" || len(pl.Diff) != 0 || len(pl.RequiresReplace) != 0 {
		t.Fatalf("default plan: %+v %v", pl.State, ds)
	}
	if len(ds) == 0 || ds[0].Severity != Warning || !strings.Contains(ds[0].Detail, "podAntiAffinity") {
		t.Errorf("default plan: want the anti-affinity for the user as a warning, got %v", ds)
	}
	st, ds := b.Create(ctx, spec)
	if ds.HasError() || len(st.Managed) != 0 {
		t.Fatalf("create: %+v %v", st, ds)
	}

	spec.AllowDisruptive = true
	pl, ds = b.Plan(ctx, spec, st)
	if ds.HasError() {
		t.Fatal(ds)
	}
	if d := cmp.Diff([]string{AttrPath}, pl.RequiresReplace); d != "" || pl.State.Path != "VIP" {
		t.Fatalf("disruptive plan: RequiresReplace (-want +got):\n%s\nstate %+v", d, pl.State)
	}
	modeKey := "Service orders/ledger-vip: metadata.annotations." + volcengine.AnnotationIPMode
	if pl.State.Managed[modeKey] != "VIP" {
		t.Errorf("disruptive plan: managed %v", pl.State.Managed)
	}
	// A new protection from scratch is no replacement of anything.
	if fresh, _ := b.Plan(ctx, spec, nil); len(fresh.RequiresReplace) != 0 {
		t.Errorf("plan without a prior state: RequiresReplace %v", fresh.RequiresReplace)
	}

	// Terraform replaces: destroy (nothing of loopguard's on the old Service), then create,
	// while a stand-in for the cloud-controller-manager publishes the new Service's ip-mode.
	if ds := b.Delete(ctx, *st); ds.HasError() {
		t.Fatal(ds)
	}
	done := make(chan struct{})
	defer close(done)
	go playCCM(cluster, core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "orders", Name: "ledger-vip"}, done)
	st, ds = b.Create(ctx, spec)
	if ds.HasError() {
		t.Fatalf("create with disruption allowed: %v", ds)
	}
	if st.Path != "VIP" || st.Managed[modeKey] != "VIP" {
		t.Errorf("state: %+v", st)
	}
	again, ds := b.Plan(ctx, spec, st)
	if ds.HasError() || len(again.Diff) != 0 || len(again.RequiresReplace) != 0 {
		t.Errorf("plan after the replacement: %v %v %v", again.Diff, again.RequiresReplace, ds)
	}
}

// playCCM does what VKE's cloud-controller-manager does for a new Service: give it an address
// and publish the ip-mode its annotation asks for.
func playCCM(c *drivertest.Cluster, key core.ObjectKey, done <-chan struct{}) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		u, _ := c.Get(context.Background(), key)
		if u == nil {
			continue
		}
		mode := u.GetAnnotations()[volcengine.AnnotationIPMode]
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"ip": "192.168.10.12", "ipMode": mode}}, "status", "loadBalancer", "ingress")
		c.Put(u)
		return
	}
}
