package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/golden and docs/reasons.md")

// repoRoot is where the README's commands run; tests run the CLI from there so that paths in
// the output are the ones a user sees.
const repoRoot = "../.."

// runCLI runs the program as a user would, from the repository root.
func runCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), code
}

// golden compares got with testdata/golden/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("cmd", "loopguard", "testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/loopguard -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got; go test ./cmd/loopguard -update rewrites it):\n%s", path, diff)
	}
}

func TestAssessGolden(t *testing.T) {
	t.Chdir(repoRoot)
	cases := map[string]struct {
		reason string
		args   []string
		stdin  string
		code   int
	}{
		"tke-example": {
			reason: "docs/cli.md's sample and the demo's TKE cluster: one with every row of the guide's tables",
			args:   []string{"assess", "-f", "examples/manifests"},
		},
		"vke-example": {
			reason: "VKE ip-mode VIP, Proxy with a same-node client, Proxy with anti-affinity",
			args:   []string{"assess", "-f", "examples/volcengine"},
		},
		"kubernetes-example": {
			reason: "no cloud's marks: the KEP-1860 dialect, a profile among the inputs, a List",
			args:   []string{"assess", "-f", "examples/kubernetes"},
		},
		"bad-inputs": {
			reason: "a typo'd annotation, both TkeServiceConfig annotations, a broken document, an unknown field, a bad profile: all reported with file and line; the good object is still assessed",
			args:   []string{"assess", "-f", "cmd/loopguard/testdata/bad/services.yaml", "--profile", "cmd/loopguard/testdata/bad/profile.yaml"},
			code:   exitInput,
		},
		"vke-lowercase-ip-mode": {
			reason: "ip-mode: vip is refused (the values are case-sensitive)",
			args:   []string{"assess", "-f", "cmd/loopguard/testdata/bad/vke-ip-mode.yaml"},
			code:   exitInput,
		},
		"flags-override-profile": {
			reason: "flags win over the profile: iptables mode intercepts the CLB VIP of a Service; tickets allowed",
			args: []string{"assess", "-f", "examples/manifests", "--proxy-mode", "iptables", "--allow-tickets",
				"--allowlist", "clb-l4-snat,clb-l7-snat", "--allowlist", "clb-keepalive", "--prefer", "lb-features"},
		},
		"stdin": {
			reason: "- reads standard input; the provider is detected from the objects",
			args:   []string{"assess", "-f", "-", "--clients", "app=storefront"},
			stdin:  mustRead(t, "examples/manifests/services.yaml") + "---\n" + mustRead(t, "examples/manifests/nodes.yaml"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, format := range outputFormats {
				stdout, stderr, code := runCLI(t, tc.stdin, append(tc.args, "-o", format)...)
				if code != tc.code {
					t.Errorf("%s\n-o %s: exit code %d, want %d; stderr:\n%s", tc.reason, format, code, tc.code, stderr)
				}
				golden(t, name+"."+format, stdout)
				if format == "json" {
					golden(t, name+".stderr", stderr)
					checkContract(t, stdout)
				}
			}
		})
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkContract holds -o json to the shape scripts rely on (issue 2): every result has these
// keys, with values from these sets.
func checkContract(t *testing.T, out string) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("-o json is not JSON: %v", err)
	}
	for _, k := range []string{"results", "errors", "skipped"} {
		if _, ok := doc[k].([]any); !ok {
			t.Errorf("%q is not a list", k)
		}
	}
	allowed := map[string][]string{
		"risk":    {"none", "at-risk", "unknown"},
		"symptom": {"none", "connection-failure", "intermittent", "delay"},
		"remedy":  {"none", "intercept-vip", "lb-snat", "node-separation", "dns-steering"},
	}
	for _, r := range doc["results"].([]any) {
		res := r.(map[string]any)
		for _, k := range []string{"object", "provider", "risk", "symptom", "loopProbability", "sourceAddress", "reasons", "decision", "notes"} {
			if _, ok := res[k]; !ok {
				t.Errorf("result lacks %q: %v", k, res)
			}
		}
		obj := res["object"].(map[string]any)
		for _, k := range []string{"kind", "namespace", "name"} {
			if _, ok := obj[k].(string); !ok {
				t.Errorf("object lacks %q", k)
			}
		}
		if p, ok := res["loopProbability"]; ok && p != nil {
			if _, isNum := p.(float64); !isNum {
				t.Errorf("loopProbability %v is neither a number nor null", p)
			}
		}
		if _, ok := res["sourceAddress"].(string); !ok {
			t.Errorf("sourceAddress is not a string")
		}
		for _, rr := range res["reasons"].([]any) {
			rm := rr.(map[string]any)
			for _, k := range []string{"code", "message", "source"} {
				if s, _ := rm[k].(string); s == "" {
					t.Errorf("reason lacks %q: %v", k, rm)
				}
			}
		}
		d := res["decision"].(map[string]any)
		for _, k := range []string{"remedy", "path", "why"} {
			if _, ok := d[k]; !ok {
				t.Errorf("decision lacks %q", k)
			}
		}
		check := func(key string, v any) {
			s, _ := v.(string)
			for _, a := range allowed[key] {
				if s == a {
					return
				}
			}
			t.Errorf("%s %q is not one of %v", key, s, allowed[key])
		}
		check("risk", res["risk"])
		check("symptom", res["symptom"])
		check("remedy", d["remedy"])
	}
	for _, e := range doc["errors"].([]any) {
		em := e.(map[string]any)
		if f, _ := em["file"].(string); f == "" {
			t.Errorf("error without a file: %v", em)
		}
		if m, _ := em["message"].(string); m == "" {
			t.Errorf("error without a message: %v", em)
		}
	}
}

