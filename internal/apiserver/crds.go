package apiserver

import (
	"encoding/json"
	"errors"
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

// ModuleFiles are the files of module at version that pattern (a filepath.Glob pattern
// relative to the module's root) matches: CRDs a project that loopguard does not require
// publishes in its module (Envoy Gateway's), for [WithCRDPaths]. The module is downloaded
// through the Go module proxy into the module cache, as `go mod download` does; nothing of it
// is built and loopguard's go.mod does not change. The test skips where there is no go
// command, and fails when the module cannot be downloaded or nothing matches, so that a moved
// file cannot turn a test into a test of nothing.
func ModuleFiles(t testing.TB, module, version, pattern string) []string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", module+"@"+version).Output()
	if errors.Is(err, exec.ErrNotFound) {
		t.Skipf("no go command to download %s@%s: %v", module, version, err)
	}
	var dl struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &dl); err != nil || jerr != nil || dl.Dir == "" {
		t.Fatalf("go mod download %s@%s: %v %v %s", module, version, err, jerr, dl.Error)
	}
	files, err := filepath.Glob(filepath.Join(dl.Dir, pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("nothing matches %s in %s@%s (%v)", pattern, module, version, err)
	}
	return files
}
