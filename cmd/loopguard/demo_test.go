package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/cmd/loopguard/internal/demo"
)

// loopguard demo prints the demo's report (testdata/golden/demo.stdout, lines of at most 100
// columns; package demo tests what it says) and exits 0 when every exposure it could fix is safe.
func TestDemo(t *testing.T) {
	t.Chdir(repoRoot)
	stdout, stderr, code := runCLI(t, "", "demo")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	golden(t, "demo.stdout", stdout)
}

// The demo embeds the library as a host does, not the CLI: its verdicts on the examples must be
// the ones `loopguard assess` reaches from the same files.
func TestDemoAgreesWithAssess(t *testing.T) {
	t.Chdir(repoRoot)
	res, err := demo.Run(context.Background(), io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for example, dir := range map[string]string{"tke": "examples/manifests", "vke": "examples/volcengine"} {
		stdout, stderr, code := runCLI(t, "", "assess", "-f", dir, "-o", "json")
		if code != exitOK {
			t.Fatalf("assess -f %s: exit %d\n%s", dir, code, stderr)
		}
		var rep Report
		if err := json.NewDecoder(bytes.NewReader([]byte(stdout))).Decode(&rep); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		for _, r := range rep.Results {
			want[r.Object.Kind+" "+r.Object.Namespace+"/"+r.Object.Name] = r.Risk
		}
		got := map[string]string{}
		for _, v := range res.Verdicts {
			if v.Example == example {
				got[v.Object.String()] = string(v.Before)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: the demo's verdicts before it changes anything differ from assess's (-assess +demo):\n%s", dir, diff)
		}
	}
}