func TestExitCodes(t *testing.T) {
	t.Chdir(repoRoot)
	cases := map[string]struct {
		reason   string
		args     []string
		stdin    string
		code     int
		stderr   string // a substring the error output must contain
		noOutput bool
	}{
		"everything assessed": {
			args: []string{"assess", "-f", "examples/manifests"}, code: exitOK,
		},
		"at risk without --fail-on-risk": {
			reason: "risk alone does not fail the command",
			args:   []string{"assess", "-f", "examples/manifests/services.yaml"}, code: exitOK,
		},
		"fail on risk": {
			args: []string{"assess", "-f", "examples/manifests", "--fail-on-risk"}, code: exitAtRisk,
		},
		"fail on risk, nothing at risk": {
			reason: "in iptables mode TKE nodes intercept the CLB VIP of every Service (the Ingresses are left out)",
			args: []string{"assess", "-f", "examples/manifests/services.yaml", "-f", "examples/manifests/nodes.yaml",
				"-f", "examples/manifests/profile.yaml", "--fail-on-risk", "--proxy-mode", "iptables"},
			code: exitOK,
		},
		"input errors win over risk": {
			reason: "exit 2 whenever an input could not be read, even with objects at risk",
			args:   []string{"assess", "-f", "examples/manifests", "-f", "cmd/loopguard/testdata/bad/profile-unknown-field.yaml", "--fail-on-risk"},
			code:   exitInput, stderr: "profile-unknown-field.yaml:4: ClusterProfile: proxymode: unknown field",
		},
		"missing file": {
			args: []string{"assess", "-f", "examples/manifests", "-f", "no/such/file.yaml"}, code: exitInput,
			stderr: "no/such/file.yaml: stat no/such/file.yaml: no such file or directory",
		},
		"unknown provider": {
			args: []string{"assess", "-f", "examples/manifests", "--provider", "aws"}, code: exitInput, noOutput: true,
			stderr: `--provider "aws": supported values: "tencent", "volcengine", "kubernetes"`,
		},
		"unknown allowlist": {
			args: []string{"assess", "-f", "examples/manifests", "--allowlist", "clb-l4-snat,clb-snat"}, code: exitInput, noOutput: true,
			stderr: `--allowlist "clb-snat": supported values: "clb-keepalive", "clb-l4-snat", "clb-l7-snat"`,
		},
		"unknown proxy mode": {
			args: []string{"assess", "-f", "examples/manifests", "--proxy-mode", "userspace"}, code: exitInput, noOutput: true,
			stderr: `--proxy-mode "userspace": supported values: "iptables", "ipvs", "nftables", "ebpf"`,
		},
		"bad version": {
			args: []string{"assess", "-f", "examples/manifests", "--kube-proxy-version", "latest"}, code: exitInput, noOutput: true,
			stderr: `--kube-proxy-version "latest": not a version`,
		},
		"bad output": {
			args: []string{"assess", "-f", "examples/manifests", "-o", "xml"}, code: exitInput, noOutput: true,
			stderr: `--output "xml": supported values: "table", "json", "yaml"`,
		},
		"bad selector": {
			args: []string{"assess", "-f", "examples/manifests", "--clients", "app in (a"}, code: exitInput, noOutput: true,
			stderr: `--clients "app in (a": not a label selector`,
		},
		"no input": {
			args: []string{"assess"}, code: exitInput, noOutput: true, stderr: "no input: give manifests with -f",
		},
		"unknown flag": {
			args: []string{"assess", "-f", "x", "--bogus"}, code: exitInput, noOutput: true, stderr: "unknown flag: --bogus",
		},
		"two clouds": {
			reason: "inputs with TKE and VKE marks and no provider: guessing would apply the wrong rules to half of them",
			args:   []string{"assess", "-f", "examples/manifests/services.yaml", "-f", "examples/volcengine/services.yaml"},
			code:   exitInput, noOutput: true,
			stderr: "the inputs carry the marks of more than one cloud: tencent (Service shop/checkout (examples/manifests/services.yaml:4)",
		},
		"two clouds, provider given": {
			args: []string{"assess", "-f", "examples/manifests/services.yaml", "-f", "examples/volcengine/services.yaml", "--provider", "volcengine"},
			code: exitOK,
		},
		"stdin": {
			args: []string{"assess", "-f", "-"}, stdin: "apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {type: LoadBalancer}\n", code: exitOK,
		},
		"stdin twice": {
			args: []string{"assess", "-f", "-", "--profile", "-"}, code: exitInput, noOutput: true,
			stderr: "standard input can be read once",
		},
		"profile from stdin": {
			args:  []string{"assess", "-f", "examples/manifests/services.yaml", "--profile", "-"},
			stdin: "apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nprovider: tencent\nproxyMode: iptables\n", code: exitOK,
		},
		"version": {
			args: []string{"version"}, code: exitOK,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, tc.stdin, tc.args...)
			if code != tc.code {
				t.Errorf("%s\nexit code %d, want %d\nstderr: %s", tc.reason, code, tc.code, stderr)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.stderr)
			}
			if tc.noOutput && stdout != "" {
				t.Errorf("a usage error printed a report:\n%s", stdout)
			}
			if !tc.noOutput && stdout == "" {
				t.Errorf("no output")
			}
		})
	}
}

