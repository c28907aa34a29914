package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/loopguard/loopguard/adapters/manifest"
	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/tencent"
)

func TestPlansTheExampleCluster(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, "../manifests", nil); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"Service shop/checkout: intercept-vip",
		`metadata.annotations["service.cloud.tencent.com/prevent-loopback"] (unset) → true`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "applied:") {
		t.Errorf("without a kubeconfig something was applied:\n%s", got)
	}
}

// TestPlansTheGatewayExample: a Gateway is planned as a Gateway: its fix goes on its
// spec.infrastructure.annotations, and the Service Envoy Gateway generated for it is neither
// planned on its own nor written.
func TestPlansTheGatewayExample(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, "../gateway", nil); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"Gateway shop/web: intercept-vip",
		`Gateway shop/web: spec.infrastructure.annotations["service.cloud.tencent.com/prevent-loopback"] (unset) → true`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "envoy-gateway-system/envoy-shop-web-97375646:") || strings.Contains(got, "Service envoy-gateway-system") {
		t.Errorf("the generated Service is planned on its own:\n%s", got)
	}
}

// TestAppliesAndRemovesOnARealAPIServer: what the README says examples/sdk does, against a
// real kube-apiserver holding the manifests' Services: each plan applied (prevent-loopback
// written on shop/checkout), then removed (the annotation gone again, other annotations
// untouched).
func TestAppliesAndRemovesOnARealAPIServer(t *testing.T) {
	srv := apiserver.Start(t, apiserver.WithCRDPaths("../../providers/tencent/crds"))
	ctx := context.Background()
	var r manifest.Reader
	set, errs := r.Read("../manifests")
	if len(errs) > 0 {
		t.Fatal(errs[0])
	}
	dc, err := discovery.NewDiscoveryClientForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(dc)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	dyn, err := dynamic.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	namespaces := map[string]bool{}
	for _, o := range set.Objects {
		u := &unstructured.Unstructured{}
		if u.Object, err = runtime.DefaultUnstructuredConverter.ToUnstructured(o.Object); err != nil {
			t.Fatal(err)
		}
		switch u.GetKind() {
		case "Service", "Ingress", tencent.ServiceConfigKind:
		default:
			continue
		}
		if ns := u.GetNamespace(); ns != "" && !namespaces[ns] {
			namespaces[ns] = true
			if _, err := srv.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		m, err := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
		if err != nil {
			t.Fatal(err)
		}
		unstructured.RemoveNestedField(u.Object, "status")
		if _, err := dyn.Resource(m.Resource).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{FieldManager: "kubectl"}); err != nil {
			t.Fatalf("%s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}

	var out bytes.Buffer
	if err := run(ctx, &out, "../manifests", srv.Config()); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		`applied: cluster Service shop/checkout: metadata.annotations["service.cloud.tencent.com/prevent-loopback"] (unset) → true`,
		`removed: cluster Service shop/checkout: metadata.annotations["service.cloud.tencent.com/prevent-loopback"] true → (unset)`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	svc, err := srv.Client().CoreV1().Services("shop").Get(ctx, "checkout", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := svc.Annotations[tencent.AnnotationPreventLoopback]; ok {
		t.Errorf("after remove shop/checkout still has prevent-loopback %q", v)
	}
}

// TestAppliesAndRemovesAGatewayOnARealAPIServer: examples/sdk on examples/gateway against a real
// kube-apiserver serving Gateway API: shop/web's remedy is written on the Gateway's
// spec.infrastructure.annotations and never on the Service Envoy Gateway generated; with no
// implementation running to copy it there, the check is reported pending instead of failing
// the run; then the removal takes the value back from the Gateway.
func TestAppliesAndRemovesAGatewayOnARealAPIServer(t *testing.T) {
	srv := apiserver.Start(t, apiserver.WithCRDPaths(append(apiserver.GatewayAPICRDs(t), "../../providers/tencent/crds")...))
	ctx := context.Background()
	var r manifest.Reader
	set, errs := r.Read("../gateway")
	if len(errs) > 0 {
		t.Fatal(errs[0])
	}
	dc, err := discovery.NewDiscoveryClientForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(dc)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	dyn, err := dynamic.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	namespaces := map[string]bool{}
	for _, o := range set.Objects {
		u := &unstructured.Unstructured{}
		if u.Object, err = runtime.DefaultUnstructuredConverter.ToUnstructured(o.Object); err != nil {
			t.Fatal(err)
		}
		switch u.GetKind() {
		case "Service", "Gateway", "GatewayClass":
		default:
			continue // Envoy Gateway's own kinds are not served here
		}
		m, err := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
		if err != nil {
			t.Fatal(err)
		}
		if m.Scope.Name() == meta.RESTScopeNameRoot {
			u.SetNamespace("") // the reader gives every object a namespace; a GatewayClass has none
		}
		if ns := u.GetNamespace(); ns != "" && !namespaces[ns] {
			namespaces[ns] = true
			if _, err := srv.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		unstructured.RemoveNestedField(u.Object, "status")
		if _, err := dyn.Resource(m.Resource).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{FieldManager: "envoy-gateway"}); err != nil {
			t.Fatalf("%s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}

	var out bytes.Buffer
	if err := run(ctx, &out, "../gateway", srv.Config()); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	const remedy = `spec.infrastructure.annotations["service.cloud.tencent.com/prevent-loopback"]`
	for _, want := range []string{
		"applied: cluster Gateway shop/web: " + remedy + " (unset) → true",
		"pending: ",
		"removed: cluster Gateway shop/web: " + remedy + " true → (unset)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	svc, err := srv.Client().CoreV1().Services("envoy-gateway-system").Get(ctx, "envoy-shop-web-97375646", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range svc.ManagedFields {
		if m.Manager == "loopguard" {
			t.Errorf("the SDK wrote the Service Envoy Gateway generated: %s", m.FieldsV1.Raw)
		}
	}
	gw, err := dyn.Resource(schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}).Namespace("shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	infra, _, _ := unstructured.NestedStringMap(gw.Object, "spec", "infrastructure", "annotations")
	if _, still := infra[tencent.AnnotationPreventLoopback]; still || infra["service.kubernetes.io/qcloud-loadbalancer-internal-subnetid"] == "" {
		t.Errorf("after remove the Gateway's spec.infrastructure.annotations are %v: want loopguard's value gone, the user's kept", infra)
	}
}
