package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeCluster writes a generated TKE cluster: nodes, LoadBalancer Services on private CLBs
// (half with externalTrafficPolicy Local), one EndpointSlice per Service, and a profile, as
// multi-document YAML files of about a thousand Services each, the way a dump of a large
// cluster looks.
func writeCluster(tb testing.TB, dir string, services, nodes int) {
	tb.Helper()
	var b bytes.Buffer
	b.WriteString("apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nprovider: tencent\nproxyMode: ipvs\nkubeProxyVersion: v1.20.6-tke.12\ningressControllerVersion: v2.9.0\nallowlists: [clb-l4-snat]\n")
	write := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			tb.Fatal(err)
		}
		b.Reset()
	}
	write("profile.yaml")
	for i := 0; i < nodes; i++ {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: 10.0.%d.%d\n  labels:\n    kubernetes.io/hostname: 10.0.%d.%d\n    node.kubernetes.io/instance-type: SA5.LARGE8\n",
			i/250, i%250, i/250, i%250)
	}
	write("nodes.yaml")
	for i := 0; i < services; i++ {
		policy := "Cluster"
		if i%2 == 1 {
			policy = "Local"
		}
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Service
metadata:
  name: svc-%[1]d
  namespace: team-%[2]d
  labels:
    app.kubernetes.io/name: svc-%[1]d
  annotations:
    service.kubernetes.io/qcloud-loadbalancer-internal-subnetid: subnet-3f9a2c1d
spec:
  type: LoadBalancer
  externalTrafficPolicy: %[3]s
  selector:
    app: svc-%[1]d
  ports:
  - name: http
    port: 80
    targetPort: 8080
    protocol: TCP
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: svc-%[1]d-x7k2p
  namespace: team-%[2]d
  labels:
    kubernetes.io/service-name: svc-%[1]d
addressType: IPv4
ports:
- name: http
  port: 8080
  protocol: TCP
endpoints:
- addresses: ["172.16.%[4]d.%[5]d"]
  nodeName: 10.0.0.%[6]d
  conditions: {ready: true}
- addresses: ["172.17.%[4]d.%[5]d"]
  nodeName: 10.0.0.%[7]d
  conditions: {ready: true}
`, i, i%40, policy, (i/250)%250, i%250, i%nodes, (i+7)%nodes)
		if i%1000 == 999 || i == services-1 {
			write(fmt.Sprintf("services-%05d.yaml", i/1000))
		}
	}
}

// BenchmarkAssess10kServices runs the CLI end to end, as `loopguard assess -f DIR -o json`
// does: read 20 files, decode 20,000 documents, build the cluster, translate, assess and
// decide 10,000 Services, render the JSON report. Issue 2 asks for under 1 s.
func BenchmarkAssess10kServices(b *testing.B) {
	dir := b.TempDir()
	writeCluster(b, dir, 10000, 100)
	var size int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			size += info.Size()
		}
	}
	b.SetBytes(size)
	b.ReportAllocs()
	// The binary runs with this setting (main.go); the benchmark measures the same program.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	var out countingWriter
	cpu0 := cpuTime()
	for b.Loop() {
		out = countingWriter{}
		var errOut bytes.Buffer
		if code := run([]string{"assess", "-f", dir, "-o", "json"}, strings.NewReader(""), &out, &errOut); code != exitOK {
			b.Fatalf("exit %d: %s", code, errOut.String())
		}
	}
	b.ReportMetric(float64(out.n)/1e6, "MB-report")
	// CPU time per run, less sensitive than wall time to other work on the machine.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e9, "cpu-s/op")
}

// cpuTime is the process's user plus system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countingWriter)(nil)

// The generated cluster must come out as designed: every Service assessed at risk, with
// probabilities, and nothing refused.
func TestGeneratedClusterIsAssessed(t *testing.T) {
	dir := t.TempDir()
	writeCluster(t, dir, 50, 10)
	o := &assessOptions{files: []string{dir}, output: "json", set: func(string) bool { return false }}
	rep, err := assess(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) > 0 || rep.Summary.Assessed != 50 || rep.Summary.AtRisk != 50 {
		t.Fatalf("summary %+v, errors %v", rep.Summary, rep.Errors)
	}
	for _, r := range rep.Results {
		if r.LoopProbability == nil {
			t.Fatalf("%v: no probability", r.Object)
		}
	}
}

// A report large enough to be evaluated on several goroutines must come out as the sequential
// path writes it, and as encoding/json would (run under -race by make race).
func TestLargeReportIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	writeCluster(t, dir, 1200, 10)
	one := &assessOptions{files: []string{dir}, output: "json", workers: 1, set: func(string) bool { return false }}
	many := &assessOptions{files: []string{dir}, output: "json", workers: 8, set: func(string) bool { return false }}
	r1, err := assess(one)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := assess(many)
	if err != nil {
		t.Fatal(err)
	}
	var ref, fast1, fast2 bytes.Buffer
	if err := renderJSON(&ref, r1); err != nil {
		t.Fatal(err)
	}
	if err := writeReportJSON(&fast1, r1); err != nil {
		t.Fatal(err)
	}
	if err := writeReportJSON(&fast2, r2); err != nil {
		t.Fatal(err)
	}
	if ref.String() != fast1.String() {
		t.Errorf("the JSON report writer differs from encoding/json")
	}
	if fast1.String() != fast2.String() {
		t.Errorf("8 workers and 1 worker give different reports")
	}
}
