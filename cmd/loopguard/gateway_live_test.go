package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/internal/apiserver"
)

// TestScanAndApplyGatewayOnARealAPIServer: scan reads Gateways, GatewayClasses and the Service
// an implementation generated (NGINX Gateway Fabric's marks: the Gateway's namespace, the
// gateway-name label) from a real kube-apiserver and reports the Gateway, not the Service;
// apply --object Gateway/... writes the remedy on the Gateway and nothing on the Service.
func TestScanAndApplyGatewayOnARealAPIServer(t *testing.T) {
	lc := startGatewayCluster(t, []string{"shop"}, mustAbs("../../providers/tencent/crds"))
	ctx, cs, dyn, create, node := lc.ctx, lc.cs, lc.dyn, lc.create, lc.node
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
	kubeconfig := writeKubeconfig(t, lc.srv.Config())
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
	lc := startGatewayCluster(t, []string{"shop", "envoy-gateway-system"})
	ctx, cs, create, node := lc.ctx, lc.cs, lc.create, lc.node
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
	t.Chdir(repoRoot)
	rep := lc.scan("-n", "shop")
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

// gatewayCluster is a real API server with Gateway API's standard CRDs, for the scan tests.
type gatewayCluster struct {
	t   *testing.T
	ctx context.Context
	srv *apiserver.Server
	cs  kubernetes.Interface
	dyn dynamic.Interface
	// node is the first of the three Nodes.
	node string
}

// startGatewayCluster starts a real API server with Gateway API's standard CRDs and crds
// (absolute paths), and creates the namespaces and three Nodes.
func startGatewayCluster(t *testing.T, namespaces []string, crds ...string) *gatewayCluster {
	t.Helper()
	srv := apiserver.Start(t, apiserver.WithCRDPaths(append(apiserver.GatewayAPICRDs(t), crds...)...))
	lc := &gatewayCluster{t: t, ctx: context.Background(), srv: srv, cs: srv.Client(), node: "10.0.1.11"}
	var err error
	if lc.dyn, err = dynamic.NewForConfig(srv.Config()); err != nil {
		t.Fatal(err)
	}
	for _, ns := range namespaces {
		if _, err := lc.cs.CoreV1().Namespaces().Create(lc.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{lc.node, "10.0.1.12", "10.0.1.13"} {
		if _, err := lc.cs.CoreV1().Nodes().Create(lc.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return lc
}

// create makes a Gateway API object (resource gateways, gatewayclasses) from YAML.
func (lc *gatewayCluster) create(resource, ns, doc string) {
	lc.t.Helper()
	lc.createAs(schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: resource}, ns, doc)
}

// createAs makes an object of any resource from YAML.
func (lc *gatewayCluster) createAs(gvr schema.GroupVersionResource, ns, doc string) {
	lc.t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		lc.t.Fatal(err)
	}
	if _, err := lc.dyn.Resource(gvr).Namespace(ns).Create(lc.ctx, u, metav1.CreateOptions{}); err != nil {
		lc.t.Fatal(err)
	}
}

// scan runs scan -o json against the cluster with the CLI's example profile.
func (lc *gatewayCluster) scan(args ...string) Report {
	lc.t.Helper()
	kubeconfig := writeKubeconfig(lc.t, lc.srv.Config())
	stdout, stderr, code := runCLI(lc.t, "", append([]string{"scan", "-o", "json", "--kubeconfig", kubeconfig, "--profile", "examples/manifests/profile.yaml"}, args...)...)
	if code != exitOK {
		lc.t.Fatalf("scan exit %d: %s", code, stderr)
	}
	var rep Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		lc.t.Fatal(err)
	}
	return rep
}

// TestScanReadsIstioAndCiliumParameters: scan -n shop reads the ConfigMap an Istio Gateway's
// spec.infrastructure.parametersRef names, Istio's class defaults in istio-system (another
// namespace) and the CiliumGatewayClassConfig a Cilium GatewayClass names (in kube-system),
// and their service settings change the verdicts: an overlay that sets prevent-loopback makes
// the Istio Gateways safe, and a class config that makes the Service a NodePort takes the
// Cilium Gateway out of the load-balancer exposures. (A cluster that does not serve
// CiliumGatewayClassConfigs is scanned without them: the other tests here install no Cilium
// CRD.)
func TestScanReadsIstioAndCiliumParameters(t *testing.T) {
	lc := startGatewayCluster(t, []string{"shop", "istio-system"}, mustAbs("../../providers/gateway/testdata/crds"))
	const subnet = "service.kubernetes.io/qcloud-loadbalancer-internal-subnetid"
	lc.create("gatewayclasses", "", `{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: istio},
  spec: {controllerName: istio.io/gateway-controller}}`)
	lc.create("gatewayclasses", "", `{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: cilium},
  spec: {controllerName: io.cilium/gateway-controller, parametersRef: {group: cilium.io, kind: CiliumGatewayClassConfig, name: lb, namespace: kube-system}}}`)
	for _, g := range []struct{ name, class, ref string }{
		{"mesh", "istio", `, parametersRef: {group: "", kind: ConfigMap, name: mesh-options}`},
		{"edge", "istio", ""},
		{"cil", "cilium", ""},
	} {
		lc.create("gateways", "shop", `{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: `+g.name+`, namespace: shop},
  spec: {gatewayClassName: `+g.class+`, infrastructure: {annotations: {`+subnet+`: subnet-1}`+g.ref+`}, listeners: [{name: http, port: 80, protocol: HTTP}]}}`)
	}
	t.Chdir(repoRoot)
	risks := func(rep Report) map[string]string {
		out := map[string]string{}
		for _, r := range rep.Results {
			out[r.Object.Kind+" "+r.Object.Namespace+"/"+r.Object.Name] = r.Risk
		}
		for _, s := range rep.Skipped {
			out[s.Object.Kind+" "+s.Object.Namespace+"/"+s.Object.Name] = "skipped"
		}
		return out
	}
	before := risks(lc.scan("-n", "shop"))
	if want := map[string]string{"Gateway shop/mesh": "at-risk", "Gateway shop/edge": "at-risk", "Gateway shop/cil": "at-risk"}; !cmp.Equal(before, want) {
		t.Fatalf("before the parameters exist: %v, want %v", before, want)
	}

	overlay := func(ns, name, labels string) string {
		return `{apiVersion: v1, kind: ConfigMap, metadata: {name: ` + name + `, namespace: ` + ns + labels + `},
  data: {service: "metadata: {annotations: {service.cloud.tencent.com/prevent-loopback: \"true\"}}"}}`
	}
	cm := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	lc.createAs(cm, "shop", overlay("shop", "mesh-options", ""))
	lc.createAs(cm, "istio-system", overlay("istio-system", "istio-default-gatewayclass-istio", ", labels: {gateway.istio.io/defaults-for-class: istio}"))
	lc.createAs(schema.GroupVersionResource{Group: "cilium.io", Version: "v2alpha1", Resource: "ciliumgatewayclassconfigs"}, "kube-system",
		`{apiVersion: cilium.io/v2alpha1, kind: CiliumGatewayClassConfig, metadata: {name: lb, namespace: kube-system}, spec: {service: {type: NodePort}}}`)
	after := risks(lc.scan("-n", "shop"))
	if want := map[string]string{"Gateway shop/mesh": "none", "Gateway shop/edge": "none", "Gateway shop/cil": "skipped"}; !cmp.Equal(after, want) {
		t.Errorf("with Istio's ConfigMaps and Cilium's class config: %v, want %v", after, want)
	}
}

// TestScanReadsListenerSetsAndContourConfigurations: scan reads, from a real kube-apiserver, the
// ListenerSets attached to a Gateway (another namespace's, admitted by allowedListeners from:
// All) with the ClientTrafficPolicy that targets one, and the ContourConfiguration Contour's
// provisioner made for a Contour Gateway; the verdicts change once those objects exist: the
// ListenerSet's listener joins the Gateway's, the policy's X-Forwarded-For trust and the
// ContourConfiguration's numTrustedHops make the backends need the client address. (Before
// gateway.Resources listed listenersets and contourconfigurations, scan read neither.)
func TestScanReadsListenerSetsAndContourConfigurations(t *testing.T) {
	lc := startGatewayCluster(t, []string{"shop", "team"}, mustAbs("../../providers/gateway/testdata/policy-crds"))
	const subnet = "service.kubernetes.io/qcloud-loadbalancer-internal-subnetid"
	lc.create("gatewayclasses", "", `{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: eg},
  spec: {controllerName: gateway.envoyproxy.io/gatewayclass-controller}}`)
	lc.create("gatewayclasses", "", `{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: contour},
  spec: {controllerName: projectcontour.io/gateway-controller}}`)
	lc.create("gateways", "shop", `{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: web, namespace: shop},
  spec: {gatewayClassName: eg, allowedListeners: {namespaces: {from: All}}, infrastructure: {annotations: {`+subnet+`: subnet-1}},
    listeners: [{name: http, port: 80, protocol: HTTP}]}}`)
	lc.create("gateways", "shop", `{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: cweb, namespace: shop},
  spec: {gatewayClassName: contour, infrastructure: {annotations: {`+subnet+`: subnet-1}}, listeners: [{name: http, port: 80, protocol: HTTP}]}}`)
	t.Chdir(repoRoot)
	results := func() map[string]string {
		out := map[string]string{}
		for _, r := range lc.scan().Results {
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			out[r.Object.Kind+" "+r.Object.Namespace+"/"+r.Object.Name] = string(b)
		}
		return out
	}
	before := results()
	for _, gw := range []string{"Gateway shop/web", "Gateway shop/cweb"} {
		if r, ok := before[gw]; !ok || strings.Contains(r, "gateway-client-address") || strings.Contains(r, "8443") {
			t.Fatalf("before the objects exist, %s: %s", gw, r)
		}
	}

	// ListenerSets are gateway.networking.k8s.io/v1 from Gateway API v1.5 on; the Gateway API
	// CRDs of go.mod's floor (v1.3.0, what a plain go test ./... builds) have none. The
	// ContourConfiguration half runs on every release.
	listenerSets := lc.served(schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "listenersets"})
	if listenerSets {
		lc.create("listenersets", "team", `{apiVersion: gateway.networking.k8s.io/v1, kind: ListenerSet, metadata: {name: extra, namespace: team},
  spec: {parentRef: {name: web, namespace: shop}, listeners: [{name: api, port: 8443, protocol: HTTP}]}}`)
		lc.createAs(schema.GroupVersionResource{Group: "gateway.envoyproxy.io", Version: "v1alpha1", Resource: "clienttrafficpolicies"}, "team",
			`{apiVersion: gateway.envoyproxy.io/v1alpha1, kind: ClientTrafficPolicy, metadata: {name: xff, namespace: team},
  spec: {targetRefs: [{group: gateway.networking.k8s.io, kind: ListenerSet, name: extra}], clientIPDetection: {xForwardedFor: {numTrustedHops: 1}}}}`)
	}
	lc.createAs(schema.GroupVersionResource{Group: "projectcontour.io", Version: "v1alpha1", Resource: "contourconfigurations"}, "shop",
		`{apiVersion: projectcontour.io/v1alpha1, kind: ContourConfiguration, metadata: {name: contourconfig-cweb, namespace: shop},
  spec: {envoy: {network: {numTrustedHops: 2}}}}`)
	after := results()
	wants := map[string][]string{
		"Gateway shop/cweb": {"ContourConfiguration shop/contourconfig-cweb sets spec.envoy.network.numTrustedHops: 2"},
	}
	if listenerSets {
		wants["Gateway shop/web"] = []string{"from ListenerSet team/extra: api 8443/HTTP",
			"ClientTrafficPolicy team/xff sets spec.clientIPDetection for listener api (port 8443, ListenerSet team/extra)"}
	}
	for gw, want := range wants {
		for _, s := range want {
			if !strings.Contains(after[gw], s) {
				t.Errorf("%s does not say %q:\n%s", gw, s, after[gw])
			}
		}
		if !strings.Contains(after[gw], `"gateway-client-address"`) {
			t.Errorf("%s has no reason gateway-client-address:\n%s", gw, after[gw])
		}
	}
	if !listenerSets {
		t.Skip("ContourConfigurations checked; the Gateway API CRDs of this build list have no ListenerSet (gateway.networking.k8s.io/v1 since Gateway API v1.5)")
	}
}

// served says whether the API server serves a resource (a CRD some Gateway API releases lack).
func (lc *gatewayCluster) served(gvr schema.GroupVersionResource) bool {
	lc.t.Helper()
	list, err := lc.cs.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true
		}
	}
	return false
}

