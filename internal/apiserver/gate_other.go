//go:build !unix

package apiserver

import "time"

// startGate is a no-op where flock(2) is not available: starts are not gated there.
type startGate struct{}

func acquireStartSlot() (*startGate, time.Duration) { return &startGate{}, 0 }

func (*startGate) release() {}
