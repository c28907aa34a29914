package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/core"
)

const reasonsDoc = "docs/reasons.md"

// renderReasons writes docs/reasons.md from every package's Rules().
func renderReasons() string {
	var b strings.Builder
	b.WriteString(`# Reason codes

<!-- Generated from the Rules() of every package by
     go test ./cmd/loopguard -run TestReasonsDocIsCurrent -update
     Do not edit by hand: the test fails when this file and the code disagree. -->

Every conclusion loopguard prints carries a reason: a stable **code**, a message about the
object at hand, and the **source** the rule comes from: a section of [sources.md](sources.md),
which states the fact and its public origin, or a public document directly (an upstream
source file, an issue, a cloud's documentation page). ` + "`loopguard explain CODE`" + ` prints one. This
page is the one place that lists every code any package can emit, with the rule's summary.
A code never changes meaning once released; new rules get new codes.

Codes are unique across all packages. Dialect codes carry the dialect's prefix (` + "`tke-`" + `,
` + "`vke-`" + `, ` + "`k8s-`" + `).

`)
	groups := ruleGroups()
	total := 0
	for _, g := range groups {
		total += len(g.Rules)
	}
	fmt.Fprintf(&b, "%d codes in %d groups:", total, len(groups))
	for _, g := range groups {
		fmt.Fprintf(&b, " [%s](#%s) (%d)", g.Title, anchor(g.Title), len(g.Rules))
		if g.Title != groups[len(groups)-1].Title {
			b.WriteString(",")
		}
	}
	b.WriteString(".\n")
	for _, g := range groups {
		fmt.Fprintf(&b, "\n## %s\n\nDeclared in `%s`.\n\n| code | summary | source |\n|---|---|---|\n", g.Title, g.Package)
		for _, r := range g.Rules {
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.Code, cell(r.Summary), cell(r.Source))
		}
	}
	return b.String()
}

func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}

// anchor is GitHub's heading anchor.
func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func TestReasonsDocIsCurrent(t *testing.T) {
	t.Chdir(repoRoot)
	got := renderReasons()
	if *update {
		if err := os.WriteFile(reasonsDoc, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(reasonsDoc)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s is stale; run go test ./cmd/loopguard -run TestReasonsDocIsCurrent -update (-file +code):\n%s", reasonsDoc, diff)
	}
}

func TestReasonCodesAreUnique(t *testing.T) {
	seen := map[core.Code]string{}
	for _, g := range ruleGroups() {
		for _, r := range g.Rules {
			if r.Code == "" || r.Summary == "" || r.Source == "" {
				t.Errorf("%s: rule %+v lacks a code, summary or source", g.Title, r)
			}
			if strings.ContainsAny(string(r.Code), " \t|`") {
				t.Errorf("%s: code %q is not a plain identifier", g.Title, r.Code)
			}
			if prev, dup := seen[r.Code]; dup {
				t.Errorf("code %q is declared by %s and again by %s", r.Code, prev, g.Title)
			}
			seen[r.Code] = g.Title
		}
	}
}

const annotationsDoc = "docs/annotations.md"

// docs/annotations.md must describe every loopguard.io annotation and every ClusterProfile
// field; a field added to the code without a word in the docs fails here.
func TestAnnotationsDocCoversAnnotationsAndProfileFields(t *testing.T) {
	t.Chdir(repoRoot)
	b, err := os.ReadFile(annotationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, a := range []string{core.AnnotationLBScope, core.AnnotationLBSourceNAT, core.AnnotationClientAccess, core.AnnotationClients} {
		if !strings.Contains(doc, "`"+a+"`") {
			t.Errorf("%s does not describe the annotation %s", annotationsDoc, a)
		}
	}
	for _, f := range jsonFields(reflect.TypeOf(core.ClusterProfile{}), "") {
		if !strings.Contains(doc, "`"+f+"`") {
			t.Errorf("%s does not describe the ClusterProfile field %s", annotationsDoc, f)
		}
	}
	for _, c := range capabilityNames() {
		if !strings.Contains(doc, "`"+c+"`") {
			t.Errorf("%s does not list the allowlist %s", annotationsDoc, c)
		}
	}
}

// jsonFields lists a struct's JSON field paths ("policy.prefer"), recursing into structs.
func jsonFields(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		path := prefix + name
		out = append(out, path)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && !implementsUnmarshaler(ft) {
			out = append(out, jsonFields(ft, path+".")...)
		}
	}
	return out
}

func implementsUnmarshaler(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(reflect.TypeOf((*json.Unmarshaler)(nil)).Elem())
}

// The core must stay usable offline and embeddable anywhere (DESIGN.md, the package table):
// no cloud SDK, no client-go, no controller-runtime, not even indirectly. make lint runs the
// same check.
func TestCoreImportsNoCloudSDKOrClient(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	out, err := exec.Command(gobin, "list", "-deps", "github.com/loopguard/loopguard/core").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, bad := range forbiddenInCore {
			if pkg == bad || strings.HasPrefix(pkg, bad+"/") {
				t.Errorf("core depends on %s (forbidden: %s)", pkg, bad)
			}
		}
	}
}

