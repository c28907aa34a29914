package gateway_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/gateway"
	"github.com/loopguard/loopguard/providers/tencent"
)

// readImplementations reads testdata/implementations: Gateways of Contour's provisioner,
// kgateway and Traefik on the TKE cluster of examples/gateway. The CLI test assesses the same
// folder (cmd/loopguard TestGatewayImplementations).
func readImplementations(t *testing.T) (core.ClusterProfile, []runtime.Object) {
	t.Helper()
	dir := filepath.Join("testdata", "implementations")
	var objs []runtime.Object
	for _, f := range []string{"nodes.yaml", "contour.yaml", "kgateway.yaml", "traefik.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, decode(t, string(b))...)
	}
	b, err := os.ReadFile(filepath.Join(dir, "profile.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := core.ParseProfile("profile.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	return *p, objs
}

// TestImplementationsJudgedAndFixed: each implementation's Gateway is judged through the
// Service that implementation makes or publishes, with what the implementation makes its proxy
// expect, and its fix is planned where that implementation takes it from.
func TestImplementationsJudgedAndFixed(t *testing.T) {
	const key = "service.cloud.tencent.com/prevent-loopback"
	cases := map[string]struct {
		reason      string
		gateway     string
		lead        core.Code
		leadHas     string
		needs       core.Fact
		notes       []core.Code
		noteHas     string
		intercept   bool
		changeOn    core.ObjectKey
		changePath  string
		checkOnSvc  string
		otherChange bool // a TkeServiceConfig beside the Service
	}{
		"ContourDeploymentAnnotationWins": {reason: "the class's ContourDeployment sets the key in serviceAnnotations, which Contour copies after the Gateway's: the fix goes there",
			gateway: "web", lead: gateway.CodeGeneratedService, leadHas: "Contour generated Service edge/envoy-web", intercept: true,
			changeOn:   core.ObjectKey{APIVersion: "projectcontour.io/v1alpha1", Kind: "ContourDeployment", Namespace: "projectcontour", Name: "contour-params"},
			changePath: "spec.envoy.networkPublishing.serviceAnnotations." + key, checkOnSvc: "envoy-web"},
		"ContourUseProxyProtocol": {reason: "ContourDeployment runtimeSettings.envoy.listener.useProxyProtocol makes Envoy require the header: no interception; the LB is not known to send it",
			gateway: "api", lead: gateway.CodeAssumedService, needs: core.Yes, notes: []core.Code{gateway.CodeProxyNotSent}, noteHas: "",
			changeOn:   core.ObjectKey{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", Namespace: "edge", Name: "api"},
			changePath: "spec.infrastructure.annotations.service.cloud.tencent.com/tke-service-config", otherChange: true},
		"KGatewayInfrastructureWins": {reason: "kgateway's chart merges the Gateway's annotations over GatewayParameters' extraAnnotations: the fix goes on the Gateway though the GatewayParameters sets the key",
			gateway: "shop", lead: gateway.CodeGeneratedService, leadHas: "kgateway generated Service edge/shop", intercept: true,
			changeOn:   core.ObjectKey{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", Namespace: "edge", Name: "shop"},
			changePath: "spec.infrastructure.annotations." + key, checkOnSvc: "shop"},
		"KGatewayListenerPolicyPerPort": {reason: "a ListenerPolicy picked by targetSelectors requires the header by default; port 80's own configuration replaces the default",
			gateway: "pay", lead: gateway.CodeAssumedService, needs: core.Yes, notes: []core.Code{gateway.CodeProxyNotSent},
			changeOn:   core.ObjectKey{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", Namespace: "edge", Name: "pay"},
			changePath: "spec.infrastructure.annotations.service.cloud.tencent.com/tke-service-config", otherChange: true},
		"TraefikPublishedService": {reason: "Traefik serves the Gateway from the Service its arguments name; nothing rewrites that Service from the Gateway, so the fix stays on it; its entry point reads a PROXY header without requiring one",
			gateway: "traefik-web", lead: gateway.CodePublishedService, leadHas: "Service traefik/traefik", intercept: true,
			notes: []core.Code{gateway.CodeProxyOptional}, noteHas: "websecure (:8443, listener websecure, proxyProtocol trustedIPs 10.0.0.0/8)",
			changeOn:   core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "traefik", Name: "traefik"},
			changePath: "metadata.annotations." + key},
	}
	profile, objs := readImplementations(t)
	c, err := core.NewCluster(profile, objs...)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := tencent.NewProvider(nil)
	if err != nil {
		t.Fatal(err)
	}
	d := gateway.NewDialect(tencent.NewDialect(nil), nil)
	rec := core.NewReconciler(gateway.Wrap(tp, nil), &core.ReconcilerOptions{Policy: profile.Policy})
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gw := find(t, objs, "Gateway", "edge", tc.gateway)
			res := evaluate(t, d, gw, c, profile.Policy)
			if r := res.Exposure.Reasons[0]; r.Code != tc.lead || !strings.Contains(r.Message, tc.leadHas) {
				t.Errorf("%s: first reason %s %q, want %s containing %q", tc.reason, r.Code, r.Message, tc.lead, tc.leadHas)
			}
			if got := res.Exposure.Needs.ProxyHeader; got != tc.needs {
				t.Errorf("%s: Needs.ProxyHeader = %v, want %v", tc.reason, got, tc.needs)
			}
			if tc.needs == core.Yes && !hasCode(res.Exposure.Reasons, gateway.CodeProxyProtocol) {
				t.Errorf("%s: reasons %v lack %s", tc.reason, codes(res.Exposure.Reasons), gateway.CodeProxyProtocol)
			}
			for _, n := range tc.notes {
				if !hasCode(res.Exposure.Notes, n) {
					t.Errorf("%s: notes %v lack %s", tc.reason, codes(res.Exposure.Notes), n)
				}
			}
			if tc.noteHas != "" && !strings.Contains(reasonText(res.Exposure.Notes), tc.noteHas) {
				t.Errorf("%s: notes do not say %q:\n%s", tc.reason, tc.noteHas, reasonText(res.Exposure.Notes))
			}
			if got := res.Decision.Remedy == core.InterceptVIP; got != tc.intercept {
				t.Errorf("%s: decision %s, intercept-vip wanted = %v", tc.reason, res.Decision.Remedy, tc.intercept)
			}
			p, err := rec.Plan(context.Background(), gw, c)
			if err != nil {
				t.Fatal(err)
			}
			if p.Object != (core.ObjectRef{Kind: "Gateway", Namespace: "edge", Name: tc.gateway}) {
				t.Errorf("plan object %v, want the Gateway", p.Object)
			}
			var found bool
			for _, ch := range p.Changes {
				if ch.Object == nil {
					continue
				}
				if *ch.Object == tc.changeOn {
					found = true
					if len(ch.Edits) != 1 || ch.Edits[0].String() != tc.changePath {
						t.Errorf("%s: edits %v, want %s", tc.reason, ch.Edits, tc.changePath)
					}
					continue
				}
				if ch.Object.Kind == "Service" || !tc.otherChange {
					t.Errorf("%s: unexpected change %s", tc.reason, ch.String())
				}
			}
			if !found {
				t.Errorf("%s: no change on %v in %v", tc.reason, tc.changeOn, p.Changes)
			}
			if tc.checkOnSvc != "" {
				ok := false
				for _, chk := range p.Checks {
					ok = ok || (chk.Object.Kind == "Service" && chk.Object.Name == tc.checkOnSvc && chk.Edit.Value == "true")
				}
				if !ok {
					t.Errorf("%s: no check that the implementation carried the value to Service %s: %v", tc.reason, tc.checkOnSvc, p.Checks)
				}
			}
		})
	}
}

func reasonText(rs []core.Reason) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString(string(r.Code) + ": " + r.Message + "\n")
	}
	return b.String()
}

