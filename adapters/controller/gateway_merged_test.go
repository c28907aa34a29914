package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
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

// TestGatewayMergedReJudgedWhenTheClassServiceChanges: with Envoy Gateway's mergeGateways the
// class's one Service is labelled with the GatewayClass, not with a Gateway
// (internal/gatewayapi/translator.go buildIR); the controller judges each Gateway of the class
// through it and re-judges them all when it changes, instead of at the cache's next resync.
func TestGatewayMergedReJudgedWhenTheClassServiceChanges(t *testing.T) {
	srv := apiserver.Start(t, apiserver.WithCRDPaths(gatewayCRDs(t)...))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := srv.Client()
	dyn, err := dynamic.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"shop", "team", "envoy-gateway-system", "loopguard-gw"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	node := "10.0.1.11"
	for _, n := range []string{node, "10.0.1.12", "10.0.1.13"} {
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
metadata: {name: eg}
spec: {controllerName: gateway.envoyproxy.io/gatewayclass-controller}`)
	for _, ns := range []string{"shop", "team"} {
		create(gwRes, ns, `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: `+ns+`}
spec:
  gatewayClassName: eg
  listeners: [{name: http, port: 80, protocol: HTTP}]`)
	}
	const subnet = "service.kubernetes.io/qcloud-loadbalancer-internal-subnetid"
	const prevent = "service.cloud.tencent.com/prevent-loopback"
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "envoy-gateway-system", Name: "envoy-eg-merged",
		Labels:      map[string]string{"gateway.envoyproxy.io/owning-gatewayclass": "eg"},
		Annotations: map[string]string{subnet: "subnet-3f9a2c1d"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Ports: []corev1.ServicePort{{Name: "http-80", Port: 80}}}}
	if _, err := cs.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{FieldManager: "envoy-gateway"}); err != nil {
		t.Fatal(err)
	}
	ready := true
	if _, err := cs.DiscoveryV1().EndpointSlices(svc.Namespace).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name + "-a", Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"172.16.0.21"}, NodeName: &node, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}, metav1.CreateOptions{}); err != nil {
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
	verdicts := func() string {
		var out []string
		for _, ns := range []string{"shop", "team"} {
			u, err := dyn.Resource(gwRes).Namespace(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, u.GetAnnotations()[AnnotationVerdict])
		}
		return strings.Join(out, " | ")
	}
	both := func(prefix string) func() bool {
		return func() bool {
			v := strings.Split(verdicts(), " | ")
			return strings.HasPrefix(v[0], prefix) && strings.HasPrefix(v[1], prefix)
		}
	}
	until(t, ctx, "both Gateways of the merged class judged at risk through the class's Service", both(ReasonAtRisk+":"), verdicts)
	patch := []byte(`{"metadata":{"annotations":{"` + prevent + `":"true"}}}`)
	if _, err := cs.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "both Gateways re-judged once the class's Service carries the remedy", both(ReasonNoLoop+":"), verdicts)
}
