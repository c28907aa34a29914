package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
}

type key struct{ pkg, test string }

func main() {
	os.Exit(summarize(os.Stdin, os.Stdout))
}

// skipReasonRE takes "    file_test.go:12: reason" apart: the reason is what t.Skip said.
var skipReasonRE = regexp.MustCompile(`^\s+[\w.-]+\.go:\d+: (.*)$`)

// isSummaryLine: the dataplane tests' summaries, "dataplane: N scenarios, ..." and
// "dataplane (kube-proxy v1.37.2 iptables): N scenarios, ...", and the reliability
// campaign's "reliability: N reconciles, ...", "secret scan: ..." and "decorator: ...", and the
// verify probe's "verify (kube-proxy v1.37.2 iptables): N scenarios, ...", printed whatever the
// test's outcome.
func isSummaryLine(s string) bool {
	return strings.HasPrefix(s, "dataplane: ") || strings.HasPrefix(s, "dataplane (") || strings.HasPrefix(s, "reliability: ") || strings.HasPrefix(s, "secret scan: ") ||
		strings.HasPrefix(s, "decorator: ") || strings.HasPrefix(s, "verify: ") || strings.HasPrefix(s, "verify (")
}

func summarize(in io.Reader, out io.Writer) int {
	failed := false
	outputs := map[key][]string{}
	reasons := map[string]int{}
	skipped, packages, cached := 0, 0, 0
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1024*1024), 64*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Not an event (a build error printed before -json took over): pass it on.
			fmt.Fprintln(out, string(line))
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "output", "build-output":
			if isSummaryLine(e.Output) {
				fmt.Fprint(out, e.Output)
			}
			if e.Test == "" && e.Action == "output" && (strings.HasPrefix(e.Output, "ok  ") || strings.HasPrefix(e.Output, "FAIL\t")) {
				packages++
				// "ok  \tpkg\t(cached)": go test replayed a pass of the same test binary with the
				// same inputs (its cache) instead of running it.
				if strings.HasSuffix(strings.TrimSpace(e.Output), "(cached)") {
					cached++
				}
			}
			if e.Test == "" || e.Action == "build-output" {
				// The package's own lines: "ok  pkg 1.2s", "FAIL", "--- FAIL", panics.
				if !strings.HasPrefix(e.Output, "=== ") && e.Output != "PASS\n" && !isSummaryLine(e.Output) {
					fmt.Fprint(out, e.Output)
				}
				continue
			}
			outputs[k] = append(outputs[k], e.Output)
		case "skip":
			if e.Test == "" {
				continue // a package without tests
			}
			skipped++
			reasons[skipReason(outputs[k])]++
			delete(outputs, k)
		case "fail", "build-fail":
			failed = true
			if e.Test != "" {
				for _, o := range outputs[k] {
					fmt.Fprint(out, o)
				}
			}
			delete(outputs, k)
		case "pass":
			delete(outputs, k)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(out, "testsummary: reading go test -json: %v\n", err)
		failed = true
	}
	fmt.Fprintln(out, skipLine(skipped, reasons))
	fmt.Fprintf(out, "cached: %d of %d packages (go test's cache: the same code and inputs passed before; their skips are counted above)\n", cached, packages)
	if failed {
		return 1
	}
	return 0
}

// skipReason is the last message a test logged before it skipped, which is what t.Skip says.
func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if m := skipReasonRE.FindStringSubmatch(strings.TrimRight(lines[i], "\n")); m != nil {
			return m[1]
		}
	}
	return "no reason given"
}

// skipLine is "skipped: 0 tests", or "skipped: 7 tests: 4 × reason; 3 × reason".
func skipLine(n int, reasons map[string]int) string {
	if n == 0 {
		return "skipped: 0 tests"
	}
	type r struct {
		why string
		n   int
	}
	var rs []r
	for why, c := range reasons {
		rs = append(rs, r{why, c})
	}
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].n != rs[j].n {
			return rs[i].n > rs[j].n
		}
		return rs[i].why < rs[j].why
	})
	parts := make([]string, len(rs))
	for i, x := range rs {
		why := x.why
		if len(why) > 160 {
			why = why[:160] + "…"
		}
		parts[i] = fmt.Sprintf("%d × %s", x.n, why)
	}
	noun := "tests"
	if n == 1 {
		noun = "test"
	}
	return fmt.Sprintf("skipped: %d %s: %s", n, noun, strings.Join(parts, "; "))
}