// TestImplementationsWithoutTheirObjects: without the implementation's own resources the
// defaults hold, and Traefik's Gateway without Traefik's Service is not judged from the
// Gateway (Traefik reads no spec.infrastructure).
func TestImplementationsWithoutTheirObjects(t *testing.T) {
	profile, objs := readImplementations(t)
	var kept []runtime.Object
	for _, o := range objs {
		kind := o.GetObjectKind().GroupVersionKind().Kind
		switch kind {
		case "ContourDeployment", "ListenerPolicy", "Pod", "Service", "EndpointSlice":
			continue
		}
		kept = append(kept, o)
	}
	c, err := core.NewCluster(profile, kept...)
	if err != nil {
		t.Fatal(err)
	}
	d := gateway.NewDialect(tencent.NewDialect(nil), nil)
	for _, name := range []string{"api", "pay"} {
		res := evaluate(t, d, find(t, kept, "Gateway", "edge", name), c, profile.Policy)
		if res.Exposure.Needs.ProxyHeader == core.Yes {
			t.Errorf("Gateway edge/%s: Needs.ProxyHeader Yes without the object that says so", name)
		}
	}
	_, err = d.Translate(find(t, kept, "Gateway", "edge", "traefik-web"), c)
	if !errors.Is(err, core.ErrNotExposed) || !strings.Contains(err.Error(), "Traefik serves its Gateways from its own Service") {
		t.Errorf("Traefik Gateway without its Service: err = %v, want not exposed, saying why", err)
	}
	// Contour's class without a ContourDeployment: the provisioner's default Service.
	res := evaluate(t, d, find(t, kept, "Gateway", "edge", "web"), c, profile.Policy)
	if r := res.Exposure.Reasons[0]; r.Code != gateway.CodeAssumedService || !strings.Contains(r.Message, "externalTrafficPolicy Local") {
		t.Errorf("Contour default: first reason %s %q", r.Code, r.Message)
	}
}

