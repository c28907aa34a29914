package kubernetes

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite docs/clouds.md from the units")

const cloudsDoc = "../../docs/clouds.md"

// unitFile reports a unit's file: cloud_<name>.go.
func unitFile(name string) bool {
	return strings.HasPrefix(name, "cloud_") && strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")
}

// TestSharedCodeNamesNoCloud: every cloud is one unit. No file of the package outside the
// units (cloud_<name>.go) and the registry line (registry.go) names a unit's recognition mark,
// annotation or setting in a string, or uses a name a unit declares.
func TestSharedCodeNamesNoCloud(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	files := pkgs["kubernetes"].Files
	// What the units own: their marks and setting names, and every name they declare.
	var marks []string
	for _, u := range registry {
		f := u.facts()
		marks = append(append(append(marks, f.annotationPrefixes...), f.providerIDPrefixes...), f.classes...)
		for _, s := range f.settings {
			marks = append(marks, s.name)
		}
		for _, s := range f.scope {
			marks = append(marks, s.Key)
		}
	}
	declared := map[string]string{}
	units := 0
	for path, f := range files {
		if !unitFile(filepath.Base(path)) {
			continue
		}
		units++
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					declared[d.Name.Name] = path
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							declared[n.Name] = path
						}
					case *ast.TypeSpec:
						declared[s.Name.Name] = path
					}
				}
			}
		}
	}
	if units != len(registry) {
		t.Errorf("%d unit files for %d units in the registry: one file per unit", units, len(registry))
	}
	for path, f := range files {
		base := filepath.Base(path)
		if unitFile(base) {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				s, _ := strconv.Unquote(n.Value)
				for _, m := range marks {
					if strings.Contains(s, m) {
						t.Errorf("%s: %q names a unit's %q: it belongs in the unit", fset.Position(n.Pos()), s, m)
					}
				}
			case *ast.Ident:
				if from, ok := declared[n.Name]; ok && base != "registry.go" {
					t.Errorf("%s: uses %s, which %s declares: ask the unit through its hooks", fset.Position(n.Pos()), n.Name, from)
				}
			}
			return true
		})
	}
	if len(registry) > 64 {
		t.Errorf("%d units: detection keeps them in a 64-bit mask", len(registry))
	}
}

var releaseTag = regexp.MustCompile(`v\d+\.\d+(\.\d+)?`)

