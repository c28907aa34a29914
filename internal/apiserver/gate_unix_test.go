//go:build unix

package apiserver

import (
	"runtime"
	"testing"
	"time"
)

// TestStartGateHoldsAStartUntilASlotIsFree: with every slot held (by other test binaries, here
// by other opens of the same files), a start waits; it goes ahead once one is released.
func TestStartGateHoldsAStartUntilASlotIsFree(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // not the slots of test binaries running beside this one
	var held []*startGate
	for range runtime.NumCPU() {
		g, waited := acquireStartSlot()
		if g.f == nil {
			t.Fatal("no slot taken: the lock files could not be used")
		}
		if waited > time.Second {
			t.Fatalf("a free slot took %s to take", waited)
		}
		held = append(held, g)
	}
	t.Cleanup(func() {
		for _, g := range held {
			g.release()
		}
	})

	got := make(chan *startGate, 1)
	go func() { g, _ := acquireStartSlot(); got <- g }()
	select {
	case g := <-got:
		g.release()
		t.Fatalf("a start took a slot while all %d were held", len(held))
	case <-time.After(300 * time.Millisecond):
	}

	held[0].release()
	select {
	case g := <-got:
		if g.f == nil {
			t.Error("the start went ahead without a slot")
		}
		g.release()
	case <-time.After(30 * time.Second):
		t.Fatal("a start still waited 30 s after a slot was released")
	}
}
