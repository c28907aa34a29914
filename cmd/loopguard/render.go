package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	yaml3 "go.yaml.in/yaml/v3"
)

func render(w io.Writer, format string, rep *Report) error {
	bw := bufio.NewWriterSize(w, 64*1024)
	var err error
	switch format {
	case "json":
		err = writeReportJSON(bw, rep)
	case "yaml":
		err = renderYAML(bw, rep)
	default:
		err = renderTable(bw, rep)
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

// renderJSON is the reference encoding of a report (assess's, or plan's and apply's);
// writeReportJSON writes the same bytes faster for assess's.
func renderJSON(w io.Writer, rep any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// Actions carry shell-like text ("<", "&"); keep it readable.
	enc.SetEscapeHTML(false)
	return enc.Encode(rep)
}

// renderYAML writes the same document as renderJSON, in YAML, keeping the JSON field order
// (a round trip through a map would sort the keys).
func renderYAML(w io.Writer, rep any) error {
	var buf bytes.Buffer
	if err := renderJSON(&buf, rep); err != nil {
		return err
	}
	var doc yaml3.Node
	if err := yaml3.Unmarshal(buf.Bytes(), &doc); err != nil {
		return err
	}
	plain(&doc)
	enc := yaml3.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	return enc.Close()
}

// plain drops the JSON styles (quotes, flow collections); the encoder quotes what needs it.
func plain(n *yaml3.Node) {
	n.Style = 0
	for _, c := range n.Content {
		plain(c)
	}
}

func percent(p *float64) string {
	if p == nil {
		return "?"
	}
	return strconv.FormatFloat(*p*100, 'f', -1, 64) + "%"
}

// symptomColumn: with the risk unknown there is no symptom yet, only the one a loop would
// have; saying it plainly keeps a row from reading as a diagnosis.
func symptomColumn(r *Result) string {
	if r.Risk == "unknown" && r.Symptom != "none" && r.Symptom != "" {
		return "unknown (" + r.Symptom + " if it loops)"
	}
	if r.Risk == "unknown" {
		return "unknown"
	}
	return r.Symptom
}

func loopColumn(r *Result) string {
	s := percent(r.LoopProbability)
	if r.DeclaredClientsLoopProbability != nil {
		s += " (clients " + percent(r.DeclaredClientsLoopProbability) + ")"
	}
	return s
}

func sourceColumn(r *Result) string {
	s := r.SourceAddress
	if r.SourceAddressValue != "" {
		s += " " + r.SourceAddressValue
	}
	if r.ClientIP != "unknown" && r.ClientIP != "" {
		s += " (" + clientIPText(r.ClientIP) + ")"
	}
	return s
}

// clientIPText says what becomes of the client's address.
func clientIPText(c string) string {
	switch c {
	case "proxy-protocol":
		return "client IP via PROXY protocol"
	case "x-forwarded-for":
		return "client IP via X-Forwarded-For"
	}
	return "client IP " + c
}

func remedyColumn(d *Decision) string {
	if d.Path == nil {
		return d.Remedy
	}
	return d.Remedy + " → " + *d.Path
}

// commonNotes are the note codes every result carries (a cluster-wide remark, such as super
// nodes not being behind the CLB): the table says them once, below, instead of on every row.
// A code every result carries with a message of its own (VKE's verification names each
// Service and its mode) is common too, but its message is printed per object.
func commonNotes(rs []Result) map[string]bool {
	if len(rs) < 2 {
		return nil
	}
	count := map[string]int{}
	for _, r := range rs {
		seen := map[string]bool{}
		for _, n := range r.Notes {
			if !seen[n.Code] {
				seen[n.Code] = true
				count[n.Code]++
			}
		}
	}
	out := map[string]bool{}
	for code, n := range count {
		if n == len(rs) {
			out[code] = true
		}
	}
	return out
}

// noteMessage is the first message of a result's note with this code.
func noteMessage(r *Result, code string) string {
	for _, n := range r.Notes {
		if n.Code == code {
			return n.Message
		}
	}
	return ""
}

// writeCommonNotes says each common note once: in one line when every object's message is
// the same, else one line per object, so that no object is told another's check.
func writeCommonNotes(w io.Writer, rs []Result, common map[string]bool) {
	for _, n := range rs[0].Notes {
		if !common[n.Code] {
			continue
		}
		same := true
		for i := range rs {
			same = same && noteMessage(&rs[i], n.Code) == n.Message
		}
		if same {
			fmt.Fprintf(w, "Every object: %s: %s\n", n.Code, n.Message)
			continue
		}
		fmt.Fprintf(w, "Every object: %s:\n", n.Code)
		for i := range rs {
			fmt.Fprintf(w, "  %s: %s\n", objectColumn(rs[i].Object), noteMessage(&rs[i], n.Code))
		}
	}
}

// notesColumn is a few words; the details are below the table and in -o json.
func notesColumn(r *Result, common map[string]bool) string {
	var parts []string
	if r.Decision.Tentative {
		parts = append(parts, "tentative")
	}
	if len(r.Missing) > 0 {
		parts = append(parts, "unknown: "+strings.Join(r.Missing, ", "))
	}
	if len(r.Decision.Tickets) > 0 {
		parts = append(parts, "ticket: "+strings.Join(r.Decision.Tickets, ", "))
	}
	seen := map[string]bool{}
	for _, n := range r.Notes {
		if !common[n.Code] && !seen[n.Code] {
			// A code said once is enough: three earlier definitions are one duplicate note.
			seen[n.Code] = true
			parts = append(parts, n.Code)
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

func objectColumn(o ObjectRef) string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

func renderTable(w io.Writer, rep *Report) error {
	if len(rep.Results) == 0 {
		fmt.Fprintln(w, "No LoadBalancer Service or Ingress to assess in the inputs.")
	} else {
		common := commonNotes(rep.Results)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "OBJECT\tPROVIDER\tRISK\tSYMPTOM\tLOOPS PER CONNECTION\tBACKEND SEES\tREMEDY → PATH\tNOTES")
		for i := range rep.Results {
			r := &rep.Results[i]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", objectColumn(r.Object), r.Provider, r.Risk, symptomColumn(r),
				loopColumn(r), sourceColumn(r), remedyColumn(&r.Decision), notesColumn(r, common))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		writeCommonNotes(w, rep.Results, common)
		first := true
		for i := range rep.Results {
			r := &rep.Results[i]
			if r.Decision.Remedy == "none" && r.Risk == "none" {
				continue
			}
			if first {
				fmt.Fprintln(w, "\nWhat to do:")
				first = false
			}
			fmt.Fprintf(w, "  %s: %s\n", objectColumn(r.Object), remedyColumn(&r.Decision))
			fmt.Fprintf(w, "    why: %s\n", r.Decision.Why)
			if r.Decision.Action != "" {
				fmt.Fprintf(w, "    change: %s\n", indentLines(r.Decision.Action, "      "))
			}
			if c := r.Decision.Costs; c != nil {
				fmt.Fprintf(w, "    costs: %s\n", costsText(c))
			}
		}
	}
	if len(rep.Skipped) > 0 {
		fmt.Fprintln(w, "\nNot load-balancer exposures (skipped):")
		for _, s := range rep.Skipped {
			fmt.Fprintf(w, "  %s: %s\n", objectColumn(s.Object), s.Why)
		}
	}
	s := rep.Summary
	fmt.Fprintf(w, "\n%d assessed: %d at risk, %d unknown, %d no risk; %d skipped; %d input errors. Provider %s (%s).\n",
		s.Assessed, s.AtRisk, s.Unknown, s.None, s.Skipped, s.Errors, rep.Cluster.Provider, providerFromText(&rep.Cluster))
	if s.Assessed > 0 {
		fmt.Fprintln(w, "Reason codes: docs/reasons.md; -o json or -o yaml for every reason and rejected alternative.")
	}
	return nil
}

func providerFromText(c *ClusterInfo) string {
	switch c.ProviderFrom {
	case "detected":
		return "detected from " + strings.Join(c.Evidence, ", ")
	case "default":
		return "no cloud's marks in the inputs; pass --provider to choose"
	case "flag":
		return "--provider"
	}
	return "from the ClusterProfile"
}

func costsText(c *Costs) string {
	var parts []string
	if c.LosesLBFeatures {
		parts = append(parts, "in-cluster traffic loses the LB's features")
	} else {
		parts = append(parts, "keeps the LB's features")
	}
	parts = append(parts, clientIPText(c.ClientIP))
	if len(c.Tickets) > 0 {
		parts = append(parts, "needs allowlist "+strings.Join(c.Tickets, ", "))
	}
	if c.NewObject {
		parts = append(parts, "needs a new Service and LB address")
	}
	if c.ClientChange {
		parts = append(parts, "clients change the address they use")
	}
	if c.SchedulingChange {
		parts = append(parts, "workloads are rescheduled")
	}
	return strings.Join(parts, "; ")
}

func indentLines(s, indent string) string {
	s = strings.TrimRight(s, "\n")
	return strings.ReplaceAll(s, "\n", "\n"+indent)
}
