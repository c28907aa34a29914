package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/tencent"
)

var gatewaysGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}

// copyInfrastructure does what Envoy Gateway does with a Gateway's spec.infrastructure
// annotations: it renders them onto the Service it generated, over the Service's base
// annotations, each time the Gateway changes. It stops when ctx ends.
func copyInfrastructure(ctx context.Context, t *testing.T, dyn dynamic.Interface, s *apiserver.Server, gwNS, gwName, svcNS, svcName string, base map[string]string) {
	w, err := dyn.Resource(gatewaysGVR).Namespace(gwNS).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + gwName})
	if err != nil {
		t.Error(err)
		return
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			gw, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			infra, _, _ := unstructured.NestedStringMap(gw.Object, "spec", "infrastructure", "annotations")
			svc, err := s.Client().CoreV1().Services(svcNS).Get(ctx, svcName, metav1.GetOptions{})
			if err != nil {
				return
			}
			svc.Annotations = map[string]string{}
			for k, v := range base {
				svc.Annotations[k] = v
			}
			for k, v := range infra {
				svc.Annotations[k] = v
			}
			if _, err := s.Client().CoreV1().Services(svcNS).Update(ctx, svc, metav1.UpdateOptions{FieldManager: "envoy-gateway"}); err != nil && ctx.Err() == nil {
				t.Errorf("the stand-in for Envoy Gateway could not update its Service: %v", err)
			}
		}
	}()
}

// TestTofuGateway: the example provider protects a Gateway (kind = "Gateway"): it reads the
// Gateway, its class and the Service Envoy Gateway generated in its own namespace, plans the
// remedy on the Gateway's spec.infrastructure.annotations, never on that Service, waits on apply
// until the implementation has carried it to the Service, imports by Gateway/namespace/name and
// takes the value back from the Gateway on destroy. A stand-in copies the Gateway's
// spec.infrastructure annotations to the Service, as Envoy Gateway does (docs/gateway.md#proof
// runs the real one).
func TestTofuGateway(t *testing.T) {
	tofuBinary(t)
	s := apiserver.Start(t, apiserver.WithCRDPaths(apiserver.GatewayAPICRDs(t)...))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := s.Client()
	ns := s.Namespace(t)
	const egNS = "envoy-gateway-system"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: egNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"tf-node-1", "tf-node-2", "tf-node-3"} {
		if _, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dyn, err := dynamic.NewForConfig(s.Config())
	if err != nil {
		t.Fatal(err)
	}
	class := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": map[string]any{"name": "eg"},
		"spec": map[string]any{"controllerName": "gateway.envoyproxy.io/gatewayclass-controller"}}}
	if _, err := dyn.Resource(schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}).Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gw := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": map[string]any{"name": "web", "namespace": ns},
		"spec": map[string]any{"gatewayClassName": "eg",
			"infrastructure": map[string]any{"annotations": map[string]any{tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d"}},
			"listeners":      []any{map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP"}}}}}
	if _, err := dyn.Resource(gatewaysGVR).Namespace(ns).Create(ctx, gw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The Service Envoy Gateway generated for it: its namespace, its owning-gateway labels.
	svcName := "envoy-" + ns + "-web-0a1b2c3d"
	base := map[string]string{"example.com/owner": "platform"}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: svcName, Namespace: egNS,
			Labels:      map[string]string{"gateway.envoyproxy.io/owning-gateway-name": "web", "gateway.envoyproxy.io/owning-gateway-namespace": ns},
			Annotations: map[string]string{"example.com/owner": "platform", tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Selector: map[string]string{"app": "envoy"}, Ports: []corev1.ServicePort{{Name: "http-80", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	if _, err := c.CoreV1().Services(egNS).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	copyInfrastructure(ctx, t, dyn, s, ns, "web", egNS, svcName, base)

	w := newWorkdir(t, writeKubeconfig(t, s.Config()))
	w.write(fmt.Sprintf(`
terraform {
  required_providers {
    loopguard = { source = "loopguard/loopguard" }
  }
}

variable "kubeconfig" { type = string }

provider "loopguard" {
  cloud      = "tencent"
  kubeconfig = var.kubeconfig
  profile = <<-EOT
    apiVersion: loopguard.io/v1alpha1
    kind: ClusterProfile
    proxyMode: ipvs
    kubeProxyVersion: v1.20.6-tke.12
  EOT
}

resource "loopguard_loopback_protection" "web" {
  kind      = "Gateway"
  namespace = %q
  name      = "web"
}
`, ns))
	w.ok("init", "-input=false")
	managed := "Gateway " + ns + "/web: spec.infrastructure.annotations." + tencent.AnnotationPreventLoopback
	out, code := w.planExit()
	if code != 2 || !strings.Contains(out, `"`+managed+`" = "true"`) {
		t.Fatalf("first plan: want the remedy on the Gateway's spec.infrastructure\n%s", out)
	}
	if strings.Contains(out, `"Service `) {
		t.Fatalf("first plan writes a Service Envoy Gateway owns\n%s", out)
	}

	w.ok("apply", "-auto-approve", "-input=false")
	live, err := dyn.Resource(gatewaysGVR).Namespace(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(live.Object, "spec", "infrastructure", "annotations", tencent.AnnotationPreventLoopback); v != "true" {
		t.Fatalf("after apply the Gateway's spec.infrastructure lacks the remedy: %v", live.Object["spec"])
	}
	// apply returned after its check: the implementation had carried the value to the Service,
	// and loopguard never wrote that Service.
	got, err := c.CoreV1().Services(egNS).Get(ctx, svcName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations[tencent.AnnotationPreventLoopback] != "true" {
		t.Errorf("apply returned before the implementation carried the remedy to its Service: %v", got.Annotations)
	}
	for _, mf := range got.ManagedFields {
		if strings.Contains(mf.Manager, "loopguard") {
			t.Errorf("loopguard wrote the generated Service (manager %s)", mf.Manager)
		}
	}
	st := w.state()
	if st["id"] != "Gateway/"+ns+"/web" || st["remedy"] != "intercept-vip" || managedOf(st)[managed] != "true" {
		t.Fatalf("state after apply: %v", st)
	}
	if out, code := w.planExit(); code != 0 {
		t.Fatalf("second plan: want no changes\n%s", out)
	}

	w.ok("state", "rm", "loopguard_loopback_protection.web")
	w.ok("import", "-input=false", "loopguard_loopback_protection.web", "Gateway/"+ns+"/web")
	if st := w.state(); st["id"] != "Gateway/"+ns+"/web" || managedOf(st)[managed] != "true" {
		t.Fatalf("state after import: %v", st)
	}

	w.ok("destroy", "-auto-approve", "-input=false")
	live, err = dyn.Resource(gatewaysGVR).Namespace(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	infra, _, _ := unstructured.NestedStringMap(live.Object, "spec", "infrastructure", "annotations")
	if _, still := infra[tencent.AnnotationPreventLoopback]; still || infra[tencent.AnnotationInternalSubnet] != "subnet-1a2b3c4d" {
		t.Errorf("after destroy the Gateway's spec.infrastructure.annotations are %v: want loopguard's value gone and the user's kept", infra)
	}
	eventually(t, "the implementation to drop the remedy from its Service", func() bool {
		got, err := c.CoreV1().Services(egNS).Get(ctx, svcName, metav1.GetOptions{})
		return err == nil && got.Annotations[tencent.AnnotationPreventLoopback] == "" && got.Annotations["example.com/owner"] == "platform"
	})
}
