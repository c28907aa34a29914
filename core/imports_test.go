package core

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreImportsNoCloudOrClient enforces DESIGN.md: the core knows physics, not clouds. It may
// import k8s.io/api, apimachinery, go-hclog and the standard library, never a cloud SDK,
// client-go or controller-runtime.
func TestCoreImportsNoCloudOrClient(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found; the Makefile's lint step checks this too")
	}
	out, err := exec.Command(goBin, "list", "-deps", "github.com/loopguard/loopguard/core").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/tencentcloud/", "github.com/volcengine/", "k8s.io/client-go/", "sigs.k8s.io/controller-runtime",
		"k8s.io/cloud-provider", "github.com/loopguard/loopguard/providers", "github.com/loopguard/loopguard/adapters",
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.HasPrefix(pkg, f) {
				t.Errorf("core depends on %s", pkg)
			}
		}
	}
}
