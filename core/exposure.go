package core

import (
	"strings"
)

// ObjectRef names the Kubernetes object an exposure belongs to.
type ObjectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// Scope says who can reach the load balancer's address.
type Scope string

const (
	// ScopeUnknown: no annotation or cloud read said.
	ScopeUnknown Scope = ""
	// Private LBs keep the client Pod's source address, which is what makes the loop possible.
	Private Scope = "private"
	// Public LBs do not loop: the LB sees the node's public egress address, which the node
	// does not know as its own (seeds 000/001 "public network CLB: no risk").
	Public Scope = "public"
)

// Layer is the OSI layer the load balancer's listener works at. It decides the symptom: a
// layer-4 LB does not retry, a layer-7 LB retries another backend after about 4 s.
type Layer uint8

const (
	// LayerUnknown: not said.
	LayerUnknown Layer = 0
	// Layer4 is a TCP/UDP listener (a LoadBalancer Service).
	Layer4 Layer = 4
	// Layer7 is an HTTP/HTTPS listener (a cloud Ingress).
	Layer7 Layer = 7
)

func (l Layer) String() string {
	switch l {
	case Layer4:
		return "L4"
	case Layer7:
		return "L7"
	}
	return "unknown"
}

// Protocols is the set of listener protocols of one exposure.
type Protocols uint8

// Listener protocols. UDP matters apart from TCP because LB source NAT loses the client
// address for UDP with no way to recover it (docs/sources.md#source-address).
const (
	TCP Protocols = 1 << iota
	UDP
	HTTP
	HTTPS
	// SCTP is a valid Service protocol; like UDP, behind LB source NAT it has no PROXY
	// protocol to carry the client address.
	SCTP
)

// Has reports whether every protocol in q is in p.
func (p Protocols) Has(q Protocols) bool { return p&q == q && q != 0 }

func (p Protocols) String() string {
	var parts []string
	for _, x := range [...]struct {
		p Protocols
		s string
	}{{TCP, "TCP"}, {UDP, "UDP"}, {SCTP, "SCTP"}, {HTTP, "HTTP"}, {HTTPS, "HTTPS"}} {
		if p&x.p != 0 {
			parts = append(parts, x.s)
		}
	}
	return strings.Join(parts, ",")
}

// Binding says which addresses the load balancer sends connections to. It decides how often a
// connection lands on the client's own node (docs/sources.md#loopback, "Probability").
type Binding string

const (
	// BindingUnknown: not said.
	BindingUnknown Binding = ""
	// NodePortCluster: every node's NodePort with externalTrafficPolicy Cluster; any node can
	// receive any connection, so a connection lands on the client's node with probability 1/N.
	NodePortCluster Binding = "nodeport-cluster"
	// NodePortLocal: only nodes running a backend receive connections
	// (externalTrafficPolicy Local); the probability is the share of backends on the client's node.
	NodePortLocal Binding = "nodeport-local"
	// DirectToPod: the LB sends straight to Pod addresses (TKE direct-access, VPC-CNI);
	// the probability is the share of backends on the client's node.
	DirectToPod Binding = "direct-to-pod"
)

// ClientAccess says which address in-cluster clients use.
type ClientAccess string

const (
	// AccessLBAddress is the default: clients dial the LB's IP or a name that resolves to it.
	AccessLBAddress ClientAccess = ""
	// AccessServiceName: clients dial the Service's DNS name or ClusterIP and never touch the
	// LB (seeds 000/001 quick check: "access by Service name or ClusterIP: no risk").
	AccessServiceName ClientAccess = "service-name"
)

// NodeBackends counts the ready backends of an exposure on one node.
type NodeBackends struct {
	Node  string `json:"node"`
	Count int    `json:"count"`
}

// Placement is where backends and declared clients run. Every field may be empty when the
// input does not say; Assess then reports the probability as unknown rather than guessing.
type Placement struct {
	// NodesBehindLB is N, the number of nodes the LB sends to with NodePortCluster; 0 means unknown.
	NodesBehindLB int `json:"nodesBehindLB,omitempty"`
	// LBNodes names the nodes behind the LB when known; a declared client on another node is
	// never sent back to its own node under NodePortCluster. nil means unknown (every client
	// node is assumed to be behind the LB). It may be shared between exposures: do not modify.
	LBNodes []string `json:"lbNodes,omitempty"`
	// Backends lists ready backends per node; nil means unknown.
	Backends []NodeBackends `json:"backends,omitempty"`
	// ClientNodes lists the node of each declared client Pod (a node may repeat); nil means
	// no client was declared.
	ClientNodes []string `json:"clientNodes,omitempty"`
	// Separated says whether scheduling keeps clients off the backends' nodes (pod
	// anti-affinity or topology rules), not only whether they happen to be apart right now.
	Separated Fact `json:"separated"`
}

// BehindLB reports whether the LB can send to a node; true when LBNodes is unknown.
func (p *Placement) BehindLB(node string) bool {
	if p.LBNodes == nil {
		return true
	}
	for _, n := range p.LBNodes {
		if n == node {
			return true
		}
	}
	return false
}

