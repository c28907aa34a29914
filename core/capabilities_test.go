package core

import (
	"testing"
	"time"
)

// The zero CapabilityCache is usable and forgets a refusal once its TTL (an hour by default)
// has passed; Forget drops a refusal at once.
func TestCapabilityCacheZeroValueAndTTL(t *testing.T) {
	now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		ttl  time.Duration
		keep time.Duration // still refused this long after
		drop time.Duration // forgotten this long after
	}{
		{name: "zero TTL means an hour", keep: time.Hour, drop: time.Hour + time.Second},
		{name: "stated TTL", ttl: time.Minute, keep: time.Minute, drop: time.Minute + time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := now
			c := &CapabilityCache{TTL: tc.ttl, now: func() time.Time { return at }}
			if _, ok := c.Refused("snat"); ok {
				t.Fatal("an empty cache reports a refusal")
			}
			c.Remember(&AllowlistError{Capability: "snat", Ask: "CLB Layer 4 SNAT capability"})
			at = now.Add(tc.keep)
			if err, ok := c.Refused("snat"); !ok || err.Ask != "CLB Layer 4 SNAT capability" {
				t.Fatalf("after %s: Refused = %v, %v; want the remembered refusal", tc.keep, err, ok)
			}
			at = now.Add(tc.drop)
			if _, ok := c.Refused("snat"); ok {
				t.Fatalf("after %s: the refusal is still remembered", tc.drop)
			}
			at = now
			c.Remember(&AllowlistError{Capability: "snat"})
			c.Forget("snat")
			if _, ok := c.Refused("snat"); ok {
				t.Fatal("Forget left the refusal")
			}
		})
	}
}
