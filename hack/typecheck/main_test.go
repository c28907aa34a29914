package main

import (
	"bytes"
	"fmt"
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
	dep := "package dep\n\nimport \"strings\"\n\nfunc Answer() int { return strings.Count(\"42\", \"\") }\n"
	if code := run(module(t, dep), []string{"."}, &out, &errs); code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, errs.String())
	}
	// Only the main package is named: dep, strings and what strings imports are checked too.
	var n int
	if _, err := fmt.Sscanf(out.String(), "typecheck: %d packages type-checked from source, no error", &n); err != nil || n < 3 {
		t.Errorf("stdout %q: want a count of at least 3 packages (%v)", out.String(), err)
	}
}

// Each case must fail with exit code code and name what is wrong.
func TestErrorsFail(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dep      string
		patterns []string
		code     int
		want     []string
	}{{
		// In a dependency, not in the package named: the case the hosts need (loopguard's
		// packages against another Kubernetes minor's API).
		name: "type error in a dependency", patterns: []string{"."}, code: 1,
		dep:  "package dep\n\nfunc Answer() int { return \"forty-two\" }\n",
		want: []string{"example.invalid/m/dep: ", "dep.go:3:", `cannot use "forty-two"`, "typecheck: 1 errors"},
	}, {
		// The compiler refuses these; so does the type checker.
		name: "unused import and variable", code: 1,
		dep:  "package dep\n\nimport \"strings\"\n\nfunc Answer() int { x := 1; return 42 }\n",
		want: []string{`"strings" imported and not used`, "declared and not used: x"},
	}, {
		name: "missing import", code: 1,
		dep:  "package dep\n\nimport \"example.invalid/nowhere\"\n\nfunc Answer() int { return nowhere.X }\n",
		want: []string{"example.invalid/nowhere"},
	}, {
		// A host folder left empty by a failed copy is an error, not an empty success.
		name: "pattern matching nothing", patterns: []string{"./nothing/..."}, code: 1,
		dep:  "package dep\n",
		want: []string{"./nothing/..."},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			if code := run(module(t, tc.dep), tc.patterns, &out, &errs); code != tc.code {
				t.Fatalf("exit %d, want %d; stdout %q, stderr:\n%s", code, tc.code, out.String(), errs.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(errs.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs.String())
				}
			}
		})
	}
}
