package core

import (
	"math"
	"strconv"
)

// Risk is the verdict for in-cluster clients that use the LB address.
type Risk string

const (
	// RiskNone: no connection can loop.
	RiskNone Risk = "none"
	// RiskAtRisk: some connections can loop.
	RiskAtRisk Risk = "at-risk"
	// RiskUnknown: a fact the verdict needs is missing; Assessment.Missing names it.
	RiskUnknown Risk = "unknown"
)

// Symptom is what users of a looping exposure see.
type Symptom string

const (
	SymptomNone Symptom = "none"
	// SymptomConnectionFailure: every connection fails (one node, or every backend on the
	// client's node).
	SymptomConnectionFailure Symptom = "connection-failure"
	// SymptomIntermittent: layer 4, some connections hang ("works sometimes").
	SymptomIntermittent Symptom = "intermittent"
	// SymptomDelay: layer 7, some requests take ~4 s while the LB retries another backend.
	SymptomDelay Symptom = "delay"
	// SymptomProtocolError: the other direction. The node intercepts the LB address (path
	// VIP), so in-cluster connections never get what the backends expect from the LB (a PROXY
	// protocol header, TLS ended at the LB, its layer-7 rules): the backend rejects or misreads
	// every one of them (docs/sources.md#lb-dependence).
	SymptomProtocolError Symptom = "protocol-error"
)

// Path is the KEP-1860 serving path (status.loadBalancer.ingress[].ipMode).
type Path string

const (
	PathUnknown Path = ""
	// PathVIP: the node intercepts the LB address.
	PathVIP Path = "VIP"
	// PathProxy: traffic goes through the LB.
	PathProxy Path = "Proxy"
)

// Probability is a per-connection probability in [0,1], or unknown. It is a value type so an
// Assessment needs no allocation for it; unknown encodes as JSON null.
type Probability struct {
	v     float64
	known bool
}

// knownP returns a known probability.
func knownP(v float64) Probability { return Probability{v: v, known: true} }

// Known reports whether the probability is known.
func (p Probability) Known() bool { return p.known }

// Value returns the probability, or NaN when unknown.
func (p Probability) Value() float64 {
	if !p.known {
		return math.NaN()
	}
	return p.v
}

func (p Probability) String() string {
	if !p.known {
		return "unknown"
	}
	return strconv.FormatFloat(p.v, 'g', 4, 64)
}

// MarshalJSON writes the number or null.
func (p Probability) MarshalJSON() ([]byte, error) {
	if !p.known {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, p.v, 'g', 6, 64), nil
}

// UnmarshalJSON reads a number or null.
func (p *Probability) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*p = Probability{}
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return err
	}
	*p = knownP(v)
	return nil
}

// SourceKind is the address a backend sees as the source of an in-cluster connection
// (docs/sources.md#source-address).
type SourceKind string

const (
	SourceUnknown   SourceKind = "unknown"
	SourceClientPod SourceKind = "client-pod"
	SourceNode      SourceKind = "node-address"
	SourceLB        SourceKind = "lb-address"
	// SourceServiceLoopback is Cilium's 169.254.42.1 (fe80::1) for a Pod calling its own Service.
	SourceServiceLoopback SourceKind = "service-loopback"
)

// ClientIP says whether the backend can learn the real client address.
type ClientIP string

const (
	ClientIPUnknown ClientIP = ""
	// ClientIPKept: the source address is the client's.
	ClientIPKept ClientIP = "kept"
	// ClientIPProxyProtocol: recoverable from the PROXY protocol header (TCP).
	ClientIPProxyProtocol ClientIP = "proxy-protocol"
	// ClientIPForwardedFor: recoverable from X-Forwarded-For (HTTP).
	ClientIPForwardedFor ClientIP = "x-forwarded-for"
	// ClientIPLost: not recoverable (UDP behind LB source NAT).
	ClientIPLost ClientIP = "lost"
)

// SourceAddress is what a backend sees as the source of an in-cluster connection.
type SourceAddress struct {
	Kind     SourceKind `json:"kind"`
	ClientIP ClientIP   `json:"clientIP,omitempty"`
	// Address is set when the address is fixed (Cilium's service loopback address).
	Address string `json:"address,omitempty"`
}

