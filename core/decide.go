package core

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Preference tilts Decide's ranking of the remedies a cloud offers.
type Preference string

const (
	// PreferDocumented follows the clouds' documented fixes, cheapest first (the default).
	PreferDocumented Preference = ""
	// PreferDocumentedStated is the documented order chosen on purpose (`--prefer documented`,
	// `prefer: documented`): it ranks as PreferDocumented does, and it also holds where the
	// backends use the client address, which otherwise ranks as PreferSourceIP.
	PreferDocumentedStated Preference = "documented"
	// PreferSourceIP ranks remedies that keep the client address first.
	PreferSourceIP Preference = "source-ip"
	// PreferLBFeatures ranks remedies that keep in-cluster traffic on the LB first.
	PreferLBFeatures Preference = "lb-features"
)

// Validate refuses a preference Decide does not know, as a field error at path that lists the
// supported values (a CLI flag passes a nil path and prints the error's Detail).
func (p Preference) Validate(path *field.Path) *field.Error {
	switch p {
	case PreferDocumented, PreferDocumentedStated, PreferSourceIP, PreferLBFeatures:
		return nil
	}
	return field.NotSupported(path, p, []Preference{PreferDocumentedStated, PreferSourceIP, PreferLBFeatures})
}

// Policy says what the user is willing to give up. The zero value is the default policy: the
// documented order, no support tickets, no disruptive changes.
type Policy struct {
	Prefer Preference `json:"prefer,omitempty"`
	// AllowTickets lets Decide pick a remedy whose only obstacle is an allowlist the account
	// has not been granted yet; the decision then names the ticket to file.
	AllowTickets bool `json:"allowTickets,omitempty"`
	// AllowDisruptive lets Decide pick a remedy that needs a new object (a new Service and LB
	// address), such as switching an existing Volcengine Service's ip-mode.
	AllowDisruptive bool `json:"allowDisruptive,omitempty"`
}

// Rejection says why an offered remedy was not chosen.
type Rejection struct {
	Remedy Remedy `json:"remedy"`
	// RankedBelow is set when the remedy could be carried out but another ranked higher.
	RankedBelow Remedy `json:"rankedBelow,omitempty"`
	Reason      Reason `json:"reason"`
	// Unmet lists every precondition of the offer the policy does not waive (Reason explains
	// the first).
	Unmet []Precondition `json:"unmet,omitempty"`
}

// Decision is the remedy chosen for one exposure and why.
type Decision struct {
	Remedy Remedy `json:"remedy"`
	// Offer is the chosen offer's ID (Offer.ID), for the driver that carries it out.
	Offer string `json:"offer,omitempty"`
	// Path is the KEP-1860 path in-cluster traffic takes once the remedy is in place.
	Path Path `json:"path,omitempty"`
	// Why is a one-line explanation.
	Why string `json:"why"`
	// Action is the chosen offer's concrete change, in the cloud's terms.
	Action string `json:"action,omitempty"`
	Costs  *Costs `json:"costs,omitempty"`
	// Tickets lists allowlists to request before the remedy can be applied (AllowTickets).
	Tickets []Capability `json:"tickets,omitempty"`
	// Tentative is set when the assessment's risk is unknown: the decision assumes the loop is
	// possible and must not be applied until the missing facts are known.
	Tentative bool        `json:"tentative,omitempty"`
	Rejected  []Rejection `json:"rejected,omitempty"`
	// Reason cites the rule behind the choice.
	Reason Reason `json:"reason"`
}

