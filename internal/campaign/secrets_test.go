package campaign_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/loopguard/loopguard/core"
)

// transcript is everything the campaign's host sees: every log line of the reconcilers, the
// drivers, the CLB reader and the cluster writer at trace level, every error and every outcome
// (plans, what was written, what is left to the user or the status), as text. The secret scan
// reads it; with faults, retries and refusals on every path, it covers the messages a
// production host would log or show.
type transcript struct {
	mu    sync.Mutex
	b     strings.Builder
	lines int
}

func (t *transcript) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines += strings.Count(string(p), "\n")
	return t.b.Write(p)
}

func (t *transcript) logger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "campaign", Level: hclog.Trace, Output: t, JSONFormat: true})
}

// record adds one reconcile's outcome and error, as a host would log or report them.
func (t *transcript) record(out *core.Outcome, err error) {
	if err != nil {
		fmt.Fprintf(t, "error: %v\n", err)
		if b := core.BlockerOf(err); b != nil {
			fmt.Fprintf(t, "blocker: %s\n", b)
		}
	}
	if out == nil {
		return
	}
	js, jerr := json.Marshal(out)
	if jerr != nil {
		fmt.Fprintf(t, "outcome (not JSON: %v): %+v\n", jerr, out)
		return
	}
	fmt.Fprintf(t, "outcome: %s\n", js)
	if out.Plan != nil && out.Plan.Blocked != nil {
		fmt.Fprintf(t, "blocked: %s\n", out.Plan.Blocked)
	}
}

// scan fails the test for every secret found in the transcript.
func (t *transcript) scan(tb testing.TB, secrets ...string) {
	tb.Helper()
	t.mu.Lock()
	defer t.mu.Unlock()
	text := t.b.String()
	if t.lines == 0 || len(text) == 0 {
		tb.Fatal("secret scan: the campaign produced no log lines or outcomes to scan")
	}
	found := 0
	for _, s := range secrets {
		if i := strings.Index(text, s); i >= 0 {
			found++
			from := max(0, i-200)
			tb.Errorf("secret scan: a secret (%d bytes) appears in the campaign's logs or outcomes, after: …%s", len(s), text[from:i])
		}
	}
	fmt.Printf("secret scan: %d log and outcome lines, %d bytes, %d secrets looked for, %d found\n", t.lines, len(text), len(secrets), found)
}
