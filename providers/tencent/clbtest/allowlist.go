package clbtest

import "fmt"

// Capability is a CLB feature an account must be allowlisted for by support ticket
// before the API lets it be turned on (docs/sources.md#tke-fixes fixes 2 and 3).
type Capability string

// Capabilities the server gates.
const (
	// L4SNAT is "CLB L4 SNAT": SnatEnable=true on a TCP, UDP, TCP_SSL or QUIC listener.
	// That TCP_SSL and QUIC fall under the layer-4 allowlist is UNCONFIRMED.
	L4SNAT Capability = "L4SNAT"
	// L7SNAT is "CLB L7 SNAT": SnatEnable=true on an HTTP or HTTPS listener.
	L7SNAT Capability = "L7SNAT"
	// KeepAlive is "Keep Alive": KeepaliveEnable=1 on an HTTP or HTTPS listener (the SDK
	// docs call it a beta that needs an application).
	KeepAlive Capability = "KeepAlive"
)

func (c Capability) describe() string {
	switch c {
	case L4SNAT:
		return "CLB L4 SNAT (SnatEnable on a layer-4 listener)"
	case L7SNAT:
		return "CLB L7 SNAT (SnatEnable on a layer-7 listener)"
	case KeepAlive:
		return "Keep Alive (KeepaliveEnable)"
	}
	return string(c)
}

// DenialMode says how a write that needs a missing allowlist fails.
type DenialMode int

const (
	// DenySync answers the write itself with an error (Denial.Code, Denial.Message).
	DenySync DenialMode = iota
	// DenyInTask accepts the write and returns a RequestId; the task then ends with
	// Status 1 (failed) and Denial.Message, and nothing changes.
	DenyInTask
)

// Denial is how the server refuses a write that needs a capability the account lacks.
//
// UNCONFIRMED: no public source shows what CLB really answers when an account without
// the allowlist sets SnatEnable or KeepaliveEnable (docs/sources.md#tke-clb-api). This type is the one
// place the guess lives, and every part of it can be overridden through Options.Denial.
// Callers should classify UnsupportedOperation*, OperationDenied, UnauthorizedOperation
// and InvalidParameter* mentioning whitelist/白名单/内测 as "not allowlisted", and verify
// by reading the listener back (docs/sources.md#tke-clb-api).
type Denial struct {
	Mode DenialMode
	// Code is the error code for DenySync; empty means DefaultDenialCode.
	Code string
	// Message is the error or task message; empty means a message naming the capability
	// and the whitelist (白名单).
	Message string
}

// DefaultDenialCode is the code a DenySync denial uses unless Denial.Code says otherwise.
// InvalidParameter is the guess because it is in ModifyListener's and CreateListener's
// documented error lists (tencentcloud-sdk-go clb v1.3.156), while UnsupportedOperation
// and OperationDenied are not; it is also the hardest case for a caller, which must read
// the message to tell it from a plain bad parameter. UNCONFIRMED.
const DefaultDenialCode = CodeInvalidParameter

func (d Denial) code() string {
	if d.Code == "" {
		return DefaultDenialCode
	}
	return d.Code
}

func (d Denial) message(c Capability) string {
	if d.Message != "" {
		return d.Message
	}
	return fmt.Sprintf("%s is not enabled for this account: it needs the whitelist (白名单); apply by support ticket", c.describe())
}

// Allow grants capabilities at run time, as a support ticket would.
func (s *Server) Allow(caps ...Capability) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range caps {
		s.allow[c] = true
	}
}

// Revoke withdraws capabilities at run time. Listeners already configured keep their
// settings; only new writes are refused.
func (s *Server) Revoke(caps ...Capability) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range caps {
		delete(s.allow, c)
	}
}

// capabilitiesFor lists what a write needs: only turning a feature ON is gated, so an
// account can always switch SNAT or Keep Alive off.
func capabilitiesFor(protocol string, snat *bool, keepalive *int64) []Capability {
	var caps []Capability
	if snat != nil && *snat {
		if isLayer7(protocol) {
			caps = append(caps, L7SNAT)
		} else {
			caps = append(caps, L4SNAT)
		}
	}
	if keepalive != nil && *keepalive == 1 {
		caps = append(caps, KeepAlive)
	}
	return caps
}

// missingCapabilityLocked returns the first capability in caps the account lacks, or "".
func (s *Server) missingCapabilityLocked(caps []Capability) Capability {
	for _, c := range caps {
		if !s.allow[c] {
			return c
		}
	}
	return ""
}