// TotalBackends is the number of ready backends, 0 when unknown.
func (p *Placement) TotalBackends() int {
	n := 0
	for _, b := range p.Backends {
		n += b.Count
	}
	return n
}

// BackendsOn is the number of ready backends on one node.
func (p *Placement) BackendsOn(node string) int {
	for _, b := range p.Backends {
		if b.Node == node {
			return b.Count
		}
	}
	return 0
}

// Exposure is one LoadBalancer Service or Ingress as the physics sees it: the model scenario of
// docs/sources.md#design. Dialects fill it from annotations, versions and cloud reads; Assess reads it.
type Exposure struct {
	Object   ObjectRef `json:"object"`
	Provider string    `json:"provider"`

	Scope     Scope     `json:"scope"`
	Layer     Layer     `json:"layer"`
	Protocols Protocols `json:"protocols"`

	// Intercept says whether the node's service proxy rewrites traffic for the LB address to a
	// backend before routing, so the packet never reaches the LB (KEP-1860 "VIP").
	Intercept Fact `json:"intercept"`
	// InterceptMasquerades says whether intercepted traffic reaches the backend from a node
	// address instead of the client Pod's (a userspace proxy, or masquerade-all).
	InterceptMasquerades Fact `json:"interceptMasquerades"`
	// LBSourceNAT says whether the LB replaces the client's source address on every listener.
	LBSourceNAT Fact `json:"lbSourceNAT"`
	// ProxyProtocol says whether the LB passes the client address to layer-4 backends with
	// the PROXY protocol.
	ProxyProtocol Fact `json:"proxyProtocol"`
	// Needs says what the backends depend on that only a packet passing through the LB gets.
	// On the VIP path they never get it, which breaks in-cluster clients the other way.
	Needs LBDependence `json:"needs"`

	Binding   Binding      `json:"binding"`
	Placement Placement    `json:"placement"`
	Access    ClientAccess `json:"access,omitempty"`

	// Hairpin holds the facts for a backend calling its own Service (seed 002); nil when the
	// dataplane is not described. They are the cluster's: exposures of one Cluster may share
	// them, so do not modify them.
	Hairpin *HairpinFacts `json:"hairpin,omitempty"`

	// Reasons explain how the dialect derived the facts above (e.g. "super nodes intercept the
	// CLB VIP by default"); Assess puts them first in the Assessment.
	Reasons []Reason `json:"reasons,omitempty"`
	// Notes are remarks that change no verdict (e.g. an annotation that has no effect).
	Notes []Reason `json:"notes,omitempty"`
}

// LBDependence is what an exposure's backends depend on from the load balancer: what the LB
// adds to, or does to, a connection on the way (docs/sources.md#lb-dependence). Each is a
// Fact; the dialect that sets one adds a Reason saying what it read.
type LBDependence struct {
	// ProxyHeader: the backends expect a PROXY protocol header on every connection and reject
	// (or misread) one without it. An LB that sends the header (Exposure.ProxyProtocol) implies
	// it.
	ProxyHeader Fact `json:"proxyHeader"`
	// ProxyVersion is "v1" or "v2" when known.
	ProxyVersion string `json:"proxyVersion,omitempty"`
	// TLS: the LB terminates TLS and the backends speak plain text on the port it forwards to.
	TLS Fact `json:"tls"`
	// L7Routing: the LB routes or rewrites by host, path or header, and the backends rely on it.
	L7Routing Fact `json:"l7Routing"`
	// ClientAddress: the backends use the client's address (a proxy told where to find it: the
	// connection's source, X-Forwarded-For from trusted hops, a header), for logs, rate limits or
	// allowlists. It asks nothing of the path through the LB, so Any leaves it out; what costs
	// it is a remedy that replaces the address the backends see (LB source NAT without a PROXY
	// header), so Decide ranks the remedies that keep it first unless the policy states a
	// preference.
	ClientAddress Fact `json:"clientAddress,omitempty"`
}

// dependence is the exposure's Needs with the LB's own PROXY protocol folded in: backends behind an
// LB that sends the header must parse it.
func (e *Exposure) dependence() LBDependence {
	d := e.Needs
	if e.ProxyProtocol == Yes {
		d.ProxyHeader = Yes
	}
	return d
}

// Dependence is what the exposure's backends depend on from the load balancer, with the LB's
// own PROXY protocol folded in (backends behind an LB that sends the header must parse it).
func (e *Exposure) Dependence() LBDependence { return e.dependence() }

// Any is Yes when the backends depend on at least one thing, No when on none, else Unknown.
func (d LBDependence) Any() Fact {
	switch {
	case d.ProxyHeader == Yes || d.TLS == Yes || d.L7Routing == Yes:
		return Yes
	case d.ProxyHeader == No && d.TLS == No && d.L7Routing == No:
		return No
	}
	return Unknown
}