// TestTraefikServiceByStatusAddress: without Traefik's Pods, the Gateway's status.addresses
// (which Traefik copies from the Service it publishes) find the Service.
func TestTraefikServiceByStatusAddress(t *testing.T) {
	profile, objs := readImplementations(t)
	var kept []runtime.Object
	for _, o := range objs {
		if o.GetObjectKind().GroupVersionKind().Kind == "Pod" && strings.HasPrefix(nameOf(t, o), "traefik") {
			continue
		}
		kept = append(kept, o)
	}
	svc := find(t, kept, "Service", "traefik", "traefik")
	m, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(svc)
	m["status"] = map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "10.0.3.7"}}}}
	gw := find(t, kept, "Gateway", "edge", "traefik-web")
	g, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(gw)
	g["status"] = map[string]any{"addresses": []any{map[string]any{"type": "IPAddress", "value": "10.0.3.7"}}}
	for i, o := range kept {
		switch o {
		case svc:
			kept[i] = decode(t, toYAML(t, m))[0]
		case gw:
			kept[i] = decode(t, toYAML(t, g))[0]
		}
	}
	c, err := core.NewCluster(profile, kept...)
	if err != nil {
		t.Fatal(err)
	}
	d := gateway.NewDialect(tencent.NewDialect(nil), nil)
	res := evaluate(t, d, find(t, kept, "Gateway", "edge", "traefik-web"), c, profile.Policy)
	want := core.ObjectRef{Kind: "Gateway", Namespace: "edge", Name: "traefik-web"}
	if diff := cmp.Diff(want, res.Exposure.Object); diff != "" {
		t.Error(diff)
	}
	if r := res.Exposure.Reasons[0]; r.Code != gateway.CodePublishedService || !strings.Contains(r.Message, "10.0.3.7") {
		t.Errorf("first reason %s %q, want %s through the status address", r.Code, r.Message, gateway.CodePublishedService)
	}
	if hasCode(res.Exposure.Notes, gateway.CodeProxyOptional) {
		t.Errorf("a PROXY protocol note without Traefik's arguments: %v", codes(res.Exposure.Notes))
	}
}

func nameOf(t *testing.T, o runtime.Object) string {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := m["metadata"].(map[string]any)
	n, _ := md["name"].(string)
	return n
}

