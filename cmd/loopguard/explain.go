package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loopguard/loopguard/internal/near"
)

// newExplainCommand prints what a reason code means and where it comes from, from the rule
// tables docs/reasons.md is generated from, so the two cannot disagree.
func newExplainCommand(stdout io.Writer, code *int) *cobra.Command {
	return &cobra.Command{
		Use:     "explain CODE",
		Short:   "Print what a reason code means and where the rule comes from",
		Example: "  loopguard explain tke-offer-prevent-loopback",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			want := args[0]
			var all []string
			for _, g := range ruleGroups() {
				for _, r := range g.Rules {
					all = append(all, string(r.Code))
					if string(r.Code) != want {
						continue
					}
					fmt.Fprintf(stdout, "%s\n  meaning: %s\n  source:  %s\n  to do:   %s\n  from:    %s (%s)\n  listed:  docs/reasons.md\n",
						r.Code, r.Summary, r.Source, whatToDo(string(r.Code)), g.Title, g.Package)
					if d, ok := explainDiagram(want); ok {
						fmt.Fprintf(stdout, "  picture: %s\n  see it:  loopguard verify (docs/verify.md)\n", d)
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
