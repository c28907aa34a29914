package gateway_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/adapters/terraform"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/drivertest"
	"github.com/loopguard/loopguard/providers/gateway"
	"github.com/loopguard/loopguard/providers/tencent"
)

// TestGatewayResource: a loopguard resource of kind Gateway plans and applies the remedy on
// the Gateway's spec.infrastructure, leaves the Service Envoy Gateway generated alone, and its
// apply waits for the implementation to carry the value to that Service.
func TestGatewayResource(t *testing.T) {
	gw := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"namespace": "shop", "name": "web"},
		"spec": map[string]any{"gatewayClassName": "eg",
			"infrastructure": map[string]any{"annotations": map[string]any{"service.kubernetes.io/qcloud-loadbalancer-internal-subnetid": "subnet-1"}},
			"listeners":      []any{map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP"}}}}}
	class := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
		"metadata": map[string]any{"name": "eg"}, "spec": map[string]any{"controllerName": "gateway.envoyproxy.io/gatewayclass-controller"}}}
	svc := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "envoy-gateway-system", Name: "envoy-shop-web-97375646",
			Labels:      map[string]string{"gateway.envoyproxy.io/owning-gateway-name": "web", "gateway.envoyproxy.io/owning-gateway-namespace": "shop"},
			Annotations: map[string]string{"service.kubernetes.io/qcloud-loadbalancer-internal-subnetid": "subnet-1"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
	su, err := drivertest.ToUnstructured(svc)
	if err != nil {
		t.Fatal(err)
	}
	cluster := drivertest.NewCluster(gw.DeepCopy(), su)
	b := &terraform.Backend{
		Provider: func(context.Context, runtime.Object) (core.Provider, error) {
			p, err := tencent.NewProvider(nil)
			if err != nil {
				return nil, err
			}
			return gateway.Wrap(p, nil), nil
		},
		Cluster: cluster,
		Facts: func(context.Context, string) ([]runtime.Object, error) {
			return []runtime.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}},
				gw.DeepCopy(), class, svc}, nil
		},
		Profile:       core.ClusterProfile{Provider: tencent.Name, ProxyMode: core.ProxyModeIPVS, KubeProxyVersion: "v1.20.6-tke.12"},
		CheckTimeout:  300e6, // 0.3 s: nothing copies the annotation here
		CheckInterval: 50e6,
	}
	spec := terraform.Spec{Kind: "Gateway", Namespace: "shop", Name: "web"}
	if spec.ID() != "Gateway/shop/web" {
		t.Errorf("ID %q", spec.ID())
	}
	if back, err := terraform.ParseID(spec.ID()); err != nil || back.Kind != "Gateway" {
		t.Errorf("ParseID(%q) = %+v, %v", spec.ID(), back, err)
	}
	planned, ds := b.Plan(context.Background(), spec, nil)
	if ds.HasError() {
		t.Fatalf("plan: %v", ds)
	}
	if len(planned.Diff) != 1 || !strings.HasPrefix(planned.Diff[0], "cluster Gateway shop/web: spec.infrastructure.annotations") {
		t.Fatalf("diff %q, want one change on the Gateway's spec.infrastructure", planned.Diff)
	}
	// Apply writes the Gateway, then waits for Envoy Gateway to copy the value to its Service,
	// which nothing does here: the wait ends in a diagnostic, and the Service is untouched.
	_, ds = b.Create(context.Background(), spec)
	live, _ := cluster.Get(context.Background(), core.ObjectKey{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", Namespace: "shop", Name: "web"})
	if v, _, _ := unstructured.NestedString(live.Object, "spec", "infrastructure", "annotations", "service.cloud.tencent.com/prevent-loopback"); v != "true" {
		t.Errorf("the Gateway's spec.infrastructure.annotations lack the remedy: %v", live.Object["spec"])
	}
	ls, _ := cluster.Get(context.Background(), core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: svc.Namespace, Name: svc.Name})
	if _, ok := ls.GetAnnotations()["service.cloud.tencent.com/prevent-loopback"]; ok {
		t.Errorf("loopguard wrote the generated Service")
	}
	if !ds.HasError() || !strings.Contains(ds[0].Summary+ds[0].Detail, "copied") {
		t.Errorf("apply diagnostics %v, want the wait for Envoy Gateway to copy the value", ds)
	}
}
