package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loopguard/loopguard/adapters/verify"
	"github.com/loopguard/loopguard/internal/near"
)

// ExplanationKind is explain's -o json|yaml document.
const ExplanationKind = "Explanation"

// Explanation is what explain prints about one reason code. Path and Mermaid are the path a
// connection takes under the rule, drawn for a typical exposure (a client Pod and a backend
// on node-a), for the codes that are about a path.
type Explanation struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Code       string       `json:"code"`
	Meaning    string       `json:"meaning"`
	Source     string       `json:"source"`
	ToDo       string       `json:"toDo"`
	From       string       `json:"from"`
	Package    string       `json:"package"`
	Listed     string       `json:"listed"`
	Path       *verify.Path `json:"path,omitempty"`
	Mermaid    string       `json:"mermaid,omitempty"`
}

// newExplainCommand prints what a reason code means and where it comes from, from the rule
// tables docs/reasons.md is generated from, so the two cannot disagree.
func newExplainCommand(stdout io.Writer, code *int) *cobra.Command {
	output := "text"
	cmd := &cobra.Command{
		Use:     "explain CODE [-o text|json|yaml]",
		Short:   "Print what a reason code means and where the rule comes from",
		Example: "  loopguard explain tke-offer-prevent-loopback\n  loopguard explain same-node-loop -o yaml   # with the path as a Mermaid flowchart",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if output != "text" && output != "json" && output != "yaml" {
				*code = exitInput
				return usagef("-o %q: want text, json or yaml", output)
			}
			want := args[0]
			var all []string
			for _, g := range ruleGroups() {
				for _, r := range g.Rules {
					all = append(all, string(r.Code))
					if string(r.Code) != want {
						continue
					}
					ex := Explanation{APIVersion: ReportAPIVersion, Kind: ExplanationKind, Code: string(r.Code), Meaning: r.Summary,
						Source: r.Source, ToDo: whatToDo(string(r.Code)), From: g.Title, Package: g.Package, Listed: "docs/reasons.md"}
					if p, ok := explainPath(want); ok {
						ex.Path, ex.Mermaid = &p, p.Mermaid()
					}
					switch output {
					case "json":
						return renderJSON(stdout, &ex)
					case "yaml":
						return renderYAML(stdout, &ex)
					}
					fmt.Fprintf(stdout, "%s\n  meaning: %s\n  source:  %s\n  to do:   %s\n  from:    %s (%s)\n  listed:  %s\n",
						ex.Code, ex.Meaning, ex.Source, ex.ToDo, ex.From, ex.Package, ex.Listed)
					if ex.Path != nil {
						fmt.Fprintf(stdout, "  picture: %s\n  see it:  loopguard verify (docs/verify.md)\n", strings.ReplaceAll(ex.Path.Text(), "\n", "\n           "))
					}
					return nil
				}
			}
			*code = exitInput
			msg := fmt.Sprintf("explain %q: no such reason code", want)
			if w := near.Words(want, all, 5); len(w) > 0 {
				msg += "; the nearest: " + strings.Join(w, ", ")
			}
			return usagef("%s (every code: docs/reasons.md)", msg)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json or yaml (json and yaml add the path as a Mermaid flowchart)")
	return cmd
}

// commandName is how the user invoked loopguard: "kubectl loopguard" when the binary is
// installed as the kubectl plugin kubectl-loopguard, which kubectl runs for "kubectl loopguard".
func commandName() string {
	if strings.HasPrefix(filepath.Base(os.Args[0]), "kubectl-") {
		return "kubectl " + strings.TrimPrefix(filepath.Base(os.Args[0]), "kubectl-")
	}
	return "loopguard"
}

// whatToDo says, by the kind of rule a code names, what a user does about it. The rule tables
// hold what a rule means and where it comes from; what to do follows from what kind of rule
// it is, which its code says (codes are stable: docs/reasons.md).
func whatToDo(code string) string {
	has := func(parts ...string) bool {
		for _, p := range parts {
			if strings.Contains(code, p) {
				return true
			}
		}
		return false
	}
	switch {
	case has("offer-"):
		return "a remedy loopguard can carry out: 'loopguard plan' shows the concrete change for your object, 'loopguard apply' makes it (or lists what is left for you)"
	case strings.HasPrefix(code, "decide-"):
		return "how the decision was made: to change it, change the policy (--prefer, --allow-tickets, --allow-disruptive, or the ClusterProfile's policy)"
	case has("-unknown", "undeclared", "unverified", "assumed", "pending", "without-"):
		return "a fact is missing or not verified: declare it (a ClusterProfile field, a flag, or a loopguard.io annotation: docs/annotations.md) and assess again"
	case has("too-old", "prereq", "needs-", "immutable", "refused", "conflict", "taken"):
		return "a precondition of a remedy: upgrade the component, obtain the allowlist, or allow the change the message names, or let loopguard choose another remedy"
	}
	return "nothing by itself: it explains a verdict; if it is wrong for your cluster, the facts behind it can be declared (docs/annotations.md)"
}