// TestScanIstioNamespace: scan --istio-namespace reads Istio's class defaults in istiod's
// namespace and not in istio-system: without the flag an Istio Gateway whose class defaults
// (in istio-gw) set the remedy is at risk, with it the Gateway is judged safe; the istio-system
// defaults, which would take the remedy back out, count only without the flag.
func TestScanIstioNamespace(t *testing.T) {
	lc := startGatewayCluster(t, []string{"shop", "istio-system", "istio-gw"})
	const subnet = "service.kubernetes.io/qcloud-loadbalancer-internal-subnetid"
	lc.create("gatewayclasses", "", `{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: istio},
  spec: {controllerName: istio.io/gateway-controller}}`)
	lc.create("gateways", "shop", `{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: edge, namespace: shop},
  spec: {gatewayClassName: istio, infrastructure: {annotations: {`+subnet+`: subnet-1}}, listeners: [{name: http, port: 80, protocol: HTTP}]}}`)
	defaults := func(ns, prevent string) string {
		return `{apiVersion: v1, kind: ConfigMap, metadata: {name: istio-default-gatewayclass-istio, namespace: ` + ns + `,
  labels: {gateway.istio.io/defaults-for-class: istio}},
  data: {service: "metadata: {annotations: {service.cloud.tencent.com/prevent-loopback: \"` + prevent + `\"}}"}}`
	}
	cm := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	lc.createAs(cm, "istio-gw", defaults("istio-gw", "true"))
	lc.createAs(cm, "istio-system", defaults("istio-system", "false"))
	t.Chdir(repoRoot)
	risk := func(rep Report) string {
		for _, r := range rep.Results {
			if r.Object.Kind == "Gateway" && r.Object.Namespace == "shop" && r.Object.Name == "edge" {
				return r.Risk
			}
		}
		return "not judged"
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "at-risk"},
		{[]string{"--istio-namespace", "istio-gw"}, "none"},
		{[]string{"-n", "shop", "--istio-namespace", "istio-gw"}, "none"},
	} {
		if got := risk(lc.scan(c.args...)); got != c.want {
			t.Errorf("scan %v: Gateway shop/edge %s, want %s", c.args, got, c.want)
		}
	}
	// apply plans with the same reading: nothing to do with the flag.
	kubeconfig := writeKubeconfig(t, lc.srv.Config())
	for _, c := range []struct {
		args             []string
		risk, wantStatus string
	}{
		{nil, "at-risk", "user-action"}, // the change is on istio-system's ConfigMap, which sets the key
		{[]string{"--istio-namespace", "istio-gw"}, "none", "up-to-date"},
	} {
		stdout, stderr, code := runCLI(t, "", append([]string{"apply", "--dry-run", "-o", "json", "--kubeconfig", kubeconfig, "--profile", "examples/manifests/profile.yaml",
			"--object", "Gateway/shop/edge"}, c.args...)...)
		var rep PlanReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil || len(rep.Plans) != 1 {
			t.Fatalf("apply --dry-run %v: exit %d, %v, %s", c.args, code, err, stderr)
		}
		if p := rep.Plans[0]; p.Risk != c.risk || p.Status != c.wantStatus {
			t.Errorf("apply --dry-run %v: Gateway shop/edge %s, %s; want %s, %s", c.args, p.Risk, p.Status, c.risk, c.wantStatus)
		}
	}
	// A name that is not a namespace's is refused before anything is read.
	if _, stderr, code := runCLI(t, "", "scan", "--kubeconfig", kubeconfig, "--istio-namespace", "Istio_GW"); code != exitInput || !strings.Contains(stderr, "--istio-namespace") {
		t.Errorf("scan --istio-namespace Istio_GW: exit %d, %s; want %d naming the flag", code, stderr, exitInput)
	}
}
