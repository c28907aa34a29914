package main

import (
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/loopguard/loopguard/adapters/verify"
	"github.com/loopguard/loopguard/core"
)

// Diagram is the path a connection from the worst-placed client Pod takes (on a node holding
// a backend, when the placement is known): client Pod, node, LB, backend node, backend Pod,
// and where it breaks; Mermaid is the same as a flowchart. assess and scan add it with
// --diagram; verify always has it, per placement.
type Diagram struct {
	Path    verify.Path `json:"path"`
	Text    string      `json:"text"`
	Mermaid string      `json:"mermaid"`
}

func addDiagramFlag(cmd *cobra.Command, o *assessOptions) {
	cmd.Flags().BoolVar(&o.diagram, "diagram", false, "add, per exposure, the path a connection from a client Pod on a backend's node takes and where it breaks (a terminal line; with -o json|yaml also Mermaid)")
}

// attachDiagrams draws each result's path. It evaluates the exposures again, which costs
// only when --diagram is given.
func attachDiagrams(in *inputs, rep *Report) {
	byRef := map[ObjectRef]int{}
	for i := range rep.Results {
		byRef[rep.Results[i].Object] = i
	}
	d := in.entry.newDialect()
	for _, x := range exposures(in.set) {
		res, err := evaluate(d, x.obj.Object, in.cluster, in.profile.Policy)
		if err != nil {
			continue
		}
		i, ok := byRef[refOf(res.Exposure.Object)]
		if !ok {
			continue
		}
		e := res.Exposure
		node := ""
		for _, b := range e.Placement.Backends {
			if b.Count > 0 && (node == "" || b.Node < node) {
				node = b.Node
			}
		}
		p := verify.Predict(&e, node)
		if node == "" {
			p = worstCase(&res.Assessment)
		}
		path := verify.PathFor(&e, node, node, lbAddress(x.obj.Object), p)
		rep.Results[i].Diagram = &Diagram{Path: path, Text: path.Text(), Mermaid: path.Mermaid()}
	}
}

// worstCase is the prediction for the worst-placed client when no node is known.
func worstCase(a *core.Assessment) verify.Prediction {
	p := verify.Prediction{Risk: a.Risk, Symptom: a.Symptom}
	switch {
	case a.Risk == core.RiskNone:
		p.Behaviour = verify.Works
	case a.Risk == core.RiskAtRisk && a.Symptom == core.SymptomProtocolError:
		p.Behaviour = verify.ProtocolError
	case a.Risk == core.RiskAtRisk && a.WorstCase.Known() && a.WorstCase.Value() >= 1:
		p.Behaviour, p.LoopProbability = verify.Loops, 1
	case a.Risk == core.RiskAtRisk && a.WorstCase.Known() && a.WorstCase.Value() > 0:
		p.Behaviour, p.LoopProbability = verify.Intermittent, a.WorstCase.Value()
	default:
		p.Behaviour = verify.Unpredicted
	}
	return p
}

// lbAddress is the first address the object's LB publishes, or a placeholder.
func lbAddress(obj any) string {
	var ingress []corev1.LoadBalancerIngress
	port := 80
	switch o := obj.(type) {
	case *corev1.Service:
		ingress = o.Status.LoadBalancer.Ingress
		if len(o.Spec.Ports) > 0 {
			port = int(o.Spec.Ports[0].Port)
		}
	case *networkingv1.Ingress:
		for _, in := range o.Status.LoadBalancer.Ingress {
			ingress = append(ingress, corev1.LoadBalancerIngress{IP: in.IP, Hostname: in.Hostname})
		}
	}
	for _, in := range ingress {
		for _, h := range []string{in.IP, in.Hostname} {
			if h != "" {
				return net.JoinHostPort(h, strconv.Itoa(port))
			}
		}
	}
	return "VIP:" + strconv.Itoa(port)
}

// printDiagrams is the table output's paths section.
func printDiagrams(w io.Writer, rep *Report) {
	fmt.Fprintln(w, "\nPaths (a client Pod on a backend's node):")
	for _, r := range rep.Results {
		if r.Diagram == nil {
			continue
		}
		fmt.Fprintf(w, "  %s %s/%s: %s\n", r.Object.Kind, r.Object.Namespace, r.Object.Name, indentLines(r.Diagram.Text, "  "))
	}
}
