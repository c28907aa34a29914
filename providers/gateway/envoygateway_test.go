package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/loopguard/loopguard/adapters/kube"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/gateway"
	"github.com/loopguard/loopguard/providers/tencent"
)

// envEnvoyGateway names the folder hack/envoy-gateway.sh prints: bin/envoy-gateway and the
// CRDs (Gateway API's standard channel at the release Envoy Gateway requires, and Envoy
// Gateway's own).
const envEnvoyGateway = "LOOPGUARD_ENVOY_GATEWAY"

const (
	egNamespace = "envoy-gateway-system"
	// setupTime bounds certgen and the namespaces once kube-apiserver is ready; testTime bounds
	// each test once the controller runs. Neither counts kube-apiserver's start, which
	// internal/apiserver bounds (and which may wait for a start slot on a busy machine first).
	setupTime  = 2 * time.Minute
	testTime   = 4 * time.Minute
	preventKey = "service.cloud.tencent.com/prevent-loopback"
	subnetKey  = "service.kubernetes.io/qcloud-loadbalancer-internal-subnetid"
)

var (
	gvrGateway      = schema.GroupVersionResource{Group: gateway.Group, Version: "v1", Resource: "gateways"}
	gvrGatewayClass = schema.GroupVersionResource{Group: gateway.Group, Version: "v1", Resource: "gatewayclasses"}
)

