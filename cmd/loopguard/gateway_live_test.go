package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/internal/apiserver"
)

// TestScanAndApplyGatewayOnARealAPIServer: scan reads Gateways, GatewayClasses and the Service
// an implementation generated (NGINX Gateway Fabric's marks: the Gateway's namespace, the
// gateway-name label) from a real kube-apiserver and reports the Gateway, not the Service;
// apply --object Gateway/... writes the remedy on the Gateway and nothing on the Service.
func TestScanAndApplyGatewayOnARealAPIServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	if err != nil {
		t.Skipf("cannot find the sigs.k8s.io/gateway-api module: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard", "*.yaml"))
	crds := []string{mustAbs("../../providers/tencent/crds")}
	for _, f := range files {
		if !strings.Contains(filepath.Base(f), "_vap_") {
			crds = append(crds, f)
		}
	}
	srv := apiserver.Start(t, apiserver.WithCRDPaths(crds...))
	ctx := context.Background()
	cs := srv.Client()
	dyn, err := dynamic.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node := "10.0.1.11"
	for _, n := range []string{node, "10.0.1.12", "10.0.1.13"} {
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create := func(resource, ns, doc string) {
		t.Helper()
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		gvr := schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: resource}
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	const subnet = "service.kubernetes.io/qcloud-loadbalancer-internal-subnetid"
	create("gatewayclasses", "", `{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: nginx},
  spec: {controllerName: gateway.nginx.org/nginx-gateway-controller}}`)
	create("gateways", "shop", `{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: web, namespace: shop},
  spec: {gatewayClassName: nginx, infrastructure: {annotations: {`+subnet+`: subnet-1}}, listeners: [{name: http, port: 80, protocol: HTTP}]}}`)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-nginx",
		Labels: map[string]string{"gateway.networking.k8s.io/gateway-name": "web"}, Annotations: map[string]string{subnet: "subnet-1"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Ports: []corev1.ServicePort{{Name: "port-80", Port: 80}}}}
	if _, err := cs.CoreV1().Services("shop").Create(ctx, svc, metav1.CreateOptions{FieldManager: "nginx-gateway"}); err != nil {
		t.Fatal(err)
	}
	ready := true
	if _, err := cs.DiscoveryV1().EndpointSlices("shop").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-nginx-a", Labels: map[string]string{discoveryv1.LabelServiceName: "web-nginx"}}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"172.16.0.21"}, NodeName: &node, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := writeKubeconfig(t, srv.Config())
	t.Chdir(repoRoot)
	common := []string{"--kubeconfig", kubeconfig, "-n", "shop", "--profile", "examples/manifests/profile.yaml"}

	stdout, stderr, code := runCLI(t, "", append([]string{"scan", "-o", "json"}, common...)...)
	if code != exitOK {
		t.Fatalf("scan exit %d: %s", code, stderr)
	}
	var rep Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Object.Kind != "Gateway" || rep.Results[0].Object.Name != "web" || rep.Results[0].Risk != "at-risk" {
		t.Fatalf("scan results %+v, want Gateway shop/web at risk alone", rep.Results)
	}
	if len(rep.Skipped) != 1 || rep.Skipped[0].Object.Name != "web-nginx" || !strings.Contains(rep.Skipped[0].Why, "Gateway shop/web") {
		t.Errorf("skipped %+v, want the generated Service, naming its Gateway", rep.Skipped)
	}

	_, stderr, _ = runCLI(t, "", append([]string{"apply", "--object", "Gateway/shop/web"}, common...)...)
	gw, err := dyn.Resource(schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}).Namespace("shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(gw.Object, "spec", "infrastructure", "annotations", "service.cloud.tencent.com/prevent-loopback"); v != "true" {
		t.Errorf("apply did not write the remedy on the Gateway (stderr: %s)", stderr)
	}
	live, err := cs.CoreV1().Services("shop").Get(ctx, "web-nginx", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range live.ManagedFields {
		if m.Manager == core.FieldManager {
			t.Errorf("apply wrote the Service NGINX Gateway Fabric owns: %s", m.FieldsV1.Raw)
		}
	}
}