// forbiddenInCore lists module path prefixes core must never reach.
var forbiddenInCore = []string{
	"k8s.io/client-go",
	"sigs.k8s.io/controller-runtime",
	"k8s.io/cloud-provider",
	"github.com/tencentcloud",
	"github.com/volcengine",
	"github.com/aws",
	"cloud.google.com",
	"google.golang.org/api",
	"github.com/Azure",
	"github.com/aliyun",
	"github.com/hashicorp/terraform-plugin-framework",
	"github.com/loopguard/loopguard/providers",
	"github.com/loopguard/loopguard/adapters",
}

// The README's top must show the two commands a newcomer runs, the demo first (the whole job,
// with nothing to set up), and .ci/run must run the second; the README stays the size of a peer
// project's, pointing to docs/ for the rest.
func TestREADMEStartsWithTheTwoCommands(t *testing.T) {
	t.Chdir(repoRoot)
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if n := strings.Count(readme, "\n"); n > 250 {
		t.Errorf("README.md has %d lines, more than 250: move the details to docs/", n)
	}
	start := strings.Index(readme, "```")
	if start < 0 || start > 1200 {
		t.Fatalf("README.md does not open with a code block")
	}
	end := strings.Index(readme[start+3:], "```")
	if end < 0 {
		t.Fatalf("README.md's first code block does not end")
	}
	lines := strings.Split(strings.TrimSpace(strings.TrimPrefix(readme[start:start+3+end], "```sh")), "\n")
	want := []string{"go run ./cmd/loopguard/demo", "make test"}
	if len(lines) != len(want) {
		t.Fatalf("README.md's first code block has %d lines, want the %d commands %q", len(lines), len(want), want)
	}
	for i, cmd := range want {
		if !strings.HasPrefix(lines[i], cmd+" ") && lines[i] != cmd {
			t.Errorf("README.md's command %d is %q, want %q", i+1, lines[i], cmd)
		}
	}
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	// .ci/run's step helper runs a command and logs its time; hack/test-slot.sh runs it once
	// one of the run's test slots is free.
	if !regexp.MustCompile(`(?m)^(step )?(hack/test-slot\.sh )?make test$`).Match(ci) || !strings.Contains(string(ci), "set -euo pipefail") {
		t.Errorf(".ci/run does not run make test under set -euo pipefail")
	}
	if info, err := os.Stat(".ci/run"); err != nil || info.Mode()&0o111 == 0 {
		t.Errorf(".ci/run is not executable")
	}
}

// The samples in the README and docs/cli.md must be what the commands print for the examples
// today: the demo's table, assess's and plan's.
func TestSamplesMatchTheExamples(t *testing.T) {
	t.Chdir(repoRoot)
	for _, tc := range []struct{ doc, header, golden string }{
		{"README.md", "```\n  OBJECT                      BEFORE     AFTER      WHAT HAPPENED\n", "cmd/loopguard/testdata/golden/demo.stdout"},
		{"docs/cli.md", "```\nOBJECT                     PROVIDER  RISK     SYMPTOM", "cmd/loopguard/testdata/golden/tke-example.table"},
		{"docs/cli.md", "```\nOBJECT                     PROVIDER  RISK     REMEDY → PATH            PLAN\n", "cmd/loopguard/testdata/golden/plan-tke-example.table"},
	} {
		doc, err := os.ReadFile(tc.doc)
		if err != nil {
			t.Fatal(err)
		}
		golden, err := os.ReadFile(tc.golden)
		if err != nil {
			t.Fatal(err)
		}
		lines := map[string]bool{}
		for _, l := range strings.Split(string(golden), "\n") {
			lines[l] = true
		}
		s := string(doc)
		start := strings.Index(s, tc.header)
		if start < 0 {
			t.Errorf("%s has no sample for %s", tc.doc, tc.golden)
			continue
		}
		end := strings.Index(s[start+3:], "```")
		for _, l := range strings.Split(s[start+4:start+3+end], "\n") {
			if l == "" || l == "..." {
				continue
			}
			if !lines[l] {
				t.Errorf("%s sample line is not in the output (%s):\n%s", tc.doc, tc.golden, l)
			}
		}
	}
}