// TestEnvoyGatewayCarriesTheRemedy runs Envoy Gateway's real controller against a real
// kube-apiserver: it generates the Gateway's LoadBalancer Service; loopguard's remedy, applied
// through the Reconciler and the server-side-apply writer, lands on the Gateway's
// spec.infrastructure.annotations; the controller carries it to the Service; and a direct write
// to the Service is reverted by the controller, which is why loopguard never makes one.
func TestEnvoyGatewayCarriesTheRemedy(t *testing.T) {
	s, cs, dyn, logs := startEnvoyGateway(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTime)
	defer cancel()

	// A private CLB Gateway, as examples/gateway/gateways.yaml has it.
	mustCreate(t, ctx, dyn.Resource(gvrGatewayClass), `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: eg}
spec: {controllerName: gateway.envoyproxy.io/gatewayclass-controller}`)
	mustCreate(t, ctx, dyn.Resource(gvrGateway).Namespace("shop"), `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: shop}
spec:
  gatewayClassName: eg
  infrastructure:
    annotations:
      `+subnetKey+`: subnet-3f9a2c1d
  listeners: [{name: http, port: 80, protocol: HTTP}]`)
	start := time.Now()
	svc := waitService(t, ctx, cs, logs, func(s *corev1.Service) bool { return s.Annotations[subnetKey] == "subnet-3f9a2c1d" })
	t.Logf("Envoy Gateway generated Service %s/%s in %v", svc.Namespace, svc.Name, time.Since(start).Round(time.Millisecond))
	if want := gateway.EnvoyServiceName("shop", "web"); svc.Name != want {
		t.Errorf("generated Service %s, loopguard names it %s when judging the Gateway alone", svc.Name, want)
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		t.Fatalf("generated Service type %s, want LoadBalancer", svc.Spec.Type)
	}
	if o, ok := gateway.OwnerOf(svc); !ok || o.Namespace != "shop" || o.Name != "web" || o.Implementation != gateway.EnvoyGateway {
		t.Fatalf("the real Service is attributed to %+v (%v), want Envoy Gateway's Gateway shop/web; labels %v", o, ok, svc.Labels)
	}

	// Placement: nodes, a client on a proxy's node (envtest runs no kubelet: the objects say it).
	profile, _ := readExample(t)
	for _, n := range []string{"10.0.1.11", "10.0.1.12", "10.0.1.13"} {
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"kubernetes.io/hostname": n}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	node := "10.0.1.11"
	ready := true
	if _, err := cs.DiscoveryV1().EndpointSlices(egNamespace).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: svc.Name + "-test", Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"172.16.0.21"}, NodeName: &node, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("shop").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "storefront-0", Labels: map[string]string{"app": "storefront"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "storefront"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// loopguard: gather, plan, apply through the Reconciler and the server-side-apply writer.
	tp, err := tencent.NewProvider(nil)
	if err != nil {
		t.Fatal(err)
	}
	writer, err := kube.NewWriter(s.Config(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := core.NewReconciler(gateway.Wrap(tp, nil), &core.ReconcilerOptions{Policy: profile.Policy, ClusterWriter: writer, RetryDelay: time.Second})
	reconcile := func() (*core.Outcome, error) {
		gw, c, _ := gatherGateway(ctx, t, s.Config(), profile, "web")
		return rec.Reconcile(ctx, gw, c)
	}
	out, err := reconcile()
	var retry *core.RetryError
	switch {
	case errors.As(err, &retry):
		t.Logf("first reconcile: written, waiting for the controller: %v", err)
	case err != nil:
		t.Fatalf("reconcile: %v", err)
	}
	if out != nil {
		for _, ch := range out.Written {
			if ch.Object.Kind == "Service" {
				t.Fatalf("loopguard wrote the generated Service: %s", ch.String())
			}
		}
	}
	start = time.Now()
	svc = waitService(t, ctx, cs, logs, func(s *corev1.Service) bool { return s.Annotations[preventKey] == "true" })
	t.Logf("Envoy Gateway carried the remedy to the Service in %v", time.Since(start).Round(time.Millisecond))
	if m := managerOf(svc.ManagedFields, preventKey); m != "envoy-gateway" {
		t.Errorf("the Service's %s is managed by %q, want envoy-gateway (the controller copied it)", preventKey, m)
	}
	gw, err := dyn.Resource(gvrGateway).Namespace("shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(gw.Object, "spec", "infrastructure", "annotations", preventKey); v != "true" {
		t.Errorf("Gateway spec.infrastructure.annotations[%s] = %q, want true", preventKey, v)
	}
	if m := managerOf(gw.GetManagedFields(), preventKey); m != core.FieldManager {
		t.Errorf("the Gateway's %s is managed by %q, want %s", preventKey, m, core.FieldManager)
	}
	// Converged: a second reconcile writes nothing and finds the check holding.
	out, err = reconcile()
	if err != nil {
		t.Fatalf("second reconcile: %v", err)
	}
	if len(out.Written) != 0 {
		t.Errorf("second reconcile wrote %v", out.Written)
	}

	// Why loopguard never writes the Service: a server-side apply without force conflicts with
	// the controller's field ...
	direct := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"namespace": svc.Namespace, "name": svc.Name, "annotations": map[string]any{preventKey: "false"}}}}
	if err := writer.Apply(ctx, direct); !errors.Is(err, core.ErrConflict) {
		t.Errorf("server-side apply of %s on the generated Service: err = %v, want a conflict with envoy-gateway", preventKey, err)
	}
	// ... and a plain update that wins is reverted by the controller.
	patch := []byte(`{"metadata":{"annotations":{"` + preventKey + `":"false"}}}`)
	if _, err := cs.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	reverted := waitFor(ctx, 10*time.Second, func() bool {
		s, err := cs.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
		return err == nil && s.Annotations[preventKey] == "true"
	})
	if reverted {
		t.Logf("Envoy Gateway reverted the direct write on its own in %v", time.Since(start).Round(time.Millisecond))
	} else {
		// The controller renders the Service when the Gateway changes: any change to the
		// Gateway (here an infrastructure label) takes the direct write back.
		t.Logf("the direct write lasted %v without a Gateway change; changing the Gateway", time.Since(start).Round(time.Millisecond))
		touch := []byte(`{"spec":{"infrastructure":{"labels":{"loopguard.io/test":"touched"}}}}`)
		if _, err := dyn.Resource(gvrGateway).Namespace("shop").Patch(ctx, "web", types.MergePatchType, touch, metav1.PatchOptions{FieldManager: "someone-else"}); err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		waitService(t, ctx, cs, logs, func(s *corev1.Service) bool {
			return s.Annotations[preventKey] == "true" && s.Labels["loopguard.io/test"] == "touched"
		})
		t.Logf("Envoy Gateway reverted the direct write %v after the Gateway changed", time.Since(start).Round(time.Millisecond))
	}

	// Taking the remedy back (an SDK's uninstall, Terraform's destroy): loopguard removes what
	// it wrote from the Gateway, never touching the Service, and the controller drops the value
	// from the Service it renders.
	gwObj, c, _ := gatherGateway(ctx, t, s.Config(), profile, "web")
	removed, err := rec.Remove(ctx, gwObj, c)
	if err != nil {
		t.Fatalf("remove: %v", err)
	}
	if len(removed.Written) != 1 || removed.Written[0].Object.Kind != "Gateway" {
		t.Fatalf("remove wrote %v, want one change on the Gateway", removed.Written)
	}
	gw, err = dyn.Resource(gvrGateway).Namespace("shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	infra, _, _ := unstructured.NestedStringMap(gw.Object, "spec", "infrastructure", "annotations")
	if _, still := infra[preventKey]; still || infra[subnetKey] == "" {
		t.Errorf("after remove the Gateway's spec.infrastructure.annotations are %v: want loopguard's value gone, the user's kept", infra)
	}
	start = time.Now()
	waitService(t, ctx, cs, logs, func(s *corev1.Service) bool { _, on := s.Annotations[preventKey]; return !on })
	t.Logf("Envoy Gateway dropped the remedy from the Service %v after loopguard took it back from the Gateway", time.Since(start).Round(time.Millisecond))
}

