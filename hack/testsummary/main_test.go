package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:9: needs KUBEBUILDER_ASSETS\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:3: needs KUBEBUILDER_ASSETS\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestB"}`,
		`{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:3: got 1, want 2\n"}`,
		`{"Action":"output","Package":"p","Test":"TestC","Output":"--- FAIL: TestC (0.00s)\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestC"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\n"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}`,
		`{"Action":"fail","Package":"p"}`,
		`{"Action":"output","Package":"q","Test":"TestR","Output":"reliability: 1000 reconciles, 9 faults, 1 restarts, 9 converged, 0 foreign fields lost, 0 extra writes (seed 7)\n"}`,
		`{"Action":"output","Package":"q","Test":"TestV","Output":"verify (kube-proxy v1.37.2 iptables): 10 scenarios, 10 agree, 0 disagree\n"}`,
		`{"Action":"pass","Package":"q","Test":"TestR"}`,
		`{"Action":"output","Package":"q","Output":"ok  \tq\t0.01s\n"}`,
		`{"Action":"pass","Package":"q"}`,
		`{"Action":"output","Package":"r","Output":"ok  \tr\t(cached)\n"}`,
		`{"Action":"pass","Package":"r"}`,
	}, "\n")
	var out bytes.Buffer
	if code := summarize(strings.NewReader(in), &out); code != 1 {
		t.Errorf("exit %d, want 1 (TestC failed)", code)
	}
	got := out.String()
	for _, want := range []string{"c_test.go:3: got 1, want 2", "FAIL\tp\t0.01s", "ok  \tq\t0.01s", "reliability: 1000 reconciles,", "verify (kube-proxy v1.37.2 iptables): 10 scenarios, 10 agree", "skipped: 2 tests: 2 × needs KUBEBUILDER_ASSETS\n", "cached: 1 of 3 packages"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "=== RUN") {
		t.Errorf("chatter printed:\n%s", got)
	}
	out.Reset()
	if code := summarize(strings.NewReader(`{"Action":"pass","Package":"q"}`), &out); code != 0 || !strings.HasPrefix(out.String(), "skipped: 0 tests\ncached: 0 of 0 packages") {
		t.Errorf("exit %d, output %q", code, out.String())
	}
}
