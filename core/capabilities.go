package core

import (
	"sync"
	"time"
)

// CapabilityCache remembers, for a while, which allowlisted capabilities the cloud refused, so
// that a host does not ask the cloud again on every reconcile for something support has not
// granted. It is an explicit piece a host wires in (ReconcilerOptions.CapabilityCache); declarations (the
// profile's allowlists, a driver's options) stay the only source of grants. A CapabilityCache
// is safe for concurrent use, and its zero value is ready to use with a TTL of an hour.
type CapabilityCache struct {
	// TTL is how long a refusal is remembered: an hour when zero or negative. Set it before
	// the cache is first used.
	TTL time.Duration

	now func() time.Time // time.Now when nil; tests set it

	mu      sync.Mutex
	refused map[Capability]refusal
}

type refusal struct {
	err *AllowlistError
	at  time.Time
}

// defaultRefusalTTL is how long a refusal is remembered when CapabilityCache.TTL is not set.
const defaultRefusalTTL = time.Hour

func (c *CapabilityCache) clock() time.Time {
	if c.now == nil {
		return time.Now()
	}
	return c.now()
}

func (c *CapabilityCache) ttl() time.Duration {
	if c.TTL <= 0 {
		return defaultRefusalTTL
	}
	return c.TTL
}

// Remember records the cloud's refusal of err.Capability.
func (c *CapabilityCache) Remember(err *AllowlistError) {
	if err == nil || err.Capability == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refused == nil {
		c.refused = map[Capability]refusal{}
	}
	c.refused[err.Capability] = refusal{err: err, at: c.clock()}
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
	if c.clock().Sub(r.at) > c.ttl() {
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
