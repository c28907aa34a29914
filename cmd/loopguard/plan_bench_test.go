package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
)

// BenchmarkPlan10kServices runs `loopguard plan -f DIR -o json` on the generated cluster of
// BenchmarkAssess10kServices: assess's evaluation, then one TKE driver plan per Service
// (every one at risk, so every plan has a change).
func BenchmarkPlan10kServices(b *testing.B) {
	dir := b.TempDir()
	writeCluster(b, dir, 10000, 100)
	b.ReportAllocs()
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	var out countingWriter
	cpu0 := cpuTime()
	for b.Loop() {
		out = countingWriter{}
		var errOut bytes.Buffer
		if code := run([]string{"plan", "-f", dir, "-o", "json"}, strings.NewReader(""), &out, &errOut); code != exitOK && code != exitBlocked {
			b.Fatalf("exit %d: %s", code, errOut.String())
		}
	}
	b.ReportMetric(float64(out.n)/1e6, "MB-report")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e9, "cpu-s/op")
}
