package clbtest

import (
	"sync"
	"time"
)

// ManualClock is a clock that moves only when told to. Pass its Now method as
// Options.Now to make task completion, rate-limit windows and signature expiry
// deterministic without sleeping.
//
// The SDK stamps requests with the real time, so keep a ManualClock within five minutes
// of time.Now() unless the test is about AuthFailure.SignatureExpire.
type ManualClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewManualClock returns a clock standing at start.
func NewManualClock(start time.Time) *ManualClock { return &ManualClock{t: start} }

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set moves the clock to t.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}
