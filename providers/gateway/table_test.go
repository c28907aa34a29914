package gateway

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the generated tables of docs/gateway.md from the units")

const gatewayDoc = "../../docs/gateway.md"

// docTables are the tables of docs/gateway.md generated from the units, by the name of their
// markers.
var docTables = map[string]func() string{
	"implementations": func() string {
		return table([]string{"implementation", "detection", "what its proxy expects from the load balancer", "remedy when the LB sends a PROXY header it does not read; where the LB's annotations go", "source (version checked)"},
			func(u unit, d unitDoc) []string {
				r := u.expectProxy()
				remedy := "—"
				if r.ID != "" {
					remedy = fmt.Sprintf("`%s`: set `%s` to `%s` on %s", r.ID, r.Field, r.Value, r.Object)
				}
				return []string{u.name(), controllerNames(u) + "; " + d.Marks, d.Expects, remedy + "; " + d.Fix, sources(d)}
			})
	},
	"services": func() string {
		return table([]string{"implementation", "GatewayClass `controllerName`", "where the Service is", "what names its Gateway"},
			func(u unit, d unitDoc) []string { return []string{u.name(), controllerNames(u), d.Service, d.Marks} })
	},
	"proxy-protocol": func() string {
		return table([]string{"implementation", "what loopguard reads"},
			func(u unit, d unitDoc) []string { return []string{u.name(), d.ProxyProtocol} })
	},
	"client-address": func() string {
		return table([]string{"implementation", "what loopguard reads"},
			func(u unit, d unitDoc) []string { return []string{u.name(), d.ClientAddress} })
	},
}

func controllerNames(u unit) string {
	names := u.controllerNames()
	for i, n := range names {
		names[i] = "`" + n + "`"
	}
	return strings.Join(names, ", ")
}

func sources(d unitDoc) string {
	parts := make([]string, len(d.Sources))
	for i, s := range d.Sources {
		parts[i] = fmt.Sprintf("%s %s: `%s`", s.Repo, s.Version, strings.Join(s.Files, "`, `"))
	}
	return strings.Join(parts, "; ")
}

// table renders a Markdown table with a row per unit, in units' order.
func table(header []string, row func(unit, unitDoc) []string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|")
	for range header {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, u := range units {
		cells := row(u, u.doc())
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

func markers(name string) (begin, end string) {
	return "<!-- units:" + name + " (generated from providers/gateway's units: go test ./providers/gateway -run TestImplementationsTable -update) -->\n",
		"<!-- end units:" + name + " -->"
}

// TestImplementationsTable: docs/gateway.md's tables of implementations are the units' own
// words (unit.doc, controllerNames, expectProxy), so the users' table and the code cannot
// disagree; -update rewrites them.
func TestImplementationsTable(t *testing.T) {
	b, err := os.ReadFile(gatewayDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	want := doc
	for name, render := range docTables {
		begin, end := markers(name)
		i := strings.Index(want, begin)
		j := strings.Index(want, end)
		if i < 0 || j < i {
			t.Fatalf("%s has no %q ... %q", gatewayDoc, begin, end)
		}
		want = want[:i+len(begin)] + render() + want[j:]
	}
	if *update {
		if err := os.WriteFile(gatewayDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("%s's generated tables are stale; run go test ./providers/gateway -run TestImplementationsTable -update (-units +doc):\n%s", gatewayDoc, diff)
	}
}

// TestEveryUnitIsDocumented: each unit says every cell of its row, cites at least one source
// with the version read, and has a remedy with an ID of its own.
func TestEveryUnitIsDocumented(t *testing.T) {
	ids := map[string]string{}
	for _, u := range units {
		d := u.doc()
		for name, cell := range map[string]string{"Service": d.Service, "Marks": d.Marks, "Expects": d.Expects, "ProxyProtocol": d.ProxyProtocol, "ClientAddress": d.ClientAddress, "Fix": d.Fix} {
			if strings.TrimSpace(cell) == "" {
				t.Errorf("%s: no %s", u.name(), name)
			}
		}
		if len(d.Sources) == 0 {
			t.Errorf("%s: no source", u.name())
		}
		for _, s := range d.Sources {
			if s.Repo == "" || s.Version == "" || len(s.Files) == 0 {
				t.Errorf("%s: source %+v lacks its repository, version or files", u.name(), s)
			}
		}
		r := u.expectProxy()
		if r.ID == "" || !strings.HasPrefix(r.ID, string(u.id())+"/") || r.Field == "" || r.Value == "" || r.Object == "" {
			t.Errorf("%s: remedy %+v is not data with an ID under %s/", u.name(), r, u.id())
		}
		if prev, dup := ids[r.ID]; dup {
			t.Errorf("remedy ID %s is %s's and %s's", r.ID, prev, u.name())
		}
		ids[r.ID] = u.name()
	}
}
