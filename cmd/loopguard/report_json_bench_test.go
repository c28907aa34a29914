package main

import (
	"io"
	"testing"
)

// BenchmarkReportJSON writes the JSON report of 10,000 generated Services (about 61 MB), by
// the report writer and by encoding/json (v1), the reference whose bytes it must match.
func BenchmarkReportJSON(b *testing.B) {
	dir := b.TempDir()
	writeCluster(b, dir, 10000, 100)
	rep, err := assess(&assessOptions{files: []string{dir}, output: "json", set: func(string) bool { return false }})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name  string
		write func(io.Writer, *Report) error
	}{
		{"writer", writeReportJSON},
		{"encoding-json", func(w io.Writer, r *Report) error { return renderJSON(w, r) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				var out countingWriter
				if err := bc.write(&out, rep); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(out.n)
			}
			// CPU time per run, less sensitive than wall time to other work on the machine.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}
