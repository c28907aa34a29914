package core

import (
	"sync"
	"time"
)

// CapabilityCache remembers, for a while, which allowlisted capabilities the cloud refused, so
// that a host does not ask the cloud again on every reconcile for something support has not
// granted. It is an explicit piece a host wires in (ReconcilerOptions.CapabilityCache); declarations (the
// profile's allowlists, a driver's options) stay the only source of grants. A CapabilityCache
// is safe for concurrent use; the zero value is not usable, use NewCapabilityCache.
type CapabilityCache struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	refused map[Capability]refusal
}

type refusal struct {
	err *AllowlistError
	at  time.Time
}

// defaultRefusalTTL is how long a refusal is remembered when NewCapabilityCache is given 0.
const defaultRefusalTTL = time.Hour

// NewCapabilityCache returns a cache that forgets a refusal after ttl (an hour when
// ttl <= 0).
func NewCapabilityCache(ttl time.Duration) *CapabilityCache {
	if ttl <= 0 {
		ttl = defaultRefusalTTL
	}
	return &CapabilityCache{ttl: ttl, now: time.Now, refused: map[Capability]refusal{}}
}

// Remember records the cloud's refusal of err.Capability.
func (c *CapabilityCache) Remember(err *AllowlistError) {
	if err == nil || err.Capability == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refused[err.Capability] = refusal{err: err, at: c.now()}
}

// Refused returns the remembered refusal of a capability, if one younger than the TTL exists.
// The error names the object the refusal was seen on and wraps the cloud's answer.
func (c *CapabilityCache) Refused(cap Capability) (*AllowlistError, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.refused[cap]
	if !ok {
		return nil, false
	}
	if c.now().Sub(r.at) > c.ttl {
		delete(c.refused, cap)
		return nil, false
	}
	return r.err, true
}

// Forget drops the refusals of the capabilities (every one when none are named): call it when
// support has granted the ticket.
func (c *CapabilityCache) Forget(caps ...Capability) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(caps) == 0 {
		clear(c.refused)
	}
	for _, cp := range caps {
		delete(c.refused, cp)
	}
}
