package tencent

import "github.com/loopguard/loopguard/core"

// CLB capabilities an account must have enabled by a support ticket before the SNAT remedies
// can be applied (seeds 000/001 solutions 2 and 3). The values are what a ClusterProfile lists
// under allowlists.
const (
	// CapL4SNAT lets a layer-4 (TCP/UDP) listener replace the client source address.
	CapL4SNAT core.Capability = "clb-l4-snat"
	// CapL7SNAT lets a layer-7 (HTTP/HTTPS) listener replace the client source address.
	CapL7SNAT core.Capability = "clb-l7-snat"
	// CapKeepalive lets a layer-7 listener keep connections to backends alive; layer-7 SNAT
	// needs it too (seeds 000/001 solution 3).
	CapKeepalive core.Capability = "clb-keepalive"
)

// asks are the seed's own words for what to request in the support ticket (English seed 001,
// solutions 2 and 3; Chinese seed 000: "CLB 4 层 SNAT 能力", "CLB 7 层 SNAT 能力", "Keep Alive 能力").
var asks = map[core.Capability]string{
	CapL4SNAT:    "CLB Layer 4 SNAT capability",
	CapL7SNAT:    "CLB Layer 7 SNAT capability",
	CapKeepalive: "Keep Alive capability",
}

// Capabilities lists the CLB allowlists the Tencent dialect knows, in the order the seed
// introduces them.
func Capabilities() []core.Capability {
	return []core.Capability{CapL4SNAT, CapL7SNAT, CapKeepalive}
}

// Ask returns what to ask Tencent Cloud support for to be granted a capability, in the
// guide's words; "" for a capability this dialect does not know.
func Ask(c core.Capability) string { return asks[c] }

// NewAllowlistError builds the typed error for a missing capability, naming what to ask
// support for. cause is the cloud's error when the cloud refused, else nil.
func NewAllowlistError(obj core.ObjectRef, c core.Capability, cause error) *core.AllowlistError {
	return &core.AllowlistError{Object: obj, Capability: c, Ask: Ask(c), Err: cause}
}

// ValidCapability reports whether c is one of Capabilities; profile readers use it to refuse
// unknown allowlist names.
func ValidCapability(c core.Capability) bool { _, ok := asks[c]; return ok }