// TestNamespaces: a host that reads one namespace also reads Envoy Gateway's and those the
// GatewayClasses' parametersRef name, but not the Gateways' own.
func TestNamespaces(t *testing.T) {
	_, objs := readImplementations(t)
	_, exObjs := readExample(t)
	got := gateway.Namespaces(append(objs, exObjs...), &gateway.Options{EnvoyGatewayNamespace: "eg-system"})
	want := []string{"eg-system", "projectcontour"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
	if got := gateway.Namespaces(objs, nil); !cmp.Equal(got, []string{"projectcontour"}) {
		t.Errorf("without an Envoy Gateway class: %v", got)
	}
}

// TestNGINXGatewayFabricPatches: NGINX Gateway Fabric applies its NginxProxy's service patches
// after the Gateway's annotations, so a key a patch sets is read from the patch (here, a
// private CLB through a JSON patch) and a fix of that key is a change for the user on the
// NginxProxy, not a Gateway write that would never win.
func TestNGINXGatewayFabricPatches(t *testing.T) {
	const key = "service.cloud.tencent.com/prevent-loopback"
	profile, nodes := readExample(t)
	var objs []runtime.Object
	for _, o := range nodes {
		if k := o.GetObjectKind().GroupVersionKind().Kind; k == "Node" || k == "Pod" {
			objs = append(objs, o)
		}
	}
	objs = append(objs, decode(t, `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: nginx}
spec:
  controllerName: gateway.nginx.org/nginx-gateway-controller
  parametersRef: {group: gateway.nginx.org, kind: NginxProxy, name: np, namespace: nginx-gateway}
---
apiVersion: gateway.nginx.org/v1alpha2
kind: NginxProxy
metadata: {name: np, namespace: nginx-gateway}
spec:
  kubernetes:
    service:
      externalTrafficPolicy: Cluster
      patches:
      - type: JSONPatch
        value:
        - {op: add, path: /metadata/annotations/service.kubernetes.io~1qcloud-loadbalancer-internal-subnetid, value: subnet-3f9a2c1d}
      - value: {metadata: {annotations: {service.cloud.tencent.com/prevent-loopback: "false"}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: shop}
spec:
  gatewayClassName: nginx
  listeners: [{name: http, port: 80, protocol: HTTP}]`)...)
	c, err := core.NewCluster(profile, objs...)
	if err != nil {
		t.Fatal(err)
	}
	gw := find(t, objs, "Gateway", "shop", "web")
	res := evaluate(t, gateway.NewDialect(tencent.NewDialect(nil), nil), gw, c, profile.Policy)
	if res.Exposure.Scope != core.Private {
		t.Errorf("LB scope %q: the JSON patch's internal-subnet annotation was not read", res.Exposure.Scope)
	}
	if !strings.Contains(res.Exposure.Reasons[0].Message, "externalTrafficPolicy Cluster") {
		t.Errorf("first reason %q: the NginxProxy's externalTrafficPolicy was not read", res.Exposure.Reasons[0].Message)
	}
	if res.Decision.Remedy != core.InterceptVIP {
		t.Fatalf("decision %s, want intercept-vip (the change to place)", res.Decision.Remedy)
	}
	tp, err := tencent.NewProvider(nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := core.NewReconciler(gateway.Wrap(tp, nil), &core.ReconcilerOptions{Policy: profile.Policy}).Plan(context.Background(), gw, c)
	if err != nil {
		t.Fatal(err)
	}
	var user bool
	for _, ch := range p.Changes {
		switch {
		case ch.By == core.WriterUser && len(ch.Edits) == 1 && ch.Edits[0].String() == "metadata.annotations."+key &&
			strings.Contains(ch.Reason.Message, "NginxProxy nginx-gateway/np's spec.kubernetes.service.patches"):
			user = true
		case ch.By == core.WriterCluster && ch.Object != nil:
			t.Errorf("a write loopguard cannot win: %s", ch.String())
		}
	}
	if !user {
		t.Errorf("no change for the user on the NginxProxy's patch: %v", p.Changes)
	}
}
