package main

import (
	"os"
	"strings"
	"testing"
)

// TestGatewayExample: examples/gateway is judged per Gateway (row "Gateway ns/name" with its
// listeners), the Service Envoy Gateway generated is not reported apart, and plan writes the
// remedy on the Gateway's spec.infrastructure.annotations, never on that Service. Its README
// shows these outputs.
func TestGatewayExample(t *testing.T) {
	t.Chdir(repoRoot)
	out, errOut, code := runCLI(t, "", "assess", "-f", "examples/gateway")
	if code != 0 {
		t.Fatalf("assess exit %d: %s", code, errOut)
	}
	golden(t, "gateway-example.table", out)
	for _, want := range []string{"Gateway shop/web", "Gateway shop/api", "Listeners: http 80/HTTP, https 443/HTTPS shop.example.com."} {
		if !strings.Contains(out, want) {
			t.Errorf("assess lacks %q", want)
		}
	}
	out, errOut, code = runCLI(t, "", "plan", "-f", "examples/gateway")
	if code != 0 {
		t.Fatalf("plan exit %d: %s", code, errOut)
	}
	golden(t, "plan-gateway-example.table", out)
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "change: cluster: Service") {
			t.Errorf("plan writes a Service a Gateway's implementation owns: %s", l)
		}
	}
	if !strings.Contains(out, `change: cluster: Gateway shop/web: spec.infrastructure.annotations["service.cloud.tencent.com/prevent-loopback"]: (unset) → true (server-side apply)`) {
		t.Errorf("plan does not write the remedy on the Gateway:\n%s", out)
	}
	// The example's README shows lines of both outputs.
	assessOut, _, _ := runCLI(t, "", "assess", "-f", "examples/gateway")
	readme, err := os.ReadFile("examples/gateway/README.md")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(readme), "```")
	for i := 1; i < len(parts); i += 2 { // the fenced blocks
		if block := parts[i]; strings.HasPrefix(block, "\n") {
			for _, l := range strings.Split(strings.Trim(block, "\n"), "\n") {
				if !strings.Contains(assessOut, l) && !strings.Contains(out, l) {
					t.Errorf("examples/gateway/README.md shows a line neither assess nor plan prints:\n%s", l)
				}
			}
		}
	}
}

// TestGatewayImplementations: Gateways of Contour's provisioner, kgateway and Traefik
// (providers/gateway/testdata/implementations) are each judged as a Gateway through the Service
// that implementation makes or publishes, with what it makes its proxy expect, and plan writes
// each fix where that implementation takes it from: Contour's ContourDeployment
// serviceAnnotations (copied after the Gateway's), kgateway's Gateway spec.infrastructure (which
// wins over GatewayParameters), Traefik's own Service (it reads no spec.infrastructure).
func TestGatewayImplementations(t *testing.T) {
	t.Chdir(repoRoot)
	const dir = "providers/gateway/testdata/implementations"
	out, errOut, code := runCLI(t, "", "assess", "-f", dir)
	if code != 0 {
		t.Fatalf("assess exit %d: %s", code, errOut)
	}
	golden(t, "gateway-implementations.table", out)
	for _, want := range []string{
		"Gateway edge/web ",         // Contour
		"Gateway edge/shop ",        // kgateway
		"Gateway edge/traefik-web ", // Traefik
		"Service edge/envoy-web: generated for Gateway edge/web (label projectcontour.io/owning-gateway-name)",
		"Service edge/shop: generated for Gateway edge/shop (ownerReference Gateway shop)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("assess lacks %q:\n%s", want, out)
		}
	}
	rows := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 1 && (f[0] == "Gateway" || f[0] == "Service") {
			rows[f[0]+" "+f[1]] = l
		}
	}
	for obj, want := range map[string][]string{
		"Gateway edge/api":         {"lb-snat", "gateway-proxy-protocol-not-sent"}, // Contour useProxyProtocol
		"Gateway edge/pay":         {"lb-snat", "gateway-proxy-protocol-not-sent"}, // kgateway ListenerPolicy
		"Gateway edge/traefik-web": {"intercept-vip", "gateway-proxy-protocol-optional"},
		"Gateway edge/web":         {"intercept-vip"},
		"Gateway edge/shop":        {"intercept-vip"},
	} {
		for _, w := range want {
			if !strings.Contains(rows[obj], w) {
				t.Errorf("row %s lacks %q: %q", obj, w, rows[obj])
			}
		}
	}
	out, errOut, code = runCLI(t, "", "plan", "-f", dir)
	if code != 0 {
		t.Fatalf("plan exit %d: %s", code, errOut)
	}
	golden(t, "plan-gateway-implementations.table", out)
	for _, want := range []string{
		`change: cluster: ContourDeployment projectcontour/contour-params: spec.envoy.networkPublishing.serviceAnnotations["service.cloud.tencent.com/prevent-loopback"]: false → true (server-side apply)`,
		`change: cluster: Gateway edge/shop: spec.infrastructure.annotations["service.cloud.tencent.com/prevent-loopback"]: false → true (server-side apply)`,
		`change: cluster: Gateway edge/api: spec.infrastructure.annotations["service.cloud.tencent.com/tke-service-config"]: (unset) → envoy-api-loopguard (server-side apply)`,
		`change: cluster: Service traefik/traefik: metadata.annotations["service.cloud.tencent.com/prevent-loopback"]: (unset) → true (server-side apply)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	for _, svc := range []string{"Service edge/envoy-web", "Service edge/shop", "Service edge/envoy-api", "Service edge/pay"} {
		if strings.Contains(out, "change: cluster: "+svc+":") {
			t.Errorf("plan writes %s, which its Gateway's implementation owns", svc)
		}
	}
}
