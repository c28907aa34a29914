package hostdeps

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/loopguard/loopguard"

// deps lists the packages the named packages of the root module compile with (go list -deps,
// no tests).
func deps(t *testing.T, pkgs ...string) []string { return depsIn(t, "", pkgs...) }

// cliDir is the CLI's module (cmd/loopguard/go.mod): go list runs there for its packages, so
// they resolve both in the workspace and with GOWORK=off, where the root module alone does not
// provide them.
const cliDir = "../../cmd/loopguard"

// depsIn is deps with go list run in dir ("": this package's folder, in the root module).
func depsIn(t *testing.T, dir string, pkgs ...string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the packages with")
	}
	args := append([]string{"list", "-deps"}, pkgs...)
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

// forbidden reports the packages of got that match a forbidden path or prefix.
func forbidden(got []string, rules map[string]string) []string {
	var out []string
	for _, p := range got {
		for prefix, why := range rules {
			if p == prefix || strings.HasPrefix(p, prefix+"/") {
				out = append(out, p+" ("+why+")")
			}
		}
	}
	return out
}

// TestSDKHostCompiles: a platform SDK that imports core, the three providers and adapters/kube
// compiles none of the host frameworks it does not use, none of the in-process cloud servers,
// and not the testing package.
func TestSDKHostCompiles(t *testing.T) {
	got := deps(t, module+"/core", module+"/providers/tencent", module+"/providers/volcengine",
		module+"/providers/kubernetes", module+"/adapters/kube")
	bad := forbidden(got, map[string]string{
		"sigs.k8s.io/controller-runtime":                  "the controller's framework",
		"k8s.io/cloud-provider":                           "the CCM decorator's framework",
		"github.com/hashicorp/terraform-plugin-go":        "Terraform's",
		"github.com/hashicorp/terraform-plugin-framework": "Terraform's",
		"sigs.k8s.io/gateway-api":                         "Gateway API's types, for providers/gateway only",
		module + "/providers/tencent/clbtest":             "an in-process test server",
		module + "/providers/volcengine/clbtest":          "an in-process test server",
		module + "/core/drivertest":                       "the conformance suite",
		"testing":                                         "the testing package",
	})
	if len(bad) > 0 {
		t.Errorf("an SDK host compiles:\n  %s", strings.Join(bad, "\n  "))
	}
}

// TestCLILinksNoTestCode: the CLI binary links no testing package and no conformance suite;
// the in-process servers its demo uses are ordinary packages.
func TestCLILinksNoTestCode(t *testing.T) {
	bad := forbidden(depsIn(t, cliDir, module+"/cmd/loopguard"), map[string]string{
		"testing":                   "the testing package",
		module + "/core/drivertest": "the conformance suite",
	})
	if len(bad) > 0 {
		t.Errorf("cmd/loopguard links:\n  %s", strings.Join(bad, "\n  "))
	}
}

// TestDemoCompilesOnlyWhatItRuns: the README's first command, go run ./cmd/loopguard/demo,
// compiles what the demo runs (core, the manifest reader, the TKE and VKE providers, their SDKs
// and in-process servers) and nothing the CLI adds for live clusters: no Kubernetes client, no
// Gateway API, no CLI framework. With them, a cold first run took about twice as long
// (docs/development.md).
func TestDemoCompilesOnlyWhatItRuns(t *testing.T) {
	bad := forbidden(depsIn(t, cliDir, module+"/cmd/loopguard/demo"), map[string]string{
		"k8s.io/client-go":                                "the Kubernetes client, for live clusters",
		"github.com/google/gnostic-models":                "OpenAPI, for client-go's discovery",
		"sigs.k8s.io/gateway-api":                         "Gateway API's types",
		"sigs.k8s.io/controller-runtime":                  "the controller's framework",
		"k8s.io/cloud-provider":                           "the CCM decorator's framework",
		"github.com/hashicorp/terraform-plugin-framework": "Terraform's",
		"github.com/prometheus/client_golang":             "the controller's metrics",
		"github.com/spf13/cobra":                          "the CLI's framework",
		module + "/adapters/kube":                         "live clusters",
		module + "/adapters/verify":                       "verify's probe Pods",
		module + "/providers/gateway":                     "Gateway API",
		"testing":                                         "the testing package",
	})
	if len(bad) > 0 {
		t.Errorf("the demo compiles:\n  %s", strings.Join(bad, "\n  "))
	}
}

// TestCCMHostCompiles: a CCM fork's decorator compiles no controller-runtime, Terraform or
// test code.
func TestCCMHostCompiles(t *testing.T) {
	bad := forbidden(deps(t, module+"/adapters/cloudprovider", module+"/providers/kubernetes", module+"/providers/tencent"), map[string]string{
		"sigs.k8s.io/controller-runtime":                  "the controller's framework",
		"github.com/hashicorp/terraform-plugin-go":        "Terraform's",
		"github.com/hashicorp/terraform-plugin-framework": "Terraform's",
		module + "/core/drivertest":                       "the conformance suite",
		"testing":                                         "the testing package",
	})
	if len(bad) > 0 {
		t.Errorf("a CCM host compiles:\n  %s", strings.Join(bad, "\n  "))
	}
}
