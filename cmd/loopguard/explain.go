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
					fmt.Fprintf(stdout, "%s\n  meaning: %s\n  source:  %s\n  from:    %s (%s)\n  listed:  docs/reasons.md\n", r.Code, r.Summary, r.Source, g.Title, g.Package)
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
