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
