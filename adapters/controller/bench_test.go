package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// benchServices is how many LoadBalancer Services the benchmarks converge first.
// envtest's Service IP range (a /24) bounds it.
const benchServices = 150

// convergedHarness starts report-only mode on benchServices Services and waits until every one
// shows its verdict.
func convergedHarness(b *testing.B) *harness {
	b.Helper()
	h := start(b, false)
	for i := 0; i < 3; i++ {
		h.node(fmt.Sprintf("%s-%d", h.ns, i), nil)
	}
	for i := 0; i < benchServices; i++ {
		h.service(fmt.Sprintf("svc-%03d", i), nil)
	}
	h.eventually("every verdict", func() (bool, string) {
		n := 0
		for i := 0; i < benchServices; i++ {
			if h.evaluations(fmt.Sprintf("svc-%03d", i)) > 0 {
				n++
			}
		}
		return n == benchServices && counter(h.c.metrics.writes.WithLabelValues("verdict")) >= benchServices, fmt.Sprint(n)
	})
	return h
}

// BenchmarkController converges benchServices Services once, then measures on them.
func BenchmarkController(b *testing.B) {
	h := convergedHarness(b)
	b.Run("noop-resync", func(b *testing.B) { noopResync(b, h) })
	b.Run("node-change-mapping", func(b *testing.B) { nodeChangeMapping(b, h) })
}

// noopResync: reconciles of Services whose verdict already shows (the periodic resync's case)
// read only the cache and write nothing.
func noopResync(b *testing.B, h *harness) {
	before := counter(h.c.metrics.writes.WithLabelValues("verdict"))
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		id := objectID{Kind: "Service", NamespacedName: types.NamespacedName{Namespace: h.ns, Name: fmt.Sprintf("svc-%03d", i%benchServices)}}
		if _, err := h.c.reconcile(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "reconciles/s")
	if got := counter(h.c.metrics.writes.WithLabelValues("verdict")); got != before {
		b.Fatalf("no-op resyncs wrote %v verdicts", got-before)
	}
}

// nodeChangeMapping: what a Node change costs before any reconcile: evaluating the cached
// Services in memory to find the ones it changes.
func nodeChangeMapping(b *testing.B, h *harness) {
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if reqs := h.c.affected(ctx, "Service", nil); len(reqs) > benchServices {
			b.Fatal(len(reqs))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchServices, "ns/service")
}
