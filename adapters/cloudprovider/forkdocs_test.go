package cloudprovider_test

import (
	"os"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/core"
)

// TestForkDocsGetThisRelease: the go get line of docs/ccm.md's fork section names this
// release (core.Version), so a fork copying it gets the code the page describes. hack/forks.sh
// runs the same block on the fork fixtures.
func TestForkDocsGetThisRelease(t *testing.T) {
	doc, err := os.ReadFile("../../docs/ccm.md")
	if err != nil {
		t.Fatal(err)
	}
	const section = "## Adding loopguard to a fork's module"
	text := string(doc)
	i := strings.Index(text, section)
	if i < 0 {
		t.Fatalf("docs/ccm.md has no section %q", section)
	}
	text = text[i:]
	start := strings.Index(text, "```sh\n")
	if start < 0 {
		t.Fatalf("no sh block under %q", section)
	}
	block, _, _ := strings.Cut(text[start+len("```sh\n"):], "```")
	const get = "go get github.com/loopguard/loopguard@"
	want := get + "v" + core.Version
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(line, get) {
			if got, _, _ := strings.Cut(line, " #"); strings.TrimSpace(got) != want {
				t.Errorf("docs/ccm.md says %q, want %q (core.Version)", got, want)
			}
			return
		}
	}
	t.Errorf("no %q line in the sh block under %q:\n%s", get, section, block)
}
