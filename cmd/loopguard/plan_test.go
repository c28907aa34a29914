package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/core"
)

func TestPlanGolden(t *testing.T) {
	t.Chdir(repoRoot)
	cases := map[string]struct {
		reason string
		args   []string
		code   int
	}{
		"plan-tke-example": {
			reason: "the TKE example: prevent-loopback for checkout, node separation for the user on web-internal, the resolved ones up to date",
			args:   []string{"plan", "-f", "examples/manifests"},
		},
		"plan-tke-snat": {
			reason: "preferring the LB's features: a TkeServiceConfig created for checkout's layer-4 SNAT (allowlisted); web-internal's layer-7 SNAT blocked, with the allowlist to ask for",
			args:   []string{"plan", "-f", "examples/manifests", "--prefer", "lb-features", "--allow-tickets"},
			code:   exitBlocked,
		},
		"plan-vke-example": {
			reason: "VKE: offline, the manifests are Services to create with their ip-mode; ledger asks for Proxy where VIP was decided: blocked, loopguard never overwrites a mode",
			args:   []string{"plan", "-f", "examples/volcengine"},
			code:   exitBlocked,
		},
		"plan-vke-node-separation": {
			reason: "VKE preferring the LB's features: ledger created in Proxy mode, the client's anti-affinity for the user, the ipMode check after writing",
			args:   []string{"plan", "-f", "examples/volcengine", "--prefer", "lb-features"},
		},
		"plan-kubernetes-example": {
			reason: "the plain Kubernetes dialect writes only the clouds' own annotation fixes: ipMode is the CCM's, so that plan is unsupported, which is no failure",
			args:   []string{"plan", "-f", "examples/kubernetes"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, format := range outputFormats {
				stdout, stderr, code := runCLI(t, "", append(tc.args, "-o", format)...)
				if code != tc.code {
					t.Errorf("%s\n-o %s: exit code %d, want %d; stderr:\n%s", tc.reason, format, code, tc.code, stderr)
				}
				golden(t, name+"."+format, stdout)
				if format == "json" {
					golden(t, name+".stderr", stderr)
					checkPlanContract(t, stdout)
				}
			}
		})
	}
}

// checkPlanContract holds plan's and apply's -o json to the shape scripts rely on.
func checkPlanContract(t *testing.T, out string) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("-o json is not JSON: %v", err)
	}
	for _, k := range []string{"plans", "errors", "skipped"} {
		if _, ok := doc[k].([]any); !ok {
			t.Errorf("%q is not a list", k)
		}
	}
	if k := doc["kind"]; k != PlanReportKind && k != ApplyReportKind {
		t.Errorf("kind %v", k)
	}
	statuses := []string{StatusUpToDate, StatusPlanned, StatusUserAction, StatusBlocked, StatusUnsupported, StatusFailed, StatusApplied, StatusPending}
	kinds := []string{"error"}
	for _, k := range coreKinds {
		kinds = append(kinds, core.BlockerOf(k).Kind)
	}
	for _, p := range doc["plans"].([]any) {
		plan := p.(map[string]any)
		for _, k := range []string{"object", "location", "provider", "risk", "decision", "status", "changes", "checks", "notes", "blocked"} {
			if _, ok := plan[k]; !ok {
				t.Errorf("plan lacks %q: %v", k, plan)
			}
		}
		status, _ := plan["status"].(string)
		if !contains(statuses, status) {
			t.Errorf("status %q is not one of %v", status, statuses)
		}
		for _, k := range []string{"blocked", "error"} {
			if e, ok := plan[k].(map[string]any); ok {
				if kind, _ := e["kind"].(string); !contains(kinds, kind) {
					t.Errorf("%s kind %q is not one of %v", k, kind, kinds)
				}
				if m, _ := e["message"].(string); m == "" {
					t.Errorf("%s without a message", k)
				}
			}
		}
		if (status == StatusBlocked) != (plan["blocked"] != nil) {
			t.Errorf("status %s with blocked %v", status, plan["blocked"])
		}
		for _, c := range plan["changes"].([]any) {
			ch := c.(map[string]any)
			by, _ := ch["by"].(string)
			if !contains([]string{"cluster", "cloud", "user"}, by) {
				t.Errorf("change by %q", by)
			}
			if by == "cluster" && (ch["object"] == nil || ch["edits"] == nil) {
				t.Errorf("a cluster change without its object or edits: %v", ch)
			}
		}
	}
}