// Rules behind decisions.
var (
	ruleDecideNoLoop        = Rule{CodeDecideNoLoop, "No connection can loop; nothing to change.", "docs/sources.md#design (decision)"}
	ruleDecideChosen        = Rule{CodeDecideChosen, "The highest-ranked remedy whose preconditions hold under the policy.", "docs/sources.md#design (decision); docs/sources.md#tke-guide solutions 1-3"}
	ruleDecideRanked        = Rule{CodeDecideRanked, "Could be carried out, but the policy ranks another remedy higher.", "docs/sources.md#design (decision)"}
	ruleDecideUnmet         = Rule{CodeDecideUnmet, "A precondition does not hold.", "docs/sources.md#design (decision)"}
	ruleDecideTicket        = Rule{CodeDecideTicket, "Needs an allowlist the account has not been granted; the policy avoids support tickets.", "docs/sources.md#tke-guide solutions 2, 3"}
	ruleDecideDisruptive    = Rule{CodeDecideDisruptive, "Needs a new object (a new Service and LB address); the policy does not allow disruptive changes.", "docs/sources.md#vke-ip-mode (ip-mode not modifiable)"}
	ruleDecideL7NoIntercept = Rule{CodeDecideL7NoIntercept, "Interception does not apply to layer-7 listeners; layer-7 loops are fixed through the LB.", "docs/sources.md#tke-guide §4 (\"layer 7 loopback can only be resolved by enabling SNAT on the CLB\")"}
	ruleDecideTentative     = Rule{CodeDecideTentative, "The risk is unknown; this decision assumes a loop is possible and must not be applied until the missing facts are known.", "docs/sources.md#design (decision)"}
	ruleDecideKeepsOffLB    = Rule{CodeDecideKeepsOffLB, "The backends need what only the load balancer adds (a PROXY protocol header, TLS, layer-7 rules); this remedy keeps in-cluster traffic off the LB and would break them.", srcDependence}
	ruleDecideFailsLeast    = Rule{CodeDecideFailsLeast, "Today's path fails every in-cluster connection (protocol-error) and no remedy is ready: the one whose path fails least is recommended, tentatively, with what to confirm first.", srcDependence + "; docs/sources.md#design (decision)"}
	ruleDecideNothing       = Rule{CodeDecideNothing, "No remedy offered for this object can be carried out under the policy.", "docs/sources.md#design (decision)"}
	ruleDecideClientAddress = Rule{CodeDecideClientAddress, "The backends use the client address and the policy states no preference: remedies that keep it rank first, as under prefer source-ip; this one keeps less of it than the one chosen.", "docs/sources.md#design (decision); docs/gateway.md#client-address"}
)

var (
	reasonDecideNoLoop    = ruleDecideNoLoop.Reason()
	reasonDecideRanked    = ruleDecideRanked.Reason()
	reasonDecideTicket    = ruleDecideTicket.Reason()
	reasonDecideDisrupt   = ruleDecideDisruptive.Reason()
	reasonDecideL7        = ruleDecideL7NoIntercept.Reason()
	reasonDecideOffLB     = ruleDecideKeepsOffLB.Reason()
	reasonDecideNothing   = ruleDecideNothing.Reason()
	reasonDecideTentative = ruleDecideTentative.Reason()
	reasonDecideAddress   = ruleDecideClientAddress.Reason()
)

// Decide chooses among the offers a dialect made for an assessed exposure. The default policy
// follows the clouds' documented fixes, cheapest first (seeds 000/001, 003): for layer 4,
// intercept the VIP, else LB source NAT, else node separation, else DNS steering; for layer 7,
// LB source NAT, else node separation, else DNS steering. A remedy blocked only by an allowlist
// is chosen only under AllowTickets, one that needs a new object only under AllowDisruptive.
// When the backends use the client address (Assessment.NeedsClientAddress) and the policy
// prefers nothing (PreferDocumented, the zero value; not PreferDocumentedStated), the
// remedies are ranked as under PreferSourceIP.
func Decide(a *Assessment, offers []Offer, p Policy) Decision {
	if a.Risk == RiskNone {
		return Decision{Remedy: RemedyNone, Path: a.Path, Why: reasonDecideNoLoop.Message, Reason: reasonDecideNoLoop}
	}
	byAddress := p.Prefer == PreferDocumented && a.NeedsClientAddress == Yes
	if byAddress {
		p.Prefer = PreferSourceIP
	}
	best, bestRank := -1, 0
	for i := range offers {
		if !eligible(a, &offers[i], p) {
			continue
		}
		if r := rank(&offers[i], p); best < 0 || r < bestRank {
			best, bestRank = i, r
		}
	}
	// The chosen offer's costs and the rejections share one allocation (decisionStorage).
	var rejected []Rejection
	d := Decision{Remedy: RemedyNone, Path: a.Path, Why: reasonDecideNothing.Message, Reason: reasonDecideNothing}
	if best >= 0 {
		o := &offers[best]
		var costs *Costs
		costs, rejected = decisionStorage(len(offers) - 1)
		// A copy: the Decision must not alias the caller's offers, which a host may reuse.
		*costs = o.Costs
		costs.Tickets = slices.Clone(o.Costs.Tickets)
		d = Decision{Remedy: o.Remedy, Offer: o.ID, Path: o.Path, Why: o.Reason.Message, Action: o.Action, Costs: costs,
			Reason: ruleDecideChosen.Because(o.Reason.Message)}
		if byAddress {
			d.Why += " The backends use the client address, so the remedies that keep it rank first."
		}
		for _, u := range o.Unmet {
			if u.Kind == PreconditionAllowlist {
				d.Tickets = append(d.Tickets, u.Capability)
			}
		}
	}
	if best < 0 && a.Symptom == SymptomProtocolError {
		if i := failsLeast(a, offers, p); i >= 0 {
			best = i
			d = fallbackDecision(&offers[i], p)
		}
	}
	if a.Risk == RiskUnknown {
		d.Tentative = true
		d.Why = reasonDecideTentative.Message + " " + d.Why
	}
	if n := len(offers) - min(best+1, 1); n > 0 {
		// rejected has room unless the fallback chose (failsLeast) or nothing was chosen.
		if cap(rejected) < n {
			rejected = make([]Rejection, 0, n)
		}
		d.Rejected = rejected
	}
	chosenKey := -1
	if byAddress && best >= 0 {
		chosenKey = clientIPKey(&offers[best])
	}
	for i := range offers {
		if i == best {
			continue
		}
		// Written in place: appending a built Rejection copied it a second time.
		d.Rejected = d.Rejected[:len(d.Rejected)+1]
		r := &d.Rejected[len(d.Rejected)-1]
		rejection(r, a, &offers[i], p, d.Remedy)
		if r.Reason.Code == CodeDecideRanked && chosenKey >= 0 && clientIPKey(&offers[i]) > chosenKey {
			r.Reason = reasonDecideAddress
		}
	}
	return d
}