// Assessment is the verdict for one exposure.
type Assessment struct {
	Object ObjectRef `json:"object"`
	Risk   Risk      `json:"risk"`
	// Symptom is what clients see if they loop; SymptomNone when Risk is none.
	Symptom Symptom `json:"symptom"`
	// Path is the serving path in effect for in-cluster clients, when known.
	Path Path `json:"path,omitempty"`
	// WorstCase is the loop probability per connection for the worst-placed client.
	WorstCase Probability `json:"worstCase"`
	// DeclaredClients is the loop probability per connection for the worst-placed declared
	// client, unknown when no client was declared.
	DeclaredClients Probability `json:"declaredClients"`
	// Source is what the backend sees as the source of an in-cluster connection.
	Source SourceAddress `json:"sourceAddress"`
	// Reasons explain the verdict, the dialect's reasons first.
	Reasons []Reason `json:"reasons"`
	// Missing names the facts a RiskUnknown verdict needs (MissingScope, MissingIntercept,
	// MissingLBSourceNAT).
	Missing []string `json:"missing,omitempty"`
	// Hairpin is the verdict for a backend calling its own Service, when the dataplane is described.
	Hairpin *HairpinAssessment `json:"hairpin,omitempty"`
	// Layer and Protocols are copied from the exposure; Decide needs them.
	Layer     Layer     `json:"layer"`
	Protocols Protocols `json:"-"`
	// NeedsLB is the exposure's LBDependence.Any (with the LB's own PROXY protocol): Decide
	// never picks a remedy that keeps in-cluster traffic off the LB when it is Yes.
	NeedsLB Fact `json:"needsLB"`
	// NeedsClientAddress is the exposure's LBDependence.ClientAddress: Decide ranks the remedies
	// that keep the client address first when it is Yes and the policy prefers nothing else.
	NeedsClientAddress Fact `json:"needsClientAddress,omitempty"`
}

// Reasons prepared once, so Assess allocates nothing for them.
var (
	reasonServiceName      = ruleServiceName.Reason()
	reasonPublicLB         = rulePublicLB.Reason()
	reasonScopeUnknown     = ruleScopeUnknown.Reason()
	reasonIntercepted      = ruleIntercepted.Reason()
	reasonInterceptUnknown = ruleInterceptUnknown.Reason()
	reasonThroughLB        = ruleThroughLB.Reason()
	reasonLBSourceNAT      = ruleLBSourceNAT.Reason()
	reasonSNATUnknown      = ruleSourceNATUnknown.Reason()
	reasonSameNodeLoop     = ruleSameNodeLoop.Reason()
	reasonSeparated        = ruleNodeSeparated.Reason()
	reasonClusterPolicy    = ruleClusterPolicy.Reason()
	reasonBackendShare     = ruleBackendShare.Reason()
	reasonBindingUnknown   = ruleBindingUnknown.Reason()
	reasonPlacementUnknown = rulePlacementUnknown.Reason()
	reasonAlwaysLoops      = ruleSingleNode.Reason()
	reasonL4NoRetry        = ruleL4NoRetry.Reason()
	reasonL7Retry          = ruleL7Retry.Reason()
	reasonDeclaredClients  = ruleDeclaredClients.Reason()
	reasonNodePortSource   = ruleSourceNodePort.Reason()
	reasonBridgeNFOff      = ruleBridgeNetfilterOff.Reason()
	reasonVIPProxyHeader   = ruleVIPSkipsProxyHeader.Reason()
	reasonVIPTLS           = ruleVIPSkipsTLS.Reason()
	reasonVIPL7            = ruleVIPSkipsL7.Reason()
)