// Every reason code the examples produce must be documented in docs/reasons.md (through
// ruleGroups, which the docs test keeps in step with the file).
func TestEmittedCodesAreDocumented(t *testing.T) {
	t.Chdir(repoRoot)
	documented := map[string]bool{}
	for _, g := range ruleGroups() {
		for _, r := range g.Rules {
			documented[string(r.Code)] = true
		}
	}
	for _, args := range [][]string{
		{"assess", "-f", "examples/manifests", "-o", "json"},
		{"assess", "-f", "examples/manifests", "-o", "json", "--proxy-mode", "iptables"},
		{"assess", "-f", "examples/manifests", "-o", "json", "--allow-tickets", "--prefer", "source-ip"},
		{"assess", "-f", "examples/volcengine", "-o", "json"},
		{"assess", "-f", "examples/kubernetes", "-o", "json"},
		{"assess", "-f", "cmd/loopguard/testdata/bad/services.yaml", "-o", "json"},
	} {
		stdout, _, _ := runCLI(t, "", args...)
		var rep Report
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Results {
			var all []Reason
			all = append(all, r.Reasons...)
			all = append(all, r.Notes...)
			all = append(all, r.Decision.Reason)
			for _, rj := range r.Decision.Rejected {
				all = append(all, rj.Reason)
			}
			if r.Hairpin != nil {
				all = append(all, r.Hairpin.Reasons...)
			}
			for _, reason := range all {
				if !documented[reason.Code] {
					t.Errorf("%v: %s emits code %q, which no Rules() lists", args, r.Object, reason.Code)
				}
			}
		}
	}
}