// TestEnvoyGatewayMergedGatewaysCarryTheRemedy runs Envoy Gateway's real controller with
// mergeGateways, set the way its own example does (examples/kubernetes/merged-gateways.yaml: an
// EnvoyProxy with only spec.mergeGateways, named by the GatewayClass): two Gateways get one
// Service, labelled with the class; loopguard attributes it to them, writes the remedy on the
// EnvoyProxy's envoyService (with the provider type the CRD requires), and the controller
// carries it to the merged Service; taking it back removes the annotation from the EnvoyProxy
// (the provider type stays) and the controller drops it from the Service.
func TestEnvoyGatewayMergedGatewaysCarryTheRemedy(t *testing.T) {
	s, cs, dyn, logs := startEnvoyGateway(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTime)
	defer cancel()
	gvrEnvoyProxy := schema.GroupVersionResource{Group: "gateway.envoyproxy.io", Version: "v1alpha1", Resource: "envoyproxies"}
	mustCreate(t, ctx, dyn.Resource(gvrEnvoyProxy).Namespace(egNamespace), `apiVersion: gateway.envoyproxy.io/v1alpha1
kind: EnvoyProxy
metadata: {name: merged, namespace: `+egNamespace+`}
spec: {mergeGateways: true}`)
	mustCreate(t, ctx, dyn.Resource(gvrGatewayClass), `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: eg}
spec:
  controllerName: gateway.envoyproxy.io/gatewayclass-controller
  parametersRef: {group: gateway.envoyproxy.io, kind: EnvoyProxy, name: merged, namespace: `+egNamespace+`}`)
	for name, port := range map[string]int{"web": 80, "api": 8080} {
		mustCreate(t, ctx, dyn.Resource(gvrGateway).Namespace("shop"), fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: %s, namespace: shop}
spec:
  gatewayClassName: eg
  infrastructure:
    annotations:
      `+subnetKey+`: subnet-3f9a2c1d
  listeners: [{name: http, port: %d, protocol: HTTP}]`, name, port))
	}
	const sel = "gateway.envoyproxy.io/owning-gatewayclass=eg"
	start := time.Now()
	svc := waitServiceLabelled(t, ctx, cs, logs, sel, func(s *corev1.Service) bool {
		return s.Annotations[subnetKey] == "subnet-3f9a2c1d" && len(s.Spec.Ports) == 2
	})
	t.Logf("Envoy Gateway generated the merged Service %s/%s in %v; labels %v", svc.Namespace, svc.Name, time.Since(start).Round(time.Millisecond), svc.Labels)
	if class, ok := gateway.MergedClassOf(svc); !ok || class != "eg" {
		t.Fatalf("the real merged Service is not recognised as class eg's (%q, %v); labels %v", class, ok, svc.Labels)
	}
	if _, ok := gateway.OwnerOf(svc); ok {
		t.Errorf("the merged Service is attributed to a single Gateway; labels %v", svc.Labels)
	}
	if want := gateway.HashedName("eg"); svc.Name != want {
		t.Errorf("merged Service %s, loopguard names it %s when judging the Gateways alone", svc.Name, want)
	}

	profile, _ := readExample(t)
	for _, n := range []string{"10.0.1.11", "10.0.1.12", "10.0.1.13"} {
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"kubernetes.io/hostname": n}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	node := "10.0.1.11"
	ready := true
	if _, err := cs.DiscoveryV1().EndpointSlices(egNamespace).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: svc.Name + "-test", Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"172.16.0.21"}, NodeName: &node, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("shop").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "storefront-0", Labels: map[string]string{"app": "storefront"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "storefront"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	tp, err := tencent.NewProvider(nil)
	if err != nil {
		t.Fatal(err)
	}
	writer, err := kube.NewWriter(s.Config(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := core.NewReconciler(gateway.Wrap(tp, nil), &core.ReconcilerOptions{Policy: profile.Policy, ClusterWriter: writer, RetryDelay: time.Second})
	gather := func() (runtime.Object, *core.Cluster) {
		gw, c, _ := gatherGateway(ctx, t, s.Config(), profile, "web")
		return gw, c
	}
	obj, c := gather()
	out, err := rec.Reconcile(ctx, obj, c)
	var retry *core.RetryError
	if err != nil && !errors.As(err, &retry) {
		t.Fatalf("reconcile: %v", err)
	}
	if out != nil {
		for _, ch := range out.Written {
			if ch.Object.Kind != "EnvoyProxy" {
				t.Fatalf("loopguard wrote %s, want only the class's EnvoyProxy", ch.String())
			}
		}
	}
	start = time.Now()
	svc = waitServiceLabelled(t, ctx, cs, logs, sel, func(s *corev1.Service) bool { return s.Annotations[preventKey] == "true" })
	t.Logf("Envoy Gateway carried the remedy from the EnvoyProxy to the merged Service in %v", time.Since(start).Round(time.Millisecond))
	ep, err := dyn.Resource(gvrEnvoyProxy).Namespace(egNamespace).Get(ctx, "merged", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := managerOf(ep.GetManagedFields(), preventKey); m != core.FieldManager {
		t.Errorf("the EnvoyProxy's %s is managed by %q, want %s", preventKey, m, core.FieldManager)
	}
	obj, c = gather()
	if out, err = rec.Reconcile(ctx, obj, c); err != nil || len(out.Written) != 0 {
		t.Errorf("second reconcile: wrote %v, err %v; want nothing", out, err)
	}

	obj, c = gather()
	removed, err := rec.Remove(ctx, obj, c)
	if err != nil {
		t.Fatalf("remove: %v", err)
	}
	if len(removed.Written) != 1 || removed.Written[0].Object.Kind != "EnvoyProxy" {
		t.Fatalf("remove wrote %v, want one change on the EnvoyProxy", removed.Written)
	}
	ep, err = dyn.Resource(gvrEnvoyProxy).Namespace(egNamespace).Get(ctx, "merged", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The provider type stays: without it the CRD's defaults under spec.provider (filled in once
	// loopguard set it) would make the EnvoyProxy invalid; Kubernetes is what an EnvoyProxy
	// without a provider means.
	annotations, _, _ := unstructured.NestedStringMap(ep.Object, "spec", "provider", "kubernetes", "envoyService", "annotations")
	typ, _, _ := unstructured.NestedString(ep.Object, "spec", "provider", "type")
	merge, _, _ := unstructured.NestedBool(ep.Object, "spec", "mergeGateways")
	if _, still := annotations[preventKey]; still || typ != "Kubernetes" || !merge {
		t.Errorf("after remove the EnvoyProxy's spec is %v: want loopguard's annotation gone, mergeGateways and the provider type kept", ep.Object["spec"])
	}
	start = time.Now()
	waitServiceLabelled(t, ctx, cs, logs, sel, func(s *corev1.Service) bool { _, on := s.Annotations[preventKey]; return !on })
	t.Logf("Envoy Gateway dropped the remedy from the merged Service %v after loopguard took it back", time.Since(start).Round(time.Millisecond))
}

// TestEnvoyGatewayResolvesClientTrafficPolicies checks loopguard's listener-by-listener reading
// of ClientTrafficPolicies against Envoy Gateway's real controller: the status it writes on
// each policy says which one configures which listener (Accepted, Overridden for the listeners a
// sectionName policy took, Conflicted for a second policy of the same scope), and loopguard's
// verdict names the same listeners.
func TestEnvoyGatewayResolvesClientTrafficPolicies(t *testing.T) {
	s, _, dyn, logs := startEnvoyGateway(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTime)
	defer cancel()
	mustCreate(t, ctx, dyn.Resource(gvrGatewayClass), `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: eg}
spec: {controllerName: gateway.envoyproxy.io/gatewayclass-controller}`)
	mustCreate(t, ctx, dyn.Resource(gvrGateway).Namespace("shop"), `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: shop}