// Assess applies the dataplane physics to one exposure. It is pure and cheap: it allocates
// only the Reasons slice (and the hairpin verdict when hairpin facts are given).
func Assess(e *Exposure) Assessment {
	needs := e.dependence()
	a := Assessment{
		Object:    e.Object,
		Layer:     e.Layer,
		Protocols: e.Protocols,
		Reasons:   make([]Reason, 0, len(e.Reasons)+reasonsAdded(e, needs)),
	}
	a.NeedsLB = needs.Any()
	a.NeedsClientAddress = needs.ClientAddress
	a.Reasons = append(a.Reasons, e.Reasons...)
	if e.Hairpin != nil {
		h := e.Hairpin.Assess()
		a.Hairpin = &h
	}
	if bridgeBreaksNodeDNAT(e) {
		return a.bridgeNetfilterOff(e)
	}
	switch {
	case e.Access == AccessServiceName:
		a.noLoop(e, PathUnknown, reasonServiceName)
		a.Source = SourceAddress{Kind: SourceClientPod, ClientIP: ClientIPKept}
		return a
	case e.Scope == Public:
		a.noLoop(e, PathUnknown, reasonPublicLB)
		// The source seen for in-cluster clients of a public LB depends on the node's egress
		// NAT, which no input describes.
		a.Source = SourceAddress{Kind: SourceUnknown}
		return a
	}

	switch e.Intercept {
	case Yes:
		a.noLoop(e, PathVIP, reasonIntercepted)
		a.Source = interceptedSource(e)
		if a.NeedsLB == Yes {
			a.bypassed(e, needs)
		}
		return a
	case No:
		a.Path = PathProxy
		a.Reasons = append(a.Reasons, reasonThroughLB)
	}

	// Any one sufficient condition rules the loop out, whatever else is unknown: source NAT
	// on the LB, or clients that can never share a node with a backend the LB picks.
	if e.LBSourceNAT == Yes {
		a.noLoop(e, a.Path, reasonLBSourceNAT)
		a.Source = SourceAddress{Kind: SourceUnknown}
		if e.Intercept == No {
			a.Source = a.nodePortSource(e, lbSource(e))
		}
		return a
	}
	a.Source = SourceAddress{Kind: SourceUnknown}
	if e.Intercept == No && e.LBSourceNAT == No {
		a.Source = a.nodePortSource(e, SourceAddress{Kind: SourceClientPod, ClientIP: ClientIPKept})
	}
	worst, declared, separated := loopProbability(e, &a)
	if separated {
		a.Risk, a.Symptom = RiskNone, SymptomNone
		a.WorstCase, a.DeclaredClients = knownP(0), knownP(0) // separation needs declared clients
		return a
	}
	a.WorstCase, a.DeclaredClients = worst, declared

	// A loop needs all of: a private LB, no interception, no source NAT.
	if e.Scope == ScopeUnknown {
		a.unknown(MissingScope, reasonScopeUnknown)
	}
	if e.Intercept == Unknown {
		a.unknown(MissingIntercept, reasonInterceptUnknown)
	}
	if e.LBSourceNAT == Unknown {
		a.unknown(MissingLBSourceNAT, reasonSNATUnknown)
	}
	if a.Risk == "" {
		a.Risk = RiskAtRisk
		a.Reasons = append(a.Reasons, reasonSameNodeLoop)
	}
	// For an unknown verdict the symptom says what clients would see if they loop.
	a.Symptom = symptom(e.Layer, worst, &a)
	return a
}

// reasonsAdded is how many reasons Assess adds to the dialect's for e, at most: the Reasons
// slice is sized once for them. A Reason is four strings (64 bytes), and most exposures take a
// short path (no loop: one reason), so a fixed margin would allocate several times what they
// use; TestReasonsAddedBoundsAssess checks that Assess never grows the slice.
func reasonsAdded(e *Exposure, needs LBDependence) int {
	if bridgeBreaksNodeDNAT(e) {
		return 3 // bridge netfilter off, placement unknown, symptom
	}
	if e.Access == AccessServiceName || e.Scope == Public {
		return 1
	}
	if e.Intercept == Yes {
		if needs.Any() == Yes {
			return 4 // intercepted, and each thing the backends need from the LB
		}
		return 1
	}
	n := 0
	if e.Intercept == No {
		n++ // through the LB
	}
	masquerade := 0
	if e.Intercept == No && e.Binding == NodePortCluster {
		masquerade = 1 // the NodePort masquerade, where the source is known
	}
	if e.LBSourceNAT == Yes {
		return n + masquerade + 1
	}
	if e.LBSourceNAT == No {
		n += masquerade
	}
	// loopProbability: the binding, and placement, separation or declared clients.
	n++
	if e.Binding != BindingUnknown {
		n++
	}
	if (e.Binding == NodePortLocal || e.Binding == DirectToPod) && e.Placement.Separated == Yes {
		return n // separated: the verdict ends there
	}
	unknown := 0
	if e.Scope == ScopeUnknown {
		unknown++
	}
	if e.Intercept == Unknown {
		unknown++
	}
	if e.LBSourceNAT == Unknown {
		unknown++
	}
	if unknown == 0 {
		n++ // the same-node loop
	}
	return n + unknown + 1 // and the symptom
}