// Every reason code a plan carries (decisions, changes, notes) is documented.
func TestPlanCodesAreDocumented(t *testing.T) {
	t.Chdir(repoRoot)
	documented := map[string]bool{}
	for _, g := range ruleGroups() {
		for _, r := range g.Rules {
			documented[string(r.Code)] = true
		}
	}
	for _, args := range [][]string{
		{"plan", "-f", "examples/manifests", "-o", "json"},
		{"plan", "-f", "examples/manifests", "-o", "json", "--prefer", "lb-features", "--allow-tickets"},
		{"plan", "-f", "examples/manifests", "-o", "json", "--prefer", "source-ip", "--allow-tickets"},
		{"plan", "-f", "examples/volcengine", "-o", "json"},
		{"plan", "-f", "examples/volcengine", "-o", "json", "--prefer", "lb-features"},
	} {
		stdout, _, _ := runCLI(t, "", args...)
		rep := decodePlan(t, stdout)
		for _, p := range rep.Plans {
			all := append([]Reason{p.Decision.Reason}, p.Notes...)
			for _, c := range p.Changes {
				all = append(all, c.Reason)
			}
			for _, r := range all {
				if r.Code != "" && !documented[r.Code] {
					t.Errorf("%v: %s emits code %q, which no Rules() lists", args, p.Object, r.Code)
				}
			}
		}
	}
}

func TestPlanScanApplyExitCodes(t *testing.T) {
	t.Chdir(repoRoot)
	// No kubeconfig anywhere, and not in a Pod: client-go's rules find nothing.
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", filepath.Join(home, "absent"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	bad := filepath.Join(home, "bad-kubeconfig")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\ncontexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		args     []string
		code     int
		stderr   string
		noOutput bool
	}{
		"plan: no input": {
			args: []string{"plan"}, code: exitInput, noOutput: true, stderr: "no input: give manifests with -f",
		},
		"plan: bad output": {
			args: []string{"plan", "-f", "examples/manifests", "-o", "xml"}, code: exitInput, noOutput: true,
			stderr: `--output "xml": supported values`,
		},
		"plan: input errors": {
			args: []string{"plan", "-f", "examples/manifests", "-f", "no/such/file.yaml"}, code: exitInput,
			stderr: "no/such/file.yaml: stat no/such/file.yaml: no such file or directory",
		},
		"plan: every plan computed": {
			args: []string{"plan", "-f", "examples/manifests"}, code: exitOK,
		},
		"plan: blocked": {
			args: []string{"plan", "-f", "examples/manifests", "--prefer", "lb-features", "--allow-tickets"}, code: exitBlocked,
		},
		"plan: unsupported is no failure": {
			args: []string{"plan", "-f", "examples/manifests", "--provider", "kubernetes"}, code: exitOK,
		},
		"scan: no kubeconfig": {
			// What loopguard looked for, in client-go's order, and how to point it at a
			// cluster; not client-go's "try setting KUBERNETES_MASTER".
			args: []string{"scan"}, code: exitInput, noOutput: true, stderr: "no cluster to talk to: loopguard looked for --kubeconfig (not given), $KUBECONFIG=",
		},
		"scan: missing kubeconfig file": {
			args: []string{"scan", "--kubeconfig", "no/such/kubeconfig"}, code: exitInput, noOutput: true,
			stderr: "kubeconfig: stat no/such/kubeconfig: no such file or directory",
		},
		"scan: unknown context": {
			args: []string{"scan", "--kubeconfig", bad, "--context", "prod"}, code: exitInput, noOutput: true,
			stderr: `context "prod" does not exist`,
		},
		"scan: unreachable cluster": {
			args: []string{"scan", "--kubeconfig", bad}, code: exitInput, noOutput: true,
			stderr: "read the cluster (context x): list Services:",
		},
		"scan: bad flag value before connecting": {
			args: []string{"scan", "--proxy-mode", "userspace"}, code: exitInput, noOutput: true,
			stderr: `--proxy-mode "userspace": supported values`,
		},
		"apply: bad --object": {
			args: []string{"apply", "--object", "Service/checkout"}, code: exitInput, noOutput: true,
			stderr: `--object "Service/checkout": want Kind/namespace/name`,
		},
		"apply: --object of another kind": {
			args: []string{"apply", "--object", "Deployment/shop/checkout"}, code: exitInput, noOutput: true,
			stderr: "the kind is Service, Ingress or Gateway",
		},
		"apply: --object outside the namespace": {
			args: []string{"apply", "-n", "shop", "--object", "Service/other/checkout"}, code: exitInput, noOutput: true,
			stderr: `--object "Service/other/checkout" is outside --namespace "shop"`,
		},
		"apply: unreachable cluster": {
			args: []string{"apply", "--kubeconfig", bad, "--dry-run"}, code: exitInput, noOutput: true,
			stderr: "read the cluster (context x)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, "", tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstderr: %s", code, tc.code, stderr)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.stderr)
			}
			if tc.noOutput && stdout != "" {
				t.Errorf("an error printed a report:\n%s", stdout)
			}
			if !tc.noOutput && stdout == "" {
				t.Errorf("no output")
			}
		})
	}
}
