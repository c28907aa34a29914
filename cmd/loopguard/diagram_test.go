package main

import (
	"encoding/json"
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

// TestExplainDiagram: explain draws the path for the codes that are about one, and only them.
func TestExplainDiagram(t *testing.T) {
	tests := map[string]string{
		"same-node-loop":            "──► LB VIP:80 ──► node node-a ──► backend Pod ✗",
		"vip-skips-proxy-header":    "(kube-proxy answers for VIP:80) ──► node node-a ──► backend Pod ✗",
		"nodeport-cluster-any-node": "when the LB picks node node-a (33% of connections)",
		"lb-source-nat":             "LB VIP:80 (source NAT) ──► node node-a ──► backend Pod\n",
	}
	for code, want := range tests {
		stdout, _, code2 := runCLI(t, "", "explain", code)
		if code2 != exitOK || !strings.Contains(stdout, "picture: ") || !strings.Contains(stdout, want) {
			t.Errorf("explain %s (exit %d) lacks %q:\n%s", code, code2, want, stdout)
		}
	}
	if stdout, _, _ := runCLI(t, "", "explain", "tke-offer-prevent-loopback"); strings.Contains(stdout, "picture:") {
		t.Errorf("a picture for a code that is not about a path:\n%s", stdout)
	}
	// -o json|yaml: the same explanation as a document, the path with it as Mermaid.
	stdout, stderr, code := runCLI(t, "", "explain", "same-node-loop", "-o", "json")
	var ex Explanation
	if err := json.Unmarshal([]byte(stdout), &ex); err != nil || code != exitOK {
		t.Fatalf("explain -o json: exit %d, %v: %s%s", code, err, stdout, stderr)
	}
	if ex.Kind != ExplanationKind || ex.Code != "same-node-loop" || ex.Meaning == "" || ex.Path == nil || len(ex.Path.Hops) != 5 ||
		!strings.Contains(ex.Mermaid, "flowchart LR") || !strings.Contains(ex.Mermaid, ".-x") {
		t.Errorf("explain -o json: %+v", ex)
	}
	if stdout, _, _ := runCLI(t, "", "explain", "same-node-loop", "-o", "yaml"); !strings.Contains(stdout, "kind: Explanation") || !strings.Contains(stdout, "mermaid: |") {
		t.Errorf("explain -o yaml:\n%s", stdout)
	}
	if stdout, _, _ := runCLI(t, "", "explain", "tke-offer-prevent-loopback", "-o", "json"); strings.Contains(stdout, "mermaid") {
		t.Errorf("a path for a code that is not about one:\n%s", stdout)
	}
	if _, stderr, code := runCLI(t, "", "explain", "same-node-loop", "-o", "svg"); code != exitInput || !strings.Contains(stderr, "want text, json or yaml") {
		t.Errorf("-o svg: exit %d: %s", code, stderr)
	}
}
