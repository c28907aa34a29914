package verify

import (
	"fmt"
	"strings"

	"github.com/loopguard/loopguard/core"
)

// Hop is one step of the path a connection takes.
type Hop struct {
	// What: client-pod, node, lb, backend-node, backend-pod.
	What  string `json:"what"`
	Label string `json:"label"`
}

// Path is the way a connection from a client Pod on one node takes to a backend, as the
// model sees it, and where it breaks.
type Path struct {
	Hops []Hop `json:"hops"`
	// Breaks is where and why the connection fails, empty when it does not.
	Breaks string `json:"breaks,omitempty"`
	// BreaksAt is the index of the hop where it breaks, when Breaks is set. (Not omitempty:
	// assess's JSON writer, encoding/json/v2, would not omit a zero number.)
	BreaksAt int `json:"breaksAt"`
}

// PathFor draws the path of a connection from a client Pod on clientNode to the exposure's LB
// address lb, landing on a backend on backendNode ("" when the LB picks a node without a
// backend of the client's), with the prediction's verdict.
func PathFor(e *core.Exposure, clientNode, backendNode, lb string, p Prediction) Path {
	client := Hop{"client-pod", "client Pod on " + orUnknown(clientNode)}
	node := Hop{"node", "node " + orUnknown(clientNode)}
	backend := Hop{"backend-pod", "backend Pod"}
	if e.Intercept == core.Yes {
		// The node answers for the LB address: the LB is never reached.
		path := Path{Hops: []Hop{client, {"node", "node " + orUnknown(clientNode) + " (kube-proxy answers for " + lb + ")"}, {"backend-node", "node " + orUnknown(backendNode)}, backend}}
		if p.Behaviour == ProtocolError {
			path.Breaks, path.BreaksAt = "the backend rejects the connection: the LB's PROXY header never came (the node answered for the LB)", 3
		}
		return path
	}
	lbHop := Hop{"lb", "LB " + lb}
	if e.LBSourceNAT == core.Yes {
		lbHop.Label += " (source NAT)"
	}
	path := Path{Hops: []Hop{client, node, lbHop, {"backend-node", "node " + orUnknown(backendNode)}, backend}}
	switch p.Behaviour {
	case Loops, Intermittent:
		path.Breaks = fmt.Sprintf("the backend's reply goes straight to the client Pod on %s, not back through the LB: the client drops it (the loop)", orUnknown(clientNode))
		if p.Behaviour == Intermittent {
			path.Breaks = fmt.Sprintf("when the LB picks node %s (%.0f%% of connections) ", orUnknown(clientNode), 100*p.LoopProbability) + path.Breaks
		}
		path.BreaksAt = 4
	case ProtocolError:
		path.Breaks, path.BreaksAt = "the backend rejects the connection", 4
	}
	return path
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// Text is the path as one terminal line: hops joined by arrows, ✗ and why where it breaks.
func (p Path) Text() string {
	var b strings.Builder
	for i, h := range p.Hops {
		if i > 0 {
			b.WriteString(" ──► ")
		}
		b.WriteString(h.Label)
		if p.Breaks != "" && i == p.BreaksAt {
			b.WriteString(" ✗")
		}
	}
	if p.Breaks != "" {
		b.WriteString("\n    ✗ " + p.Breaks)
	}
	return b.String()
}

// Mermaid is the path as a Mermaid flowchart (https://mermaid.js.org/syntax/flowchart.html).
func (p Path) Mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	for i, h := range p.Hops {
		fmt.Fprintf(&b, "  h%d[%q]\n", i, h.Label)
	}
	for i := 1; i < len(p.Hops); i++ {
		fmt.Fprintf(&b, "  h%d --> h%d\n", i-1, i)
	}
	if p.Breaks != "" {
		fmt.Fprintf(&b, "  h%d -. %q .-x h0\n", p.BreaksAt, "✗ "+p.Breaks)
		fmt.Fprintf(&b, "  style h%d stroke:#d33,stroke-width:3px\n", p.BreaksAt)
	}
	return b.String()
}
