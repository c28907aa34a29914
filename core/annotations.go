package core

import (
	"strings"
)

// loopguard's own annotations, and the names of the facts they declare. The annotations declare
// facts no cloud annotation carries, and override a dialect's guess where docs/sources.md marks
// it UNCONFIRMED. Every dialect honours them.
const (
	// AnnotationLBScope declares the LB private or public.
	AnnotationLBScope = "loopguard.io/lb-scope"
	// AnnotationLBSourceNAT declares whether the LB replaces the client source address.
	AnnotationLBSourceNAT = "loopguard.io/lb-source-nat"
	// AnnotationClientAccess declares how in-cluster clients reach the object:
	// lb-address (the default) or service-name.
	AnnotationClientAccess = "loopguard.io/client-access"
	// AnnotationClients is a label selector for the in-cluster client Pods of this object; it
	// overrides the profile's clients.
	AnnotationClients = "loopguard.io/clients"
	// AnnotationBackendExpects declares what the backends need from the LB, for what no
	// dialect can see (a PROXY-expecting server behind a CCM loopguard does not know): a comma
	// list of proxy-protocol, proxy-protocol-v1, proxy-protocol-v2, tls, l7-routing,
	// client-address (the backends use the client's address: remedies that keep it rank
	// first), or none.
	AnnotationBackendExpects = "loopguard.io/backend-expects"

	// The facts an Assessment can report Missing. An annotation above declares the first two
	// (the one whose name ends the same); the profile's proxyMode or the dialect's reading of
	// the dataplane decides the third.
	MissingScope       = "lb-scope"
	MissingLBSourceNAT = "lb-source-nat"
	MissingIntercept   = "node-intercepts-vip"
)

// String is the dependence in AnnotationBackendExpects's words.
func (d LBDependence) String() string {
	var parts []string
	if d.ProxyHeader == Yes {
		p := "proxy-protocol"
		if d.ProxyVersion != "" {
			p += "-" + d.ProxyVersion
		}
		parts = append(parts, p)
	}
	if d.TLS == Yes {
		parts = append(parts, "tls")
	}
	if d.L7Routing == Yes {
		parts = append(parts, "l7-routing")
	}
	if d.ClientAddress == Yes {
		parts = append(parts, "client-address")
	}
	if len(parts) == 0 {
		if d.Any() == No {
			return "none"
		}
		return "unknown"
	}
	return strings.Join(parts, ",")
}
