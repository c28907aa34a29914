package main

import (
	"math"
	"strconv"

	"github.com/loopguard/loopguard/core"
)

// The report is the CLI's output contract for -o json and -o yaml. It is defined here, field
// by field, rather than by marshalling core's types, so that the core can change its internals
// without changing what scripts read. Fields are added, never renamed or removed, within
// ReportAPIVersion.
const (
	ReportAPIVersion = "loopguard.io/v1alpha1"
	ReportKind       = "AssessReport"
)

// Report is everything assess found.
type Report struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Results has one entry per LoadBalancer Service and Ingress, ordered by namespace, kind
	// and name.
	Results []Result `json:"results"`
	// Skipped lists objects of an exposable kind that are not load-balancer exposures (a
	// ClusterIP Service, an Ingress of another class), ordered like Results.
	Skipped []Skipped `json:"skipped"`
	// Errors lists inputs that could not be read, parsed or translated, by file and line.
	Errors  []InputError `json:"errors"`
	Cluster ClusterInfo  `json:"cluster"`
	Summary Summary      `json:"summary"`
}

// ClusterInfo says which dialect was used and why.
type ClusterInfo struct {
	Provider string `json:"provider"`
	// ProviderFrom is flag, profile, detected or default.
	ProviderFrom string `json:"providerFrom"`
	// Evidence names up to a few input objects that showed the provider, when detected.
	Evidence []string `json:"evidence,omitempty"`
	// Profile is where the ClusterProfile came from (files, and "flags" when flags overrode it).
	Profile []string `json:"profile,omitempty"`
}

// Summary counts the results.
type Summary struct {
	Assessed int `json:"assessed"`
	AtRisk   int `json:"atRisk"`
	Unknown  int `json:"unknown"`
	None     int `json:"none"`
	Skipped  int `json:"skipped"`
	Errors   int `json:"errors"`
}

// ObjectRef names a Kubernetes object.
type ObjectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Reason is one documented rule applied to the object (docs/reasons.md lists every code).
type Reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Source  string `json:"source"`
}

// Result is the verdict and decision for one exposure.
type Result struct {
	Object ObjectRef `json:"object"`
	// Location is the file and line the object was read from.
	Location string `json:"location"`
	Provider string `json:"provider"`
	// Risk is none, at-risk or unknown.
	Risk string `json:"risk"`
	// Missing names the facts an unknown risk needs.
	Missing []string `json:"missing,omitempty"`
	// Symptom is none, connection-failure, intermittent or delay (~4 s, layer 7). With risk
	// unknown it is the symptom a loop would have (the table prints it as such).
	Symptom string `json:"symptom"`
	// Path is the KEP-1860 path in-cluster traffic takes now: VIP, Proxy, or null when it
	// does not apply or is not known.
	Path *string `json:"path"`
	// LoopProbability is the per-connection loop probability for the worst-placed client;
	// null when unknown.
	LoopProbability *float64 `json:"loopProbability"`
	// DeclaredClientsLoopProbability is the same for the declared client Pods (profile
	// clients or the loopguard.io/clients annotation); null when none are declared or unknown.
	DeclaredClientsLoopProbability *float64 `json:"declaredClientsLoopProbability"`
	// SourceAddress is what the backend sees as the source of an in-cluster connection:
	// client-pod, node-address, lb-address, service-loopback or unknown.
	SourceAddress string `json:"sourceAddress"`
	// ClientIP says whether the backend can learn the client's address: kept,
	// proxy-protocol, x-forwarded-for, lost or unknown.
	ClientIP string `json:"clientIP"`
	// SourceAddressValue is the fixed address when there is one (Cilium's 169.254.42.1).
	SourceAddressValue string   `json:"sourceAddressValue,omitempty"`
	Reasons            []Reason `json:"reasons"`
	Decision           Decision `json:"decision"`
	// Hairpin is the verdict for a backend calling its own Service, when the profile
	// describes the dataplane.
	Hairpin *Hairpin `json:"hairpin,omitempty"`
	// Notes are remarks that change no verdict.
	Notes []Reason `json:"notes"`
	// Diagram is the path a connection takes and where it breaks, with --diagram.
	Diagram *Diagram `json:"diagram,omitempty"`
}

// Decision is the remedy chosen under the policy, and why the others were not.
type Decision struct {
	// Remedy is none, intercept-vip, lb-snat, node-separation or dns-steering.
	Remedy string `json:"remedy"`
	// Path is the KEP-1860 path once the remedy is in place; null when unchanged or unknown.
	Path *string `json:"path"`
	Why  string  `json:"why"`
	// Tentative: the risk is unknown; the decision assumes a loop and must not be applied
	// until the missing facts are known.
	Tentative bool `json:"tentative"`
	// Action is the concrete change in the cloud's terms.
	Action string `json:"action,omitempty"`
	Costs  *Costs `json:"costs,omitempty"`
	// Tickets are allowlists to request from the cloud's support before applying.
	Tickets  []string   `json:"tickets,omitempty"`
	Reason   Reason     `json:"reason"`
	Rejected []Rejected `json:"rejected"`
}

// Costs are what the chosen remedy takes from the user.
type Costs struct {
	LosesLBFeatures  bool     `json:"losesLBFeatures"`
	ClientIP         string   `json:"clientIP"`
	Tickets          []string `json:"tickets,omitempty"`
	NewObject        bool     `json:"newObject"`
	ClientChange     bool     `json:"clientChange"`
	SchedulingChange bool     `json:"schedulingChange"`
}