spec:
  gatewayClassName: eg
  listeners: [{name: http, port: 80, protocol: HTTP}, {name: alt, port: 8080, protocol: HTTP}]`)
	policy := func(name, target, spec string) {
		mustCreate(t, ctx, dyn.Resource(gvrCTP).Namespace("shop"), `apiVersion: gateway.envoyproxy.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: `+name+`, namespace: shop}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web`+target+`}]
  `+spec)
	}
	// Created in name order, so creation time and name agree (both order the policies).
	policy("a-all", "", "proxyProtocol: {}")
	policy("b-alt", ", sectionName: alt", "clientIPDetection: {xForwardedFor: {numTrustedHops: 1}}")
	policy("c-late-all", "", "proxyProtocol: {optional: true}")

	conditions := func(name string) map[string]string { return policyConditions(ctx, t, dyn, "shop", name) }
	var seen string
	if !waitFor(ctx, time.Minute, func() bool {
		a, b, c := conditions("a-all"), conditions("b-alt"), conditions("c-late-all")
		seen = fmt.Sprintf("a-all %v; b-alt %v; c-late-all %v", a, b, c)
		return strings.HasPrefix(a["Overridden"], "True/") && strings.Contains(a["Overridden"], "alt") &&
			strings.HasPrefix(b["Accepted"], "True/") && strings.HasPrefix(c["Accepted"], "False/Conflicted")
	}) {
		t.Fatalf("Envoy Gateway's policy status never said a-all overridden on alt, b-alt accepted, c-late-all conflicted: %s\nlogs:\n%s", seen, tail(logs.String(), 4000))
	}
	t.Logf("Envoy Gateway: %s", seen)

	gw, c, _ := gatherGateway(ctx, t, s.Config(), core.ClusterProfile{}, "web")
	res, err := core.Evaluate(gateway.NewDialect(tencent.NewDialect(nil), nil), gw, c, core.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	msgs := map[core.Code]string{}
	for _, r := range res.Exposure.Reasons {
		msgs[r.Code] = r.Message
	}
	if pp := msgs[gateway.CodeProxyProtocol]; res.Exposure.Needs.ProxyHeader != core.Yes || !strings.Contains(pp, "shop/a-all") ||
		!strings.Contains(pp, "http (port 80)") || strings.Contains(pp, "alt (port 8080)") || strings.Contains(pp, "c-late-all") {
		t.Errorf("PROXY protocol: %v, %q; want a-all's, on http (port 80) only", res.Exposure.Needs.ProxyHeader, pp)
	}
	if ca := msgs[gateway.CodeClientAddress]; res.Exposure.Needs.ClientAddress != core.Yes || !strings.Contains(ca, "shop/b-alt") || !strings.Contains(ca, "alt (port 8080)") {
		t.Errorf("client address: %v, %q; want b-alt's, on alt (port 8080)", res.Exposure.Needs.ClientAddress, ca)
	}
}

// TestEnvoyGatewayResolvesListenerSetPolicies checks loopguard's reading of ListenerSets and of
// the ClientTrafficPolicies that target them against Envoy Gateway's real controller: a
// ListenerSet of another namespace attaches to a Gateway that admits it (from: All), the
// generated Service gets its listeners' ports, and of a policy for the whole Gateway, one for
// the whole ListenerSet and one for a ListenerSet listener (sectionName), the controller's
// status says the Gateway's is overridden on the ListenerSet's listeners; loopguard's verdict
// puts each policy on the same listeners.
func TestEnvoyGatewayResolvesListenerSetPolicies(t *testing.T) {
	s, cs, dyn, logs := startEnvoyGateway(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTime)
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, ctx, dyn.Resource(gvrGatewayClass), `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: eg}
spec: {controllerName: gateway.envoyproxy.io/gatewayclass-controller}`)
	mustCreate(t, ctx, dyn.Resource(gvrGateway).Namespace("shop"), `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: shop}
