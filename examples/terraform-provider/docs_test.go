package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// terraformBlocks returns the ```terraform blocks of a Markdown file, in order.
func terraformBlocks(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```terraform\n(.*?)```").FindAllStringSubmatch(string(data), -1) {
		blocks = append(blocks, m[1])
	}
	if len(blocks) == 0 {
		t.Fatalf("%s: no terraform blocks", path)
	}
	return blocks
}

// TestTofuDocsAsWritten: the HCL of the provider's docs (the index's provider configuration
// with the resource page's example, as a user puts them in one configuration) and of
// loopguard's docs/terraform.md, exactly as written, pass the real OpenTofu's validate with the
// provider installed the way docs/index.md's "Trying it locally" says (dev_overrides, no
// init). A configuration without required_providers would ask for hashicorp/loopguard and fail
// here.
//
// It validates and does not plan: the examples name the real cloud endpoint and ~/.kube/config,
// which the other tests replace with the in-process servers.
func TestTofuDocsAsWritten(t *testing.T) {
	pages := map[string][]string{
		"provider docs":     {"docs/index.md", "docs/resources/loopback_protection.md"},
		"docs/terraform.md": {"../../docs/terraform.md"},
	}
	for name, files := range pages {
		t.Run(name, func(t *testing.T) {
			w := newWorkdir(t, "unused")
			var hcl []string
			for _, f := range files {
				hcl = append(hcl, terraformBlocks(t, f)...)
			}
			w.write(strings.Join(hcl, "\n"))
			// docs/index.md's CLI configuration, as written (its $HOME/bin is the test's).
			bin := filepath.Join(w.dir, "plugins")
			rc := filepath.Join(w.dir, "docs.tfrc")
			cli := "provider_installation {\n  dev_overrides { \"loopguard/loopguard\" = \"" + bin + "\" }\n  direct {}\n}\n"
			if err := os.WriteFile(rc, []byte(cli), 0o644); err != nil {
				t.Fatal(err)
			}
			w.env = append(w.env, "TF_CLI_CONFIG_FILE="+rc)
			out := w.ok("validate")
			if !strings.Contains(out, "The configuration is valid") {
				t.Errorf("tofu validate:\n%s", out)
			}
		})
	}
}
