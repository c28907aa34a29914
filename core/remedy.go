package core

import "k8s.io/apimachinery/pkg/util/validation/field"

// Remedy is a way to stop in-cluster clients from looping through the LB.
type Remedy string

const (
	// RemedyNone: nothing to do.
	RemedyNone Remedy = "none"
	// InterceptVIP: nodes intercept the LB address and forward to backends in the cluster
	// (KEP-1860 VIP; TKE prevent-loopback; VKE ip-mode VIP).
	InterceptVIP Remedy = "intercept-vip"
	// LBSourceNAT: traffic keeps going through the LB, which replaces the source address so
	// replies return through it (TKE CLB SNAT).
	LBSourceNAT Remedy = "lb-snat"
	// NodeSeparation: traffic keeps going through the LB without source NAT, and scheduling
	// keeps clients off every node the LB can pick (externalTrafficPolicy Local or direct-to-Pod,
	// plus anti-affinity; the VKE Proxy-mode rule).
	NodeSeparation Remedy = "node-separation"
	// DNSSteering: clients stop using the LB address (the Service name, or a CoreDNS rewrite of
	// the public name to the Service).
	DNSSteering Remedy = "dns-steering"
	// ThroughLB is the other direction: nodes stop intercepting the LB address, so in-cluster
	// traffic reaches the LB and gets what the backends need from it (KEP-1860 ipMode Proxy;
	// TKE prevent-loopback off; VKE ip-mode Proxy). It is loop-safe only with LB source NAT
	// or clients kept off the backends' nodes.
	ThroughLB Remedy = "through-lb"
)

// Validate refuses a remedy loopguard does not know, as a field error at path that lists the
// supported values.
func (r Remedy) Validate(path *field.Path) *field.Error {
	switch r {
	case RemedyNone, InterceptVIP, ThroughLB, LBSourceNAT, NodeSeparation, DNSSteering:
		return nil
	}
	return field.NotSupported(path, r, []Remedy{RemedyNone, InterceptVIP, ThroughLB, LBSourceNAT, NodeSeparation, DNSSteering})
}

// Capability is a cloud feature that an account must have enabled (usually by a support
// ticket) before a remedy can be applied.
type Capability string

// Costs are what a remedy takes from the user. Decide weighs them against the Policy; the
// CLI prints them so nothing is given up silently. They name the direction each remedy
// trades: one that keeps in-cluster traffic off the LB (the VIP path, DNS steering) gives up
// what the LB adds (LosesLBFeatures); one that sends it through the LB gives up the client
// address to source NAT (ClientIP) or constrains scheduling (SchedulingChange).
type Costs struct {
	// LosesLBFeatures: in-cluster traffic no longer gets TLS offload, L7 rules, monitoring,
	// PROXY protocol or audit from the LB.
	LosesLBFeatures bool `json:"losesLBFeatures"`
	// ClientIP: what becomes of the client address the backend sees.
	ClientIP ClientIP `json:"clientIP"`
	// Tickets lists allowlists the account needs (support tickets when not yet granted).
	Tickets []Capability `json:"tickets,omitempty"`
	// NewObject: the change needs a new Service (and LB address), not an update.
	NewObject bool `json:"newObject,omitempty"`
	// ClientChange: clients must change how they address the service (DNS steering).
	ClientChange bool `json:"clientChange,omitempty"`
	// SchedulingChange: client or backend workloads must be rescheduled under new constraints.
	SchedulingChange bool `json:"schedulingChange,omitempty"`
}

// PreconditionKind classifies why an offer cannot be carried out now.
type PreconditionKind string

const (
	// PreconditionAllowlist: the account lacks a capability; a support ticket can fix it.
	PreconditionAllowlist PreconditionKind = "allowlist"
	// PreconditionVersion: a component is too old (or its version is unknown).
	PreconditionVersion PreconditionKind = "version"
	// PreconditionUnsupported: this cluster or object cannot carry the remedy at all.
	PreconditionUnsupported PreconditionKind = "unsupported"
	// PreconditionImmutable: the change needs a new object; allowed only as a disruptive change.
	PreconditionImmutable PreconditionKind = "immutable"
	// PreconditionUnknown: a fact needed to tell is missing.
	PreconditionUnknown PreconditionKind = "unknown"
)

// Precondition is one unmet requirement of an offer.
type Precondition struct {
	Kind PreconditionKind `json:"kind"`
	// Capability is set for PreconditionAllowlist.
	Capability Capability `json:"capability,omitempty"`
	Reason     Reason     `json:"reason"`
}

// Offer is a remedy a dialect can carry out for one exposure on its cloud.
type Offer struct {
	// ID names the offer stably ("k8s/intercept-vip", "hetzner/hostname"): the Decision
	// carries it, and a driver finds the chosen offer by it, never by its Action text. Empty
	// for an offer a dialect does not name.
	ID     string `json:"id,omitempty"`
	Remedy Remedy `json:"remedy"`
	// Path is the KEP-1860 path the remedy leaves in-cluster traffic on.
	Path Path `json:"path"`
	// Action says, in the cloud's terms, what would change (an annotation, a TkeServiceConfig
	// field, a listener attribute).
	Action string `json:"action"`
	Costs  Costs  `json:"costs"`
	// Unmet lists the preconditions that do not hold now; empty means the offer is ready.
	Unmet []Precondition `json:"unmet,omitempty"`
	// Reason cites the document that describes this fix.
	Reason Reason `json:"reason"`
	// Notes are caveats of carrying the offer out that change no ranking (health-check
	// sources move, existing connections keep their path).
	Notes []Reason `json:"notes,omitempty"`
	// Changes are what carries the offer out when the dialect knows it exactly (an annotation
	// the cloud's controller reads: object, key, value): a driver plans them as they are.
	// Empty when the driver works the changes out itself (a status, a cloud API).
	Changes []Change `json:"changes,omitempty"`
}

// Ready reports whether nothing stands in the offer's way.
func (o *Offer) Ready() bool { return len(o.Unmet) == 0 }

// onlyUnmet reports whether every unmet precondition is of kind k (and there is at least one).
func (o *Offer) onlyUnmet(k PreconditionKind) bool {
	if len(o.Unmet) == 0 {
		return false
	}
	for _, p := range o.Unmet {
		if p.Kind != k {
			return false
		}
	}
	return true
}