// Rejected is an offered remedy that was not chosen.
type Rejected struct {
	Remedy string `json:"remedy"`
	// RankedBelow names the chosen remedy when this one could have been carried out.
	RankedBelow string `json:"rankedBelow,omitempty"`
	Reason      Reason `json:"reason"`
}

// Hairpin is the verdict for a Pod calling its own Service (seed 002).
type Hairpin struct {
	// Works is true, false or null (unknown).
	Works         *bool    `json:"works"`
	SourceAddress string   `json:"sourceAddress"`
	ClientIP      string   `json:"clientIP"`
	Reasons       []Reason `json:"reasons"`
}

// Skipped is an object that is not a load-balancer exposure.
type Skipped struct {
	Object   ObjectRef `json:"object"`
	Location string    `json:"location"`
	Why      string    `json:"why"`
}

// InputError is an input that could not be read, parsed or translated.
type InputError struct {
	File string `json:"file"`
	// Line is 0 when the whole file is meant.
	Line    int    `json:"line"`
	Object  string `json:"object,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func (e InputError) String() string {
	s := e.File
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
	}
	if e.Object != "" {
		s += ": " + e.Object
	}
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s + ": " + e.Message
}

func refOf(r core.ObjectRef) ObjectRef {
	return ObjectRef{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

func reasonOf(r core.Reason) Reason {
	return Reason{Code: string(r.Code), Message: r.Message, Source: r.Source}
}

func reasonsOf(rs []core.Reason) []Reason {
	out := make([]Reason, len(rs))
	for i, r := range rs {
		out[i] = reasonOf(r)
	}
	return out
}

func pathOf(p core.Path) *string {
	if p == core.PathUnknown {
		return nil
	}
	s := string(p)
	return &s
}

// probabilityOf rounds to four decimals: the model's inputs (node and backend counts) do not
// carry more precision, and stable figures keep golden files readable.
func probabilityOf(p core.Probability) *float64 {
	if !p.Known() {
		return nil
	}
	v := math.Round(p.Value()*1e4) / 1e4
	return &v
}

func clientIPOf(c core.ClientIP) string {
	if c == core.ClientIPUnknown {
		return "unknown"
	}
	return string(c)
}

func capsOf(cs []core.Capability) []string {
	if len(cs) == 0 {
		return nil
	}
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

// resultOf converts the core's evaluation into the report's contract.
func resultOf(r *core.Result, location string) Result {
	a := &r.Assessment
	d := &r.Decision
	out := Result{
		Object:                         refOf(r.Exposure.Object),
		Location:                       location,
		Provider:                       r.Exposure.Provider,
		Risk:                           string(a.Risk),
		Missing:                        a.Missing,
		Symptom:                        string(a.Symptom),
		Path:                           pathOf(a.Path),
		LoopProbability:                probabilityOf(a.WorstCase),
		DeclaredClientsLoopProbability: probabilityOf(a.DeclaredClients),
		SourceAddress:                  string(a.Source.Kind),
		ClientIP:                       clientIPOf(a.Source.ClientIP),
		SourceAddressValue:             a.Source.Address,
		Reasons:                        reasonsOf(a.Reasons),
		Notes:                          reasonsOf(r.Exposure.Notes),
		Decision:                       decisionOf(d),
	}
	if r.Exposure.Placement.ClientNodes == nil {
		// No client was declared: core.Assess reports 0 for a verdict of no risk, but the
		// report's contract is null for "no declared clients" (see the field's comment).
		out.DeclaredClientsLoopProbability = nil
	}
	if out.SourceAddress == "" {
		out.SourceAddress = string(core.SourceUnknown)
	}
	if h := a.Hairpin; h != nil {
		hp := &Hairpin{SourceAddress: string(h.Source.Kind), ClientIP: clientIPOf(h.Source.ClientIP), Reasons: reasonsOf(h.Reasons)}
		if h.Works.Known() {
			w := h.Works == core.Yes
			hp.Works = &w
		}
		out.Hairpin = hp
	}
	return out
}

// decisionOf converts the core's decision into the report's contract.
func decisionOf(d *core.Decision) Decision {
	out := Decision{
		Remedy:    string(d.Remedy),
		Path:      pathOf(d.Path),
		Why:       d.Why,
		Tentative: d.Tentative,
		Action:    d.Action,
		Tickets:   capsOf(d.Tickets),
		Reason:    reasonOf(d.Reason),
		Rejected:  make([]Rejected, 0, len(d.Rejected)),
	}
	if d.Costs != nil {
		out.Costs = &Costs{
			LosesLBFeatures:  d.Costs.LosesLBFeatures,
			ClientIP:         clientIPOf(d.Costs.ClientIP),
			Tickets:          capsOf(d.Costs.Tickets),
			NewObject:        d.Costs.NewObject,
			ClientChange:     d.Costs.ClientChange,
			SchedulingChange: d.Costs.SchedulingChange,
		}
	}
	for _, rj := range d.Rejected {
		out.Rejected = append(out.Rejected, Rejected{
			Remedy: string(rj.Remedy), RankedBelow: string(rj.RankedBelow), Reason: reasonOf(rj.Reason)})
	}
	return out
}
