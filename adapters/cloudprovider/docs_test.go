package cloudprovider_test

import (
	"os"
	"strings"
	"testing"
)

// TestDocsSnippetIsTheExample: the Go block of docs/ccm.md "The lines a fork adds" is the
// function ExampleWrap runs, line for line, and every import it shows is one the example
// compiles with. So the snippet a fork copies compiles and works as shown.
func TestDocsSnippetIsTheExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/ccm.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i := strings.Index(text, "## The lines a fork adds")
	if i < 0 {
		t.Fatal(`docs/ccm.md has no section "The lines a fork adds"`)
	}
	text = text[i:]
	start := strings.Index(text, "```go\n")
	end := strings.Index(text[start+6:], "```")
	if start < 0 || end < 0 {
		t.Fatal("no Go block in the section")
	}
	block := strings.Split(strings.TrimRight(text[start+6:start+6+end], "\n"), "\n")

	closing := -1
	for i, l := range block {
		if l == ")" {
			closing = i
			break
		}
	}
	if closing < 0 || block[0] != "import (" {
		t.Fatalf("the block does not start with an import block:\n%s", strings.Join(block, "\n"))
	}
	source := string(src)
	for _, imp := range block[1:closing] {
		if imp = strings.TrimSpace(imp); imp != "" && !strings.Contains(source, "\t"+imp+"\n") {
			t.Errorf("the snippet imports %s, which example_test.go does not", imp)
		}
	}
	shown := strings.Join(block[closing+1:], "\n")
	b := strings.Index(source, "// --- begin docs/ccm.md\n")
	e := strings.Index(source, "\n// --- end docs/ccm.md")
	if b < 0 || e < 0 {
		t.Fatal("example_test.go lost its markers")
	}
	marked := source[b+len("// --- begin docs/ccm.md\n") : e]
	if strings.TrimSpace(shown) != strings.TrimSpace(marked) {
		t.Errorf("docs/ccm.md shows:\n%s\n\nexample_test.go has:\n%s", shown, marked)
	}
}