// bypassed turns an intercepted exposure's verdict into the other failure: the connection
// cannot loop, but it never passes the LB, so every in-cluster connection misses what the
// backends need from it.
func (a *Assessment) bypassed(e *Exposure, needs LBDependence) {
	a.Risk, a.Symptom = RiskAtRisk, SymptomProtocolError
	a.WorstCase = knownP(1)
	if e.Placement.ClientNodes != nil {
		a.DeclaredClients = knownP(1)
	}
	if needs.ProxyHeader == Yes {
		a.Reasons = append(a.Reasons, reasonVIPProxyHeader)
	}
	if needs.TLS == Yes {
		a.Reasons = append(a.Reasons, reasonVIPTLS)
	}
	if needs.L7Routing == Yes {
		a.Reasons = append(a.Reasons, reasonVIPL7)
	}
}

// noLoop records a loop-free verdict. DeclaredClients becomes 0 only when clients are
// declared; otherwise it stays unknown, as documented.
func (a *Assessment) noLoop(e *Exposure, p Path, r Reason) {
	a.Risk, a.Symptom, a.Path = RiskNone, SymptomNone, p
	a.WorstCase = knownP(0)
	if e.Placement.ClientNodes != nil {
		a.DeclaredClients = knownP(0)
	}
	a.Reasons = append(a.Reasons, r)
}

func (a *Assessment) unknown(missing string, r Reason) {
	a.Risk = RiskUnknown
	a.Missing = append(a.Missing, missing)
	a.Reasons = append(a.Reasons, r)
}

// nodePortSource applies kube-proxy's NodePort masquerade under externalTrafficPolicy Cluster
// to the source the LB delivers: the node's address replaces it, while a PROXY protocol
// header or X-Forwarded-For inside the stream survives.
func (a *Assessment) nodePortSource(e *Exposure, s SourceAddress) SourceAddress {
	if e.Binding != NodePortCluster {
		return s
	}
	a.Reasons = append(a.Reasons, reasonNodePortSource)
	s.Kind = SourceNode
	if s.ClientIP == ClientIPKept {
		// The masquerade rewrites the packet's source, not the stream: a PROXY header the LB
		// sends still names the client (measured with the real kube-proxy and a transparent
		// HAProxy, internal/dataplane).
		switch {
		case e.Layer == Layer4 && e.dependence().ProxyHeader == Yes && e.Protocols&(UDP|SCTP) == 0:
			s.ClientIP = ClientIPProxyProtocol
		default:
			s.ClientIP = ClientIPLost
		}
	}
	return s
}

// bridgeBreaksNodeDNAT reports whether the node DNATs this traffic while keeping the client's
// source, on a bridge whose frames skip iptables: then a backend on the client's node answers
// over the bridge and the reply is never un-DNATed (measured in internal/dataplane).
func bridgeBreaksNodeDNAT(e *Exposure) bool {
	h := e.Hairpin
	if h == nil || h.Dataplane != DataplaneKubeProxy || h.Attachment != AttachmentBridge || h.BridgeNetfilter != No {
		return false
	}
	return e.Access == AccessServiceName || (e.Intercept == Yes && e.InterceptMasquerades == No)
}

// bridgeNetfilterOff is the verdict when bridgeBreaksNodeDNAT holds: the node's DNAT picks any
// backend, so a connection fails with the share of backends on the client's node.
func (a *Assessment) bridgeNetfilterOff(e *Exposure) Assessment {
	a.Risk = RiskAtRisk
	a.Reasons = append(a.Reasons, reasonBridgeNFOff)
	if e.Intercept == Yes {
		a.Path = PathVIP
	}
	a.Source = SourceAddress{Kind: SourceClientPod, ClientIP: ClientIPKept}
	if worst, declared, ok := backendShare(&e.Placement); ok {
		a.WorstCase, a.DeclaredClients = worst, declared
	} else {
		a.Reasons = append(a.Reasons, reasonPlacementUnknown)
	}
	// No LB is involved, so there is no layer-7 retry whatever the listener.
	a.Symptom = symptom(Layer4, a.WorstCase, a)
	return *a
}

