package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/loopguard/loopguard/core"
)

// coreKinds are core's error kinds by their Go names. A kind core declares that is missing here
// fails TestEveryCoreErrorKindHasItsNameInTheOutput until it is added, and with it the name the
// CLI prints is checked.
var coreKinds = map[string]error{
	"ErrInvalid":         core.ErrInvalid,
	"ErrNotAllowlisted":  core.ErrNotAllowlisted,
	"ErrUnsupported":     core.ErrUnsupported,
	"ErrImmutable":       core.ErrImmutable,
	"ErrPrecondition":    core.ErrPrecondition,
	"ErrConflict":        core.ErrConflict,
	"ErrUnauthenticated": core.ErrUnauthenticated,
	"ErrRetryLater":      core.ErrRetryLater,
	"ErrNotExposed":      core.ErrNotExposed,
}

// declaredKinds reads core's source for its error kinds: the package-level Err* variables. They
// are read from the source, not listed by hand, so that a kind added to core is seen here.
func declaredKinds(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "core", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.VAR {
				continue
			}
			for _, spec := range gen.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if strings.HasPrefix(n.Name, "Err") && n.IsExported() {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	sort.Strings(names)
	if len(names) < len(coreKinds)/2 {
		t.Fatalf("found only %v in core's source: the reader is broken", names)
	}
	return names
}

// Every error kind core declares reaches the CLI's plan and apply output under core's own name
// for it (core.BlockerOf), never as the generic "error": in the table and in -o json, for a
// failed plan and for a blocked one, with the details a user acts on.
func TestEveryCoreErrorKindHasItsNameInTheOutput(t *testing.T) {
	names := map[string]string{} // kind name -> Go name, to catch two kinds printed alike
	for _, goName := range declaredKinds(t) {
		kind, ok := coreKinds[goName]
		if !ok {
			t.Errorf("core declares %s: add it to coreKinds, and to core's errorKinds (blocker.go) with the name the CLI prints", goName)
			continue
		}
		t.Run(goName, func(t *testing.T) {
			obj := core.ObjectRef{Kind: "Service", Namespace: "shop", Name: "checkout"}
			errs := map[string]error{
				"kind error":    fmt.Errorf("driver: %w", &core.KindError{Kind: kind, Object: obj, Msg: "what went wrong"}),
				"sentinel only": fmt.Errorf("what went wrong: %w", kind),
			}
			for how, err := range errs {
				pe := planErrorOf(err)
				want := core.BlockerOf(err).Kind
				if pe.Kind != want || pe.Kind == "error" || pe.Kind == "" {
					t.Errorf("%s: the CLI names it %q, core %q", how, pe.Kind, want)
				}
				if prev, dup := names[pe.Kind]; dup && prev != goName {
					t.Errorf("%s and %s are both printed as %q", prev, goName, pe.Kind)
				}
				names[pe.Kind] = goName
				rep := &PlanReport{APIVersion: ReportAPIVersion, Kind: ApplyReportKind, Mode: "offline", Plans: []ObjectPlan{
					{Object: ObjectRef{Kind: "Service", Namespace: "shop", Name: "checkout"}, Status: StatusFailed, Error: pe,
						Changes: []PlanChange{}, Checks: []PlanCheck{}, Notes: []Reason{}},
					{Object: ObjectRef{Kind: "Service", Namespace: "shop", Name: "payments"}, Status: StatusBlocked, Blocked: pe,
						Changes: []PlanChange{}, Checks: []PlanCheck{}, Notes: []Reason{}},
				}, Skipped: []Skipped{}, Errors: []InputError{}}
				rep.finish()
				var table, js bytes.Buffer
				if err := renderPlan(&table, "table", rep); err != nil {
					t.Fatal(err)
				}
				if got := strings.Count(table.String(), "("+want+"): "); got != 2 {
					t.Errorf("%s: the table names the kind %q %d times, want 2 (failed and blocked):\n%s", how, want, got, table.String())
				}
				if err := renderPlan(&js, "json", rep); err != nil {
					t.Fatal(err)
				}
				checkPlanContract(t, js.String())
				var doc struct {
					Plans []struct {
						Blocked, Error *PlanError
					}
				}
				if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
					t.Fatal(err)
				}
				if len(doc.Plans) != 2 || doc.Plans[0].Error == nil || doc.Plans[0].Error.Kind != want ||
					doc.Plans[1].Blocked == nil || doc.Plans[1].Blocked.Kind != want {
					t.Errorf("%s: -o json does not carry the kind %q:\n%s", how, want, js.String())
				}
			}
		})
	}
}

// The details of a kind survive the conversion: what to ask support for, what to upgrade, when
// to retry.
func TestPlanErrorKeepsWhatAUserActsOn(t *testing.T) {
	obj := core.ObjectRef{Kind: "Service", Namespace: "shop", Name: "checkout"}
	for name, tc := range map[string]struct {
		err  error
		want PlanError
	}{
		"allowlist": {
			err:  &core.AllowlistError{Object: obj, Capability: "l4-snat", Ask: "CLB listener SNAT"},
			want: PlanError{Kind: "not-allowlisted", Capability: "l4-snat", Ask: "CLB listener SNAT"},
		},
		"precondition": {
			err:  fmt.Errorf("plan: %w", &core.PreconditionError{Object: obj, Component: "kube-proxy", Have: "v1.28.15", Need: ">= v1.29"}),
			want: PlanError{Kind: "precondition", Component: "kube-proxy", Have: "v1.28.15", Need: ">= v1.29"},
		},
		"retry": {
			err:  &core.RetryError{After: 1500 * time.Millisecond, Msg: "the CLB task is running"},
			want: PlanError{Kind: "retry-later", RetryAfterSeconds: 1.5},
		},
		"unauthenticated": {
			err:  &core.KindError{Kind: core.ErrUnauthenticated, Object: obj, Msg: "the cloud refused the credentials: check the key's clock"},
			want: PlanError{Kind: "unauthenticated"},
		},
		"no kind": {
			err:  fmt.Errorf("connection reset"),
			want: PlanError{Kind: "error"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := planErrorOf(tc.err)
			tc.want.Message = tc.err.Error()
			if *got != tc.want {
				t.Errorf("planErrorOf(%v) = %+v, want %+v", tc.err, *got, tc.want)
			}
		})
	}
	if planErrorOf(nil) != nil {
		t.Error("planErrorOf(nil) is not nil")
	}
}