// decisionStorage allocates what a Decision points to, the chosen offer's costs and the
// rejections of the other n offers, as one object when n is small (every dialect makes at most
// five offers today): Decide made two allocations per exposure at risk, and they were a third
// of its time (BenchmarkAssessDecide). Exact sizes, so no byte is spent on unused room.
func decisionStorage(n int) (*Costs, []Rejection) {
	switch n {
	case 1:
		return packed(func(r *[1]Rejection) []Rejection { return r[:0] })
	case 2:
		return packed(func(r *[2]Rejection) []Rejection { return r[:0] })
	case 3:
		return packed(func(r *[3]Rejection) []Rejection { return r[:0] })
	case 4:
		return packed(func(r *[4]Rejection) []Rejection { return r[:0] })
	}
	return new(Costs), make([]Rejection, 0, n)
}

// packed allocates the costs and an array of rejections (A) as one object.
func packed[A any](slice func(*A) []Rejection) (*Costs, []Rejection) {
	s := new(struct {
		c Costs
		r A
	})
	return &s.c, slice(&s.r)
}

func eligible(a *Assessment, o *Offer, p Policy) bool {
	if a.Layer == Layer7 && o.Remedy == InterceptVIP {
		return false
	}
	if keepsOffLB(a, o) {
		return false
	}
	for _, u := range o.Unmet {
		switch {
		case u.Kind == PreconditionAllowlist && p.AllowTickets:
		case u.Kind == PreconditionImmutable && p.AllowDisruptive:
		default:
			return false
		}
	}
	if o.Costs.NewObject && !p.AllowDisruptive {
		return false
	}
	return true
}

// keepsOffLB reports whether the offer would leave in-cluster traffic off the LB (the VIP path,
// or clients steered to the Service) while the backends need it to pass through the LB.
func keepsOffLB(a *Assessment, o *Offer) bool {
	return a.NeedsLB == Yes && o.Path != PathProxy
}

// rejection fills r (zero) with why o was not chosen.
func rejection(r *Rejection, a *Assessment, o *Offer, p Policy, chosen Remedy) {
	r.Remedy = o.Remedy
	switch {
	case a.Layer == Layer7 && o.Remedy == InterceptVIP:
		r.Reason = reasonDecideL7
	case keepsOffLB(a, o):
		r.Reason = reasonDecideOffLB
	case o.Costs.NewObject && !p.AllowDisruptive:
		r.Reason = reasonDecideDisrupt
	case len(o.Unmet) > 0 && !eligible(a, o, p):
		// The first unmet precondition that the policy does not waive explains it best.
		r.Reason = o.Unmet[0].Reason
		first := true
		for _, u := range o.Unmet {
			if u.Kind == PreconditionAllowlist && p.AllowTickets || u.Kind == PreconditionImmutable && p.AllowDisruptive {
				continue
			}
			r.Unmet = append(r.Unmet, u)
			if !first {
				continue
			}
			first = false
			r.Reason = u.Reason
			if u.Kind == PreconditionAllowlist {
				r.Reason.Message = reasonDecideTicket.Message + " " + u.Reason.Message
			}
		}
	default:
		r.RankedBelow, r.Reason = chosen, reasonDecideRanked
	}
}