// TestCloudsTable: docs/clouds.md is the units' table, and every unit that recognises a cloud
// has a row citing the upstream release it was read at (or the documentation, for a closed
// controller).
func TestCloudsTable(t *testing.T) {
	for _, u := range registry {
		f := u.facts()
		if len(f.annotationPrefixes)+len(f.classes)+len(f.providerIDPrefixes) == 0 {
			continue
		}
		d := f.doc
		if d.lb == "" || d.backend == "" || d.status == "" || d.remedy == "" || d.sources == "" {
			t.Errorf("%s: its docs/clouds.md row is incomplete: %+v", f.name, d)
		}
		if !releaseTag.MatchString(d.sources) && !strings.Contains(d.sources, "documentation") {
			t.Errorf("%s: its sources name no release read: %q", f.name, d.sources)
		}
	}
	got := renderClouds()
	if *update {
		if err := os.WriteFile(cloudsDoc, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(cloudsDoc)
	if err != nil {
		t.Fatalf("%v (go test ./providers/kubernetes -run TestCloudsTable -update writes it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("docs/clouds.md and the units disagree (-file +units); rerun with -update and review:\n%s", diff)
	}
}

// renderClouds writes docs/clouds.md from the units.
func renderClouds() string {
	var b strings.Builder
	b.WriteString(`# The clouds: what each load balancer does, and the fixes

<!-- Generated from the units of providers/kubernetes (cloud_<name>.go) by
     go test ./providers/kubernetes -run TestCloudsTable -update
     Do not edit by hand: the test fails when this file and the units disagree. -->

The plain ` + "`kubernetes`" + ` dialect knows each cloud through one unit, a file
` + "`providers/kubernetes/cloud_<name>.go`" + ` that reads every setting exactly as that cloud's
controller parses it (a value the controller refuses or ignores is reported, naming the Service
and the key), and cites the upstream file and the release it was read at. The cloud is
recognised from the Service's ` + "`spec.loadBalancerClass`" + `, then from annotations only one cloud's
controller reads (annotations of two clouds: no conclusion), then from every Node's
` + "`spec.providerID`" + ` prefix (all Nodes must agree). Where a fact changed between the controller's
releases, the release comes from the profile's ` + "`ccmVersion`" + ` or the controller's Pod image in the
inputs; unknown, the verdict is tentative and names the release that decides. Settings of the
controller itself (its environment, flags, cloud config) are stated in the profile's
` + "`controllerSettings`" + `, or read from its Pod in the inputs; never guessed.

`)
	b.WriteString("| cloud | recognised by | what the load balancer does to the client's address | what the backends expect | what the controller publishes | the fix loopguard offers | sources (release read) |\n|---|---|---|---|---|---|---|\n")
	for _, u := range registry {
		f := u.facts()
		if len(f.annotationPrefixes)+len(f.classes)+len(f.providerIDPrefixes) == 0 {
			continue
		}
		var rec []string
		for _, c := range f.classes {
			rec = append(rec, "class `"+c+"`")
		}
		for _, p := range f.annotationPrefixes {
			rec = append(rec, "`"+p+"*`")
		}
		for _, p := range f.providerIDPrefixes {
			rec = append(rec, "Node `"+p+"`")
		}
		d := f.doc
		b.WriteString("| " + f.title + " (`" + f.name + "`) | " + strings.Join(rec, ", ") + " | " + cellOf(d.lb) + " | " + cellOf(d.backend) + " | " +
			cellOf(d.status) + " | " + cellOf(d.remedy) + " | " + cellOf(d.sources) + " |\n")
	}
	b.WriteString("\n## Controller settings a profile can state\n\nBy the name the controller reads, in `controllerSettings` (a host passes the same through `kubernetes.ControllerConfig`):\n\n")
	b.WriteString("| cloud | settings |\n|---|---|\n")
	for _, u := range registry {
		f := u.facts()
		if len(f.settings) == 0 {
			continue
		}
		var names []string
		for _, s := range f.settings {
			n := "`" + s.name + "`"
			if s.env {
				n += " (environment"
				if s.unset != "" {
					n += "; unset: `" + s.unset + "`"
				}
				n += ")"
			}
			names = append(names, n)
		}
		b.WriteString("| " + f.title + " | " + strings.Join(names, ", ") + " |\n")
	}
	b.WriteString("\n## Internal load-balancer annotations\n\nRead whatever the cloud, unless a row's controller is not the one that makes the Service's load balancer; a value in neither column draws no conclusion (`*`: every other value).\n\n")
	b.WriteString("| cloud | annotation | private | public | source |\n|---|---|---|---|---|\n")
	rows := ScopeAnnotations()
	for _, a := range rows {
		b.WriteString("| " + a.Cloud + " | `" + a.Key + "` | " + values(a.Private) + " | " + values(a.Public) + " | " + cellOf(a.Source) + " |\n")
	}
	var cls []string
	for _, c := range scopeClasses {
		cls = append(cls, "`"+c.Class+"`: "+string(c.Scope)+" ("+c.Cloud+")")
	}
	sort.Strings(cls)
	b.WriteString("\nClasses that fix the scope: " + strings.Join(cls, "; ") + ".\n")
	return b.String()
}

func values(vs []string) string {
	if len(vs) == 0 {
		return "—"
	}
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = "`" + v + "`"
		if v == "" {
			q[i] = "(empty)"
		}
	}
	return strings.Join(q, ", ")
}

func cellOf(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
