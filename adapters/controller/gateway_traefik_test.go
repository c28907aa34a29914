package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/tencent"
)

// TestGatewayTraefikReJudgedWhenItsServiceChanges: a Traefik Gateway is judged through the
// Service Traefik publishes (named by its Pod's arguments), which names no Gateway; when that
// Service changes (someone turns prevent-loopback on), the controller re-judges the Gateway
// at once instead of at the cache's next resync.
func TestGatewayTraefikReJudgedWhenItsServiceChanges(t *testing.T) {
	srv := apiserver.Start(t, apiserver.WithCRDPaths(gatewayCRDs(t)...))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := srv.Client()
	dyn, err := dynamic.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"edge", "traefik", "loopguard-gw"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"10.0.1.11", "10.0.1.12", "10.0.1.13"} {
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"kubernetes.io/hostname": n}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create := func(gvr schema.GroupVersionResource, ns, doc string) {
		t.Helper()
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	gwRes := schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	create(schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}, "", `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: traefik}
spec: {controllerName: traefik.io/gateway-controller}`)
	create(gwRes, "edge", `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: edge}
spec:
  gatewayClassName: traefik
  listeners: [{name: web, port: 8000, protocol: HTTP}]`)
	if _, err := cs.CoreV1().Pods("traefik").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "traefik-0", Labels: map[string]string{"app.kubernetes.io/name": "traefik"}},
		Spec: corev1.PodSpec{NodeName: "10.0.1.12", Containers: []corev1.Container{{Name: "traefik", Image: "traefik", Args: []string{
			"--entryPoints.web.address=:8000/tcp", "--providers.kubernetesgateway",
			"--providers.kubernetesgateway.statusaddress.service.name=traefik", "--providers.kubernetesgateway.statusaddress.service.namespace=traefik"}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const subnet = "service.kubernetes.io/qcloud-loadbalancer-internal-subnetid"
	const prevent = "service.cloud.tencent.com/prevent-loopback"
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "traefik", Name: "traefik", Annotations: map[string]string{subnet: "subnet-3f9a2c1d"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app.kubernetes.io/name": "traefik"},
			Ports: []corev1.ServicePort{{Name: "web", Port: 80}}}}
	if _, err := cs.CoreV1().Services("traefik").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cfg, leaseNS := installRBAC("../../deploy/base/rbac.yaml")(&harness{t: t, srv: srv, ns: "loopguard-gw"})
	mo := ManagerOptions(ManagerConfig{MetricsAddr: "0", ProbeAddr: "0", LeaderElection: true, LeaderElectionNamespace: leaseNS})
	skip := true
	mo.Controller = config.Controller{SkipNameValidation: &skip}
	mgr, err := manager.New(cfg, mo)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tencent.NewProvider(nil)
	if err != nil {
		t.Fatal(err)
	}
	if g, err := SetupGateways(mgr, p, &Options{Profile: ipvs}); err != nil || g == nil {
		t.Fatalf("SetupGateways: %v, %v", g, err)
	}
	mctx, mcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	defer func() {
		mcancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	verdictOfGateway := func() string {
		u, err := dyn.Resource(gwRes).Namespace("edge").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u.GetAnnotations()[AnnotationVerdict]
	}
	var verdict string
	until(t, ctx, "the Traefik Gateway judged at risk through Traefik's Service", func() bool {
		verdict = verdictOfGateway()
		return strings.HasPrefix(verdict, ReasonAtRisk+":")
	}, func() string { return verdict })
	// Someone turns prevent-loopback on, on Traefik's own Service (nothing rewrites it from the
	// Gateway): the Gateway is re-judged safe.
	patch := []byte(`{"metadata":{"annotations":{"` + prevent + `":"true"}}}`)
	if _, err := cs.CoreV1().Services("traefik").Patch(ctx, "traefik", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the Traefik Gateway re-judged once its Service carries the remedy", func() bool {
		verdict = verdictOfGateway()
		return strings.HasPrefix(verdict, ReasonNoLoop+":")
	}, func() string { return verdict })
}