func interceptedSource(e *Exposure) SourceAddress {
	switch e.InterceptMasquerades {
	case Yes:
		return SourceAddress{Kind: SourceNode, ClientIP: ClientIPLost}
	case No:
		return SourceAddress{Kind: SourceClientPod, ClientIP: ClientIPKept}
	}
	// docs/sources.md#source-address: the client Pod's address, unless the service proxy masquerades.
	return SourceAddress{Kind: SourceUnknown}
}

// SourceBehindLBNAT is what the backend sees as the source of in-cluster traffic behind the
// LB's source NAT (docs/sources.md#source-address): the LB's address, with the client's in the
// PROXY protocol header or X-Forwarded-For where the exposure has one.
func (e *Exposure) SourceBehindLBNAT() SourceAddress { return lbSource(e) }

// lbSource is docs/sources.md#source-address for traffic behind LB source NAT.
func lbSource(e *Exposure) SourceAddress {
	s := SourceAddress{Kind: SourceLB}
	switch {
	case e.Layer == Layer7:
		s.ClientIP = ClientIPForwardedFor
	case e.Protocols&(UDP|SCTP) != 0:
		s.ClientIP = ClientIPLost
	case e.ProxyProtocol == Yes:
		s.ClientIP = ClientIPProxyProtocol
	default:
		s.ClientIP = ClientIPLost
	}
	return s
}

// backendShare is the share of backends on the worst-placed node, and on the worst node of a
// declared client (unknown without declared clients): the chance that a connection picked
// among the backends lands on the client's own node. ok is false when no backend is known.
func backendShare(pl *Placement) (worst, declared Probability, ok bool) {
	total := pl.TotalBackends()
	if total == 0 {
		return Probability{}, Probability{}, false
	}
	most := 0
	for _, b := range pl.Backends {
		most = max(most, b.Count)
	}
	if len(pl.ClientNodes) > 0 {
		dmax := 0
		for _, n := range pl.ClientNodes {
			dmax = max(dmax, pl.BackendsOn(n))
		}
		declared = knownP(float64(dmax) / float64(total))
	}
	return knownP(float64(most) / float64(total)), declared, true
}

// loopProbability computes the per-connection probability that the LB sends a connection to
// the client's own node (docs/sources.md#loopback). It reports separated when scheduling guarantees
// that no client shares a node with a backend the LB can pick.
func loopProbability(e *Exposure, a *Assessment) (worst, declared Probability, separated bool) {
	pl := &e.Placement
	switch e.Binding {
	case NodePortCluster:
		a.Reasons = append(a.Reasons, reasonClusterPolicy)
		if pl.NodesBehindLB <= 0 {
			a.Reasons = append(a.Reasons, reasonPlacementUnknown)
			return Probability{}, Probability{}, false
		}
		p := knownP(1 / float64(pl.NodesBehindLB))
		if len(pl.ClientNodes) > 0 {
			// A client on a node the LB never sends to cannot be sent back to its own node.
			declared = knownP(0)
			for _, n := range pl.ClientNodes {
				if pl.BehindLB(n) {
					declared = p
					a.Reasons = append(a.Reasons, reasonDeclaredClients)
					break
				}
			}
		}
		return p, declared, false
	case NodePortLocal, DirectToPod:
		a.Reasons = append(a.Reasons, reasonBackendShare)
		if pl.Separated == Yes {
			a.Reasons = append(a.Reasons, reasonSeparated)
			return knownP(0), knownP(0), true
		}
		worst, declared, ok := backendShare(pl)
		if !ok {
			a.Reasons = append(a.Reasons, reasonPlacementUnknown)
			return Probability{}, Probability{}, false
		}
		if len(pl.ClientNodes) > 0 {
			a.Reasons = append(a.Reasons, reasonDeclaredClients)
		}
		return worst, declared, false
	default:
		a.Reasons = append(a.Reasons, reasonBindingUnknown)
		return Probability{}, Probability{}, false
	}
}

func symptom(l Layer, worst Probability, a *Assessment) Symptom {
	if worst.Known() && worst.v >= 1 {
		a.Reasons = append(a.Reasons, reasonAlwaysLoops)
		return SymptomConnectionFailure
	}
	switch l {
	case Layer7:
		a.Reasons = append(a.Reasons, reasonL7Retry)
		return SymptomDelay
	default:
		// Layer 4, and unknown layers, which are LoadBalancer Services (layer 4) in practice.
		a.Reasons = append(a.Reasons, reasonL4NoRetry)
		return SymptomIntermittent
	}
}
