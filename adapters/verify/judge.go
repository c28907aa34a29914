package verify

import (
	"fmt"
	"math"

	"github.com/loopguard/loopguard/adapters/verify/probe"
	"github.com/loopguard/loopguard/core"
)

// Behaviour is what connections from one client placement do, predicted or observed.
type Behaviour string

const (
	// Works: every connection is answered.
	Works Behaviour = "works"
	// Loops: every connection fails the loop's way: the dial times out (an LB forwarding in
	// the kernel) or the request gets no answer (an LB proxying with the client's address).
	Loops Behaviour = "loops"
	// Intermittent: some connections loop, the rest are answered (the LB picks a node per
	// connection, and only some picks land on the client's node).
	Intermittent Behaviour = "intermittent"
	// ProtocolError: every connection is rejected by a backend that requires what only the LB
	// adds (a PROXY header), because the node answered for the LB.
	ProtocolError Behaviour = "protocol-error"
	// Fails: connections fail in a way neither the loop nor a protocol error explains
	// (refused, unreachable, closed): observed only.
	Fails Behaviour = "fails"
	// Unpredicted: core.Assess has no verdict for this placement (a fact is missing).
	Unpredicted Behaviour = "unknown"
)

// Prediction is core.Assess's verdict for a client on one node.
type Prediction struct {
	Behaviour Behaviour `json:"behaviour"`
	// LoopProbability is the per-connection probability of the loop (Intermittent).
	LoopProbability float64      `json:"loopProbability,omitempty"`
	Risk            core.Risk    `json:"risk"`
	Symptom         core.Symptom `json:"symptom"`
}

// Predict is core.Assess's verdict for one client Pod on clientNode: the exposure as given,
// with that Pod as its only declared client.
func Predict(e *core.Exposure, clientNode string) Prediction {
	x := *e
	x.Placement.ClientNodes = []string{clientNode}
	a := core.Assess(&x)
	p := Prediction{Risk: a.Risk, Symptom: a.Symptom}
	switch {
	case a.Risk == core.RiskNone:
		p.Behaviour = Works
	case a.Risk == core.RiskAtRisk && a.Symptom == core.SymptomProtocolError:
		p.Behaviour = ProtocolError
	case a.Risk == core.RiskAtRisk && a.DeclaredClients.Known():
		switch v := a.DeclaredClients.Value(); {
		case v >= 1:
			p.Behaviour, p.LoopProbability = Loops, 1
		case v <= 0:
			p.Behaviour = Works
		default:
			p.Behaviour, p.LoopProbability = Intermittent, v
		}
	default:
		p.Behaviour = Unpredicted
	}
	return p
}

// Observation is what a probe saw from one placement, reduced to a Behaviour.
type Observation struct {
	Behaviour Behaviour `json:"behaviour"`
	// Connections is the number of connections made, Counts their outcomes.
	Connections int                   `json:"connections"`
	Counts      map[probe.Outcome]int `json:"counts"`
}

// loopOutcomes are the ways a looping connection ends (package probe says why).
var loopOutcomes = []probe.Outcome{probe.Timeout, probe.NoAnswer}

// Observe reduces probe reports (one per address the LB publishes) to a Behaviour.
func Observe(targets ...probe.TargetReport) Observation {
	o := Observation{Counts: map[probe.Outcome]int{}}
	for _, t := range targets {
		for out, n := range t.Counts {
			o.Counts[out] += n
			o.Connections += n
		}
	}
	ok, rejected := o.Counts[probe.OK], o.Counts[probe.ProxyRejected]
	loops := 0
	for _, l := range loopOutcomes {
		loops += o.Counts[l]
	}
	switch {
	case o.Connections == 0:
		o.Behaviour = Unpredicted
	case ok == o.Connections:
		o.Behaviour = Works
	case loops == o.Connections:
		o.Behaviour = Loops
	case rejected == o.Connections:
		o.Behaviour = ProtocolError
	case ok+loops == o.Connections:
		o.Behaviour = Intermittent
	default:
		o.Behaviour = Fails
	}
	return o
}

// unlikely is the chance below which an intermittent prediction is taken as contradicted by
// N connections that all behaved alike.
const unlikely = 0.01

// Agree says whether an observation agrees with a prediction, and why not. An unpredicted
// placement agrees with nothing and disagrees with nothing: ok is true, with a note.
func Agree(p Prediction, o Observation) (ok bool, why string) {
	if p.Behaviour == Unpredicted {
		return true, "no prediction to compare (a fact is missing)"
	}
	if p.Behaviour == Intermittent {
		n := float64(o.Connections)
		switch o.Behaviour {
		case Intermittent:
			return true, ""
		case Works:
			if pr := math.Pow(1-p.LoopProbability, n); pr < unlikely {
				return false, fmt.Sprintf("no connection looped, which has a %.2g%% chance at %.0f%% per connection", 100*pr, 100*p.LoopProbability)
			}
			return true, fmt.Sprintf("no connection of %d looped (%.0f%% per connection predicted)", o.Connections, 100*p.LoopProbability)
		case Loops:
			if pr := math.Pow(p.LoopProbability, n); pr < unlikely {
				return false, fmt.Sprintf("every connection looped, which has a %.2g%% chance at %.0f%% per connection", 100*pr, 100*p.LoopProbability)
			}
			return true, fmt.Sprintf("every connection of %d looped (%.0f%% per connection predicted)", o.Connections, 100*p.LoopProbability)
		}
	}
	if p.Behaviour == o.Behaviour {
		return true, ""
	}
	return false, fmt.Sprintf("predicted %s, observed %s (%s)", p.Behaviour, o.Behaviour, countsString(o.Counts))
}

func countsString(c map[probe.Outcome]int) string {
	s := ""
	for _, o := range probe.Outcomes {
		if c[o] > 0 {
			if s != "" {
				s += ", "
			}
			s += fmt.Sprintf("%d %s", c[o], o)
		}
	}
	if s == "" {
		return "no connections"
	}
	return s
}