spec:
  gatewayClassName: eg
  allowedListeners: {namespaces: {from: All}}
  listeners: [{name: http, port: 80, protocol: HTTP}, {name: alt, port: 8080, protocol: HTTP}]`)
	gvrLS := schema.GroupVersionResource{Group: gateway.Group, Version: "v1", Resource: "listenersets"}
	mustCreate(t, ctx, dyn.Resource(gvrLS).Namespace("team"), `apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata: {name: extra, namespace: team}
spec:
  parentRef: {name: web, namespace: shop}
  listeners: [{name: api, port: 8443, protocol: HTTP}, {name: admin, port: 9443, protocol: HTTP}]`)
	policy := func(ns, name, target, spec string) {
		mustCreate(t, ctx, dyn.Resource(gvrCTP).Namespace(ns), `apiVersion: gateway.envoyproxy.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: `+name+`, namespace: `+ns+`}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, `+target+`}]
  `+spec)
	}
	policy("shop", "gw-all", "kind: Gateway, name: web", "proxyProtocol: {}")
	policy("team", "ls-all", "kind: ListenerSet, name: extra", "clientIPDetection: {xForwardedFor: {numTrustedHops: 1}}")
	policy("team", "ls-admin", "kind: ListenerSet, name: extra, sectionName: admin", "proxyProtocol: {optional: true}")

	conditions := func(ns, name string) map[string]string { return policyConditions(ctx, t, dyn, ns, name) }
	var seen string
	if !waitFor(ctx, time.Minute, func() bool {
		g, l, a := conditions("shop", "gw-all"), conditions("team", "ls-all"), conditions("team", "ls-admin")
		seen = fmt.Sprintf("gw-all %v; ls-all %v; ls-admin %v", g, l, a)
		return strings.HasPrefix(g["Accepted"], "True/") && strings.Contains(g["Overridden"], "[admin api]") &&
			strings.HasPrefix(l["Accepted"], "True/") && strings.Contains(l["Overridden"], "[admin]") &&
			strings.HasPrefix(a["Accepted"], "True/")
	}) {
		t.Fatalf("Envoy Gateway's policy status never said gw-all overridden on [admin api], ls-all overridden on [admin], ls-admin accepted: %s\nlogs:\n%s", seen, tail(logs.String(), 4000))
	}
	t.Logf("Envoy Gateway: %s", seen)
	svc := waitService(t, ctx, cs, logs, func(s *corev1.Service) bool { return len(s.Spec.Ports) == 4 })
	var ports []int32
	for _, p := range svc.Spec.Ports {
		ports = append(ports, p.Port)
	}
	t.Logf("Envoy Gateway generated Service %s/%s with ports %v", svc.Namespace, svc.Name, ports)

	gw, c, objs := gatherGateway(ctx, t, s.Config(), core.ClusterProfile{}, "web")
	d := gateway.NewDialect(tencent.NewDialect(nil), nil)
	typed, err := gateway.AsGateway(gw)
	if err != nil {
		t.Fatal(err)
	}
	var synth []int32
	cWithout, err := core.NewCluster(core.ClusterProfile{}, withoutServices(objs)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range gateway.ServiceOf(d, typed, cWithout).Spec.Ports {
		synth = append(synth, p.Port)
	}
	if fmt.Sprint(synth) != fmt.Sprint(ports) {
		t.Errorf("the Service loopguard judges the Gateway through without the generated one has ports %v; Envoy Gateway generated %v", synth, ports)
	}
	res, err := core.Evaluate(d, gw, c, core.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	msgs := map[core.Code]string{}
	for _, r := range append(res.Exposure.Reasons, res.Exposure.Notes...) {
		msgs[r.Code] = r.Message
	}
	if pp := msgs[gateway.CodeProxyProtocol]; res.Exposure.Needs.ProxyHeader != core.Yes || !strings.Contains(pp, "shop/gw-all sets spec.proxyProtocol (or enableProxyProtocol: true) for listener http (port 80), alt (port 8080):") ||
		strings.Contains(pp, "8443") || strings.Contains(pp, "9443") {
		t.Errorf("PROXY protocol: %v, %q; want gw-all's, on http and alt only", res.Exposure.Needs.ProxyHeader, pp)
	}
	if ca := msgs[gateway.CodeClientAddress]; res.Exposure.Needs.ClientAddress != core.Yes || !strings.Contains(ca, "team/ls-all sets spec.clientIPDetection for listener api (port 8443, ListenerSet team/extra):") {
		t.Errorf("client address: %v, %q; want ls-all's, on api only", res.Exposure.Needs.ClientAddress, ca)
	}
	if l := msgs[gateway.CodeListeners]; !strings.Contains(l, "from ListenerSet team/extra: api 8443/HTTP, admin 9443/HTTP") {
		t.Errorf("listeners note %q does not list the ListenerSet's", l)
	}
}

// withoutServices drops the Services from objs.
func withoutServices(objs []runtime.Object) []runtime.Object {
	var out []runtime.Object
	for _, o := range objs {
		if _, ok := o.(*corev1.Service); !ok {
			out = append(out, o)
		}
	}
	return out
}

// startEnvoyGateway starts a real kube-apiserver with Gateway API's and Envoy Gateway's CRDs
// and Envoy Gateway's real controller against it (certgen, then the server with its xDS
// certificates bind-mounted on /certs), with the namespaces envoy-gateway-system and shop. It
// skips where LOOPGUARD_ENVOY_GATEWAY is unset or the test is not root.
func startEnvoyGateway(t *testing.T) (*apiserver.Server, kubernetes.Interface, dynamic.Interface, *bytes.Buffer) {
	t.Helper()
	dir := os.Getenv(envEnvoyGateway)
	if dir == "" {
		t.Skipf("%s is not set: run with %s=\"$(hack/envoy-gateway.sh)\" (builds Envoy Gateway from the Go module proxy once, ~10 min cold, then cached)", envEnvoyGateway, envEnvoyGateway)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: Envoy Gateway's xDS server reads its certificates from the fixed path /certs, which the test bind-mounts in a private mount namespace")
	}
	bin := filepath.Join(dir, "bin", "envoy-gateway")
	crds := crdFiles(t, dir)
	s := apiserver.Start(t, apiserver.WithCRDPaths(crds...))
	// The setup's deadline starts once the control plane is up: a start may first wait for one
	// of the machine's start slots (internal/apiserver), which says nothing about Envoy Gateway.
	ctx, cancel := context.WithTimeout(t.Context(), setupTime)
	defer cancel()
	cs := s.Client()
	dyn, err := dynamic.NewForConfig(s.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{egNamespace, "shop"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	work := t.TempDir()
	kubeconfig, err := s.Kubeconfig("envoy-gateway", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	kcPath := filepath.Join(work, "kubeconfig")
	mustWrite(t, kcPath, kubeconfig)
	env := append(os.Environ(), "KUBECONFIG="+kcPath, "ENVOY_GATEWAY_NAMESPACE="+egNamespace)

	// certgen, as the Helm chart's Job runs it: the Secrets in Envoy Gateway's namespace.
	start := time.Now()
	certgen := exec.CommandContext(ctx, bin, "certgen", "--disable-topology-injector")
	certgen.Env = env
	if out, err := certgen.CombinedOutput(); err != nil {
		t.Fatalf("envoy-gateway certgen: %v\n%s", err, out)
	}
	t.Logf("certgen: %v", time.Since(start).Round(time.Millisecond))
	// The controller reads its xDS server certificate from /certs, where the chart mounts the
	// envoy-gateway Secret.
	sec, err := cs.CoreV1().Secrets(egNamespace).Get(ctx, "envoy-gateway", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	certs := filepath.Join(work, "certs")
	if err := os.Mkdir(certs, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range sec.Data {
		mustWrite(t, filepath.Join(certs, name), data)
	}
	if err := os.MkdirAll("/certs", 0o755); err != nil {
		t.Skipf("cannot create the mount point /certs: %v", err)
	}
	cfgPath := filepath.Join(work, "envoy-gateway.yaml")
	mustWrite(t, cfgPath, []byte(`apiVersion: gateway.envoyproxy.io/v1alpha1
