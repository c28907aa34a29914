package main

import (
	"strings"
	"testing"
)

// TestAssessDiagram: --diagram adds each exposure's path to the table and, with Mermaid, to
// -o yaml; without it the output is unchanged (the other golden files).
func TestAssessDiagram(t *testing.T) {
	t.Chdir(repoRoot)
	for _, format := range []string{"table", "yaml"} {
		stdout, stderr, code := runCLI(t, "", "assess", "-f", "examples/manifests", "--diagram", "-o", format)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		golden(t, "tke-example-diagram."+format, stdout)
		if format == "table" && !strings.Contains(stdout, "Service shop/checkout: client Pod on 10.0.1.11 ──► node 10.0.1.11 ──► LB VIP:80 ──► node 10.0.1.11 ──► backend Pod ✗") {
			t.Errorf("no loop drawn for shop/checkout:\n%s", stdout)
		}
		if format == "yaml" && !strings.Contains(stdout, "mermaid: |") {
			t.Errorf("no Mermaid in -o yaml")
		}
	}
}