// The JSON report writer must write exactly what encoding/json writes for the same
// report, for every golden case, for a report with every optional field set and awkward
// strings, and for one with a file name that is not UTF-8.
func TestReportJSONMatchesEncodingJSON(t *testing.T) {
	t.Chdir(repoRoot)
	check := func(name string, rep *Report) {
		t.Helper()
		var want, got bytes.Buffer
		if err := renderJSON(&want, rep); err != nil {
			t.Fatal(err)
		}
		if err := writeReportJSON(&got, rep); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.String(), got.String()); diff != "" {
			t.Errorf("%s: writeReportJSON differs from encoding/json (-want +got):\n%s", name, diff)
		}
	}
	for _, files := range [][]string{
		{"examples/manifests"}, {"examples/volcengine"}, {"examples/kubernetes"},
		{"cmd/loopguard/testdata/bad/services.yaml", "cmd/loopguard/testdata/bad/profile.yaml"},
	} {
		o := &assessOptions{files: files, output: "json", set: func(string) bool { return false }}
		rep, err := assess(o)
		if err != nil {
			t.Fatal(err)
		}
		check(strings.Join(files, ","), rep)
	}
	p, yes := 1e-7, true
	path := "VIP"
	full := &Report{APIVersion: "a\u2028\u2029\"\\<&>\x01\x1f\x7f\b\f\r\ufffd€", Kind: "k\t\n",
		Results: []Result{{
			Object: ObjectRef{Kind: "Service"}, Missing: []string{"lb-scope"}, Path: &path, LoopProbability: &p,
			DeclaredClientsLoopProbability: nil, SourceAddressValue: "169.254.42.1", Reasons: []Reason{}, Notes: nil,
			Hairpin:  &Hairpin{Works: &yes, Reasons: []Reason{{Code: "c"}}},
			Decision: Decision{Path: &path, Action: "x", Costs: &Costs{Tickets: []string{"t"}}, Tickets: []string{"t"}, Rejected: []Rejected{{RankedBelow: "r"}}},
		}, {Hairpin: &Hairpin{}, Decision: Decision{Rejected: []Rejected{}}}},
		Skipped: []Skipped{{Why: "w"}},
		Errors:  []InputError{{File: "f", Line: 3, Object: "o", Field: "f"}, {}},
		Cluster: ClusterInfo{Evidence: []string{"e"}, Profile: []string{"p"}},
	}
	if !validUTF8(reflect.ValueOf(full)) {
		t.Fatal("the report of every field must take the v2 path")
	}
	check("every field", full)
	// A file name need not be UTF-8: such a report takes encoding/json's path.
	full.Results[1].Location = "sv\xfe-services.yaml:4"
	full.Errors[1].File = "e\xfd\xff.yaml"
	check("invalid UTF-8", full)
	check("empty", &Report{})
	for _, v := range []float64{0, 1, 0.5, 1.0 / 3, 1e-6, 1e-7, 2.5e-10, 1e21, 1e22, 123456789, 0.00012} {
		v := v
		check("float", &Report{Results: []Result{{LoopProbability: &v}}})
	}
}
