package apiserver

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// GatewayAPICRDs are Gateway API's standard-channel CRDs from the sigs.k8s.io/gateway-api
// module the build requires, for [WithCRDPaths]; the ValidatingAdmissionPolicy shipped beside
// them is left out. The test skips where the go command is not there to find the module, and
// fails when the module holds no CRDs.
func GatewayAPICRDs(t testing.TB) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	if err != nil {
		t.Skipf("cannot find the sigs.k8s.io/gateway-api module: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in the gateway-api module (%v)", err)
	}
	var crds []string
	for _, f := range files {
		if !strings.Contains(filepath.Base(f), "_vap_") { // a ValidatingAdmissionPolicy, not a CRD
			crds = append(crds, f)
		}
	}
	return crds
}
