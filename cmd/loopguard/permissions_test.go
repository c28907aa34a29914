package main

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/volcengine"
)

// TestPermissionsDocListsTheActions: docs/permissions.md names every CAM and IAM action the
// drivers call, as the providers list them.
func TestPermissionsDocListsTheActions(t *testing.T) {
	doc, err := os.ReadFile("../../docs/permissions.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range append(tencent.CAMActions(tencent.ModeDirect), volcengine.CLBReaderIAMActions()...) {
		if !strings.Contains(string(doc), "`"+a+"`") {
			t.Errorf("docs/permissions.md does not name %s", a)
		}
	}
	for _, f := range []string{"deploy/base/rbac.yaml", "deploy/components/enforce/rbac.yaml", "TestRBACReportOnly", "TestRBACEnforce"} {
		if !strings.Contains(string(doc), f) {
			t.Errorf("docs/permissions.md does not point at %s", f)
		}
	}
}

// TestNoFlagTakesASecret: no command has a flag for a secret, token, password or key, whose
// value `ps` would show to every user of the machine; credentials come from files and the
// environment.
func TestNoFlagTakesASecret(t *testing.T) {
	root, _ := newRootCommand(strings.NewReader(""), io.Discard, io.Discard)
	secretish := regexp.MustCompile(`(?i)secret|token|passw|credential|(^|-)key($|-)|access-key|auth`)
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			n++
			if secretish.MatchString(f.Name) {
				t.Errorf("%s --%s looks like it takes a secret", c.CommandPath(), f.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if n < 20 {
		t.Errorf("only %d flags seen", n)
	}
}