// TestScanNamespaceReadsEnvoyGatewaysService: scan -n shop reads, beside shop, the Service Envoy
// Gateway generated for shop's Gateway in its own namespace (and that Service's endpoints), so
// the Gateway is judged through it instead of through a Service synthesized from the Gateway;
// the other Services of Envoy Gateway's namespace are not reported.
func TestScanNamespaceReadsEnvoyGatewaysService(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	if err != nil {
		t.Skipf("cannot find the sigs.k8s.io/gateway-api module: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard", "*.yaml"))
	var crds []string
	for _, f := range files {
		if !strings.Contains(filepath.Base(f), "_vap_") {
			crds = append(crds, f)
		}
	}
	srv := apiserver.Start(t, apiserver.WithCRDPaths(crds...))
	ctx := context.Background()
	cs := srv.Client()
	dyn, err := dynamic.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"shop", "envoy-gateway-system"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	node := "10.0.1.11"
	for _, n := range []string{node, "10.0.1.12", "10.0.1.13"} {
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create := func(resource, ns, doc string) {
		t.Helper()
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		gvr := schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: resource}
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	const subnet = "service.kubernetes.io/qcloud-loadbalancer-internal-subnetid"
	create("gatewayclasses", "", `{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: eg},
  spec: {controllerName: gateway.envoyproxy.io/gatewayclass-controller}}`)
	create("gateways", "shop", `{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: web, namespace: shop},
  spec: {gatewayClassName: eg, infrastructure: {annotations: {`+subnet+`: subnet-1}}, listeners: [{name: http, port: 80, protocol: HTTP}]}}`)
	lb := func(name string, labels map[string]string) {
		t.Helper()
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "envoy-gateway-system", Name: name, Labels: labels, Annotations: map[string]string{subnet: "subnet-1"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
				Ports: []corev1.ServicePort{{Name: "http-80", Port: 80}}}}
		if _, err := cs.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	const generated = "envoy-shop-web-97375646"
	lb(generated, map[string]string{"gateway.envoyproxy.io/owning-gateway-name": "web", "gateway.envoyproxy.io/owning-gateway-namespace": "shop"})
	lb("envoy-other-api-0badf00d", map[string]string{"gateway.envoyproxy.io/owning-gateway-name": "api", "gateway.envoyproxy.io/owning-gateway-namespace": "other"})
	ready := true
	if _, err := cs.DiscoveryV1().EndpointSlices("envoy-gateway-system").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: generated + "-a", Labels: map[string]string{discoveryv1.LabelServiceName: generated}}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"172.16.0.21"}, NodeName: &node, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := writeKubeconfig(t, srv.Config())
	t.Chdir(repoRoot)
	stdout, stderr, code := runCLI(t, "", "scan", "-o", "json", "--kubeconfig", kubeconfig, "-n", "shop", "--profile", "examples/manifests/profile.yaml")
	if code != exitOK {
		t.Fatalf("scan exit %d: %s", code, stderr)
	}
	var rep Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Object.Kind != "Gateway" || rep.Results[0].Object.Name != "web" {
		t.Fatalf("scan results %+v, want Gateway shop/web alone", rep.Results)
	}
	b, _ := json.Marshal(rep.Results[0])
	if !strings.Contains(string(b), "gateway-generated-service") || !strings.Contains(string(b), "envoy-gateway-system/"+generated) {
		t.Errorf("Gateway shop/web not judged through the Service Envoy Gateway generated:\n%s", b)
	}
	if len(rep.Skipped) != 1 || rep.Skipped[0].Object.Name != generated {
		t.Errorf("skipped %+v, want the generated Service alone (envoy-other-api-0badf00d belongs to another namespace's Gateway)", rep.Skipped)
	}
}
