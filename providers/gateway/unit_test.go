package gateway

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// pkgFiles parses the package's own (non-test) Go files.
func pkgFiles(t *testing.T) (map[string]*ast.File, *token.FileSet) {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	return files, fset
}

// unitFiles finds the file that declares each type listed in units, by the registry's own
// declaration, and the registry's file and declaration.
func unitFiles(t *testing.T, files map[string]*ast.File) (byType map[string]string, registry *ast.GenDecl, registryFile string) {
	t.Helper()
	types := map[string]string{}
	for name, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range g.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					types[s.Name.Name] = name
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.Name == "units" {
							registry, registryFile = g, name
						}
					}
				}
			}
		}
	}
	if registry == nil {
		t.Fatal("no var units")
	}
	byType = map[string]string{}
	ast.Inspect(registry, func(n ast.Node) bool {
		if cl, ok := n.(*ast.CompositeLit); ok {
			if id, ok := cl.Type.(*ast.Ident); ok && id.Name != "unit" {
				file, ok := types[id.Name]
				if !ok {
					t.Fatalf("units lists %s, declared nowhere", id.Name)
				}
				byType[id.Name] = file
			}
		}
		return true
	})
	if len(byType) != len(units) {
		t.Fatalf("found %d unit types in units, want %d", len(byType), len(units))
	}
	return byType, registry, registryFile
}

// topLevel lists the names a file declares at package level (not methods).
func topLevel(f *ast.File) map[string]bool {
	out := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				out[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					out[s.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range s.Names {
						out[n.Name] = true
					}
				}
			}
		}
	}
	return out
}

// references lists the identifiers of f that name one of names: not a selector's field or
// method, a struct field's key or a declaration's own name; skip is left out.
func references(f *ast.File, names map[string]bool, skip ast.Node) []*ast.Ident {
	var out []*ast.Ident
	ignore := map[*ast.Ident]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil || n == skip {
			return false
		}
		switch x := n.(type) {
		case *ast.SelectorExpr:
			ignore[x.Sel] = true
		case *ast.KeyValueExpr:
			if id, ok := x.Key.(*ast.Ident); ok {
				ignore[id] = true
			}
		case *ast.Field:
			for _, id := range x.Names {
				ignore[id] = true
			}
		case *ast.FuncDecl:
			ignore[x.Name] = true
		case *ast.Ident:
			if names[x.Name] && !ignore[x] && x.Obj == nil {
				out = append(out, x)
			}
		}
		return true
	})
	return out
}

// marks are the strings that identify a unit's implementation: its controllerNames, its name,
// its API groups, and every string constant its file declares (labels, kinds, keys, flags).
func marks(t *testing.T, f *ast.File, u unit) []string {
	t.Helper()
	out := append([]string{u.name()}, u.controllerNames()...)
	for _, r := range u.resources() {
		out = append(out, r.Group)
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			for _, v := range s.(*ast.ValueSpec).Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil {
						out = append(out, s)
					}
				}
			}
		}
	}
	var kept []string
	for _, m := range out {
		// Short or generic strings (a namespace like kube-system, a field name) are no mark.
		if len(m) >= 6 && m != Group && m != "kube-system" {
			kept = append(kept, m)
		}
	}
	return kept
}

// TestSharedCodeNamesNoImplementation: each Gateway API implementation is one unit, one file
// of this package listed once in units. No other file names a unit's declarations (outside the
// units line) or spells its marks (controllerName, API group, labels, kinds, keys, name) in a
// string; no unit names another's declarations. Adding an implementation is then one file, its
// tests, the units line and a docs row (TestImplementationsTable).
func TestSharedCodeNamesNoImplementation(t *testing.T) {
	files, fset := pkgFiles(t)
	byType, registry, registryFile := unitFiles(t, files)
	owner := map[string]string{} // declaration name → unit file
	unitOfFile := map[string]unit{}
	for _, u := range units {
		unitOfFile[byType[typeName(u)]] = u
	}
	for file := range unitOfFile {
		for name := range topLevel(files[file]) {
			if prev, dup := owner[name]; dup && prev != file {
				t.Fatalf("%s declared in %s and %s", name, prev, file)
			}
			owner[name] = file
		}
	}
	var shared []string
	for name := range files {
		if unitOfFile[name] == nil {
			shared = append(shared, name)
		}
	}
	sort.Strings(shared)
	if len(shared) == 0 || len(unitOfFile) != len(units) {
		t.Fatalf("shared files %v, unit files %d", shared, len(unitOfFile))
	}
	all := map[string]bool{}
	for name := range owner {
		all[name] = true
	}
	for _, file := range shared {
		var skip ast.Node
		if file == registryFile {
			skip = registry
		}
		for _, id := range references(files[file], all, skip) {
			t.Errorf("%s: shared code names %s, declared in unit %s", fset.Position(id.Pos()), id.Name, owner[id.Name])
		}
	}
	for file, u := range unitOfFile {
		mine := topLevel(files[file])
		others := map[string]bool{}
		for name, f := range owner {
			if f != file && !mine[name] {
				others[name] = true
			}
		}
		for _, id := range references(files[file], others, nil) {
			t.Errorf("%s: unit %s names %s, declared in unit %s", fset.Position(id.Pos()), u.name(), id.Name, owner[id.Name])
		}
	}
	for file, u := range unitOfFile {
		ms := marks(t, files[file], u)
		if len(ms) < 2 {
			t.Errorf("unit %s has no marks", u.name())
		}
		for _, sf := range shared {
			ast.Inspect(files[sf], func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					return true
				}
				for _, m := range ms {
					if strings.Contains(s, m) {
						t.Errorf("%s: shared code spells %q, a mark of unit %s", fset.Position(lit.Pos()), m, u.name())
					}
				}
				return true
			})
		}
	}
}

// typeName is the name of a unit's type, as units spells it.
func typeName(u unit) string { return strings.TrimPrefix(fmt.Sprintf("%T", u), "gateway.") }

// TestTheTestSeesAViolation: the enforcement above finds a shared file that names a unit's
// declaration or spells its mark, so that it cannot pass by seeing nothing.
func TestTheTestSeesAViolation(t *testing.T) {
	files, _ := pkgFiles(t)
	byType, _, _ := unitFiles(t, files)
	file := byType[typeName(units[0])]
	names := topLevel(files[file])
	var pick string
	for n := range names {
		pick = n
		break
	}
	src := "package gateway\n\nvar _ = " + pick + "\n"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "shared.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "shared.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := references(f, names, nil); len(got) != 1 {
		t.Fatalf("references found %d uses of %s, want 1", len(got), pick)
	}
	u := units[0]
	ms := marks(t, files[file], u)
	found := false
	for _, m := range ms {
		found = found || m == u.controllerNames()[0]
	}
	if !found {
		t.Fatalf("marks of %s %v lack its controllerName", u.name(), ms)
	}
}