kind: EnvoyGateway
gateway:
  controllerName: gateway.envoyproxy.io/gatewayclass-controller
provider:
  type: Kubernetes
logging:
  level:
    default: info
`))
	logs := &bytes.Buffer{}
	server := exec.Command("unshare", "--mount", "--", "sh", "-c",
		`mount --make-rprivate / && mount --bind "$1" /certs && exec "$2" server --config-path "$3"`, "sh", certs, bin, cfgPath)
	server.Env = env
	server.Stdout, server.Stderr = logs, logs
	server.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = server.Process.Kill()
		_ = server.Wait()
		if t.Failed() {
			t.Logf("envoy-gateway logs (tail):\n%s", tail(logs.String(), 6000))
		}
	})
	return s, cs, dyn, logs
}

func crdFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, sub := range []string{"gateway-api", "envoy-gateway"} {
		files, err := filepath.Glob(filepath.Join(dir, "crds", sub, "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no CRDs in %s/crds/%s (%v): run hack/envoy-gateway.sh again", dir, sub, err)
		}
		for _, f := range files {
			// Gateway API ships a ValidatingAdmissionPolicy beside its CRDs.
			if !strings.Contains(filepath.Base(f), "_vap_") {
				out = append(out, f)
			}
		}
	}
	return out
}

func mustWrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustCreate(t *testing.T, ctx context.Context, r dynamic.ResourceInterface, doc string) {
	t.Helper()
	u := decode(t, doc)[0].(*unstructured.Unstructured)
	if _, err := r.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// waitService waits for the Service Envoy Gateway generated for shop/web to satisfy ok.
func waitService(t *testing.T, ctx context.Context, cs kubernetes.Interface, logs *bytes.Buffer, ok func(*corev1.Service) bool) *corev1.Service {
	t.Helper()
	return waitServiceLabelled(t, ctx, cs, logs, "gateway.envoyproxy.io/owning-gateway-name=web,gateway.envoyproxy.io/owning-gateway-namespace=shop", ok)
}

// waitServiceLabelled waits for the one Service of Envoy Gateway's namespace that the label
// selector sel picks to satisfy ok.
func waitServiceLabelled(t *testing.T, ctx context.Context, cs kubernetes.Interface, logs *bytes.Buffer, sel string, ok func(*corev1.Service) bool) *corev1.Service {
	t.Helper()
	var found *corev1.Service
	if !waitFor(ctx, 2*time.Minute, func() bool {
		list, err := cs.CoreV1().Services(egNamespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil || len(list.Items) != 1 {
			return false
		}
		found = &list.Items[0]
		return ok(found)
	}) {
		t.Fatalf("Envoy Gateway's Service %s never got there (last seen: %v)\nlogs:\n%s", sel, describe(found), tail(logs.String(), 6000))
	}
	return found
}

func waitFor(ctx context.Context, limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func describe(s *corev1.Service) string {
	if s == nil {
		return "none"
	}
	return fmt.Sprintf("%s/%s annotations %v", s.Namespace, s.Name, s.Annotations)
}

// managerOf names the field manager that owns metadata.annotations[key] or
// spec.infrastructure.annotations[key].
func managerOf(mf []metav1.ManagedFieldsEntry, key string) string {
	for _, m := range mf {
		if m.FieldsV1 != nil && strings.Contains(string(m.FieldsV1.Raw), `"f:`+key+`"`) {
			return m.Manager
		}
	}
	return ""
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// policyConditions are the conditions Envoy Gateway's controller wrote on a ClientTrafficPolicy's
// status.ancestors, by type: "status/reason: message".
func policyConditions(ctx context.Context, t *testing.T, dyn dynamic.Interface, ns, name string) map[string]string {
	t.Helper()
	u, err := dyn.Resource(gvrCTP).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	ancestors, _, _ := unstructured.NestedSlice(u.Object, "status", "ancestors")
	for _, a := range ancestors {
		conds, _, _ := unstructured.NestedSlice(a.(map[string]any), "conditions")
		for _, c := range conds {
			m := c.(map[string]any)
			out[fmt.Sprint(m["type"])] = fmt.Sprintf("%v/%v: %v", m["status"], m["reason"], m["message"])
		}
	}
	return out
}

// gvrCTP is Envoy Gateway's ClientTrafficPolicy resource.
var gvrCTP = schema.GroupVersionResource{Group: "gateway.envoyproxy.io", Version: "v1alpha1", Resource: "clienttrafficpolicies"}

// gatherGateway reads the cluster as scan does (gateway.Resources, kube.Gather) and returns the
// Gateway called name, the Cluster built from what was read, and what was read.
func gatherGateway(ctx context.Context, t *testing.T, cfg *rest.Config, profile core.ClusterProfile, name string) (runtime.Object, *core.Cluster, []runtime.Object) {
	t.Helper()
	nsd, cl := gateway.Resources()
	objs, err := kube.Gather(ctx, cfg, &kube.GatherOptions{Custom: nsd, ClusterCustom: cl})
	if err != nil {
		t.Fatal(err)
	}
	c, err := core.NewCluster(profile, objs...)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok && gateway.IsGateway(o) && u.GetName() == name {
			return o, c, objs
		}
	}
	t.Fatalf("no Gateway %s gathered", name)
	return nil, nil, nil
}