// rank orders offers: lower is better. The preference key dominates the documented order.
func rank(o *Offer, p Policy) int {
	base := 5
	order := [...]Remedy{InterceptVIP, ThroughLB, LBSourceNAT, NodeSeparation, DNSSteering}
	for i, r := range order {
		if r == o.Remedy {
			base = i
		}
	}
	key := 0
	switch p.Prefer {
	case PreferSourceIP:
		key = clientIPKey(o)
	case PreferLBFeatures:
		if o.Costs.LosesLBFeatures {
			key = 1
		}
	}
	return key*10 + base
}

// clientIPKey orders offers by what they leave of the client address: kept, then carried in
// a PROXY header or X-Forwarded-For, then lost or unknown.
func clientIPKey(o *Offer) int {
	switch o.Costs.ClientIP {
	case ClientIPKept:
		return 0
	case ClientIPProxyProtocol, ClientIPForwardedFor:
		return 1
	}
	return 2
}

// codeThroughLBLoops is the reason core/dialect's ThroughLBOffer gives when the path through
// the LB can still loop: the remedy can be carried out, and fails only the connections that
// land on the client's own node.
const codeThroughLBLoops Code = "through-lb-would-loop"

// failsLeast compares paths by what fails when today's path fails every in-cluster connection
// (a protocol error on the VIP path): a through-lb offer, which takes traffic through the LB, blocked only
// by a missing fact (it may fail nothing) or by the loop it can still make (it fails only the
// connections that land on the client's node), fails less than today. The missing fact comes
// first; among equals the policy's rank decides. Offers blocked by anything else (a component
// too old, an allowlist the policy does not waive, a new object) stay out. It returns -1 when
// none qualifies.
func failsLeast(a *Assessment, offers []Offer, p Policy) int {
	best, bestClass := -1, 0
	for i := range offers {
		o := &offers[i]
		// Only through-lb leaves the VIP path, which is the one failing: the other remedies
		// change who loops on the LB, not whether the node intercepts.
		if o.Remedy != ThroughLB || o.Path != PathProxy || o.Costs.NewObject && !p.AllowDisruptive {
			continue
		}
		class, ok := 0, true
		for _, u := range o.Unmet {
			switch {
			case u.Kind == PreconditionUnknown:
			case u.Reason.Code == codeThroughLBLoops:
				class = 1
			case u.Kind == PreconditionAllowlist && p.AllowTickets, u.Kind == PreconditionImmutable && p.AllowDisruptive:
			default:
				ok = false
			}
		}
		if !ok {
			continue
		}
		if best < 0 || class < bestClass || class == bestClass && rank(o, p) < rank(&offers[best], p) {
			best, bestClass = i, class
		}
	}
	return best
}

// fallbackDecision is the tentative decision for failsLeast's pick: it names what to confirm.
func fallbackDecision(o *Offer, p Policy) Decision {
	costs := o.Costs
	costs.Tickets = slices.Clone(costs.Tickets)
	why := "Today every in-cluster connection fails (protocol-error); " + string(o.Remedy) + " fails fewer: " + o.Reason.Message
	var confirm []string
	for _, u := range o.Unmet {
		if u.Kind == PreconditionAllowlist && p.AllowTickets || u.Kind == PreconditionImmutable && p.AllowDisruptive {
			continue
		}
		confirm = append(confirm, u.Reason.Message)
	}
	if len(confirm) > 0 {
		why += " Confirm first: " + strings.Join(confirm, " ")
	}
	d := Decision{Remedy: o.Remedy, Offer: o.ID, Path: o.Path, Why: why, Action: o.Action, Costs: &costs, Tentative: true,
		Reason: ruleDecideFailsLeast.Because(why)}
	for _, u := range o.Unmet {
		if u.Kind == PreconditionAllowlist {
			d.Tickets = append(d.Tickets, u.Capability)
		}
	}
	return d
}
