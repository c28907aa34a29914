package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// module writes a throwaway module: a main package importing ./dep, whose source is dep.
func module(t *testing.T, dep string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":     "module example.invalid/m\n\ngo 1.26.0\n",
		"main.go":    "package main\n\nimport \"example.invalid/m/dep\"\n\nfunc main() { println(dep.Answer()) }\n",
		"dep/dep.go": dep,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCleanModulePasses(t *testing.T) {
	var out, errs bytes.Buffer
	code := run(module(t, "package dep\n\nfunc Answer() int { return 42 }\n"), nil, &out, &errs)
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, errs.String())
	}
	// The main package, dep and the standard library packages they import (runtime's too).
	if !strings.Contains(out.String(), "packages type-checked from source, no error") {
		t.Errorf("stdout %q", out.String())
	}
}

// A type error in a dependency, not in the package named on the command line: the case the
// hosts need (loopguard's packages against another Kubernetes minor's API).
func TestTypeErrorInADependencyFails(t *testing.T) {
	var out, errs bytes.Buffer
	code := run(module(t, "package dep\n\nfunc Answer() int { return \"forty-two\" }\n"), []string{"."}, &out, &errs)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stdout %q, stderr:\n%s", code, out.String(), errs.String())
	}
	for _, want := range []string{"example.invalid/m/dep: ", "dep.go:3:", "cannot use \"forty-two\"", "typecheck: 1 errors"} {
		if !strings.Contains(errs.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs.String())
		}
	}
}

// The compiler refuses an unused import and an unused variable; so does the type checker.
func TestWhatOnlyTheCompilerUsedToReportFails(t *testing.T) {
	var out, errs bytes.Buffer
	code := run(module(t, "package dep\n\nimport \"strings\"\n\nfunc Answer() int { x := 1; return 42 }\n"), nil, &out, &errs)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, errs.String())
	}
	for _, want := range []string{`"strings" imported and not used`, "declared and not used: x"} {
		if !strings.Contains(errs.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs.String())
		}
	}
}

func TestMissingImportFails(t *testing.T) {
	var out, errs bytes.Buffer
	code := run(module(t, "package dep\n\nimport \"example.invalid/nowhere\"\n\nfunc Answer() int { return nowhere.X }\n"), nil, &out, &errs)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, errs.String())
	}
	if !strings.Contains(errs.String(), "example.invalid/nowhere") {
		t.Errorf("stderr does not name the missing import:\n%s", errs.String())
	}
}

// A pattern that matches nothing (a host folder left empty by a failed copy) is an error, not
// an empty success.
func TestPatternMatchingNothingFails(t *testing.T) {
	var out, errs bytes.Buffer
	code := run(module(t, "package dep\n"), []string{"./nothing/..."}, &out, &errs)
	if code == 0 {
		t.Fatalf("exit 0 for a pattern that matches nothing; stdout %q", out.String())
	}
	if !strings.Contains(errs.String(), "./nothing/...") {
		t.Errorf("stderr does not name the pattern:\n%s", errs.String())
	}
}
