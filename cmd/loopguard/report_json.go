package main

import "io"

// writeReportJSON writes the report as renderJSON's encoding/json would, field for field in
// the structs' order, honouring their omitempty tags.
func writeReportJSON(w io.Writer, rep *Report) error {
	j := newJW(w)
	j.begin('{')
	j.strField("apiVersion", rep.APIVersion)
	j.strField("kind", rep.Kind)
	j.field("results")
	if rep.Results == nil {
		j.null()
	} else {
		j.begin('[')
		for i := range rep.Results {
			j.item()
			j.result(&rep.Results[i])
		}
		j.end(']')
	}
	j.field("skipped")
	if rep.Skipped == nil {
		j.null()
	} else {
		j.begin('[')
		for i := range rep.Skipped {
			s := &rep.Skipped[i]
			j.item()
			j.begin('{')
			j.field("object")
			j.objectRef(&s.Object)
			j.strField("location", s.Location)
			j.strField("why", s.Why)
			j.end('}')
		}
		j.end(']')
	}
	j.field("errors")
	if rep.Errors == nil {
		j.null()
	} else {
		j.begin('[')
		for i := range rep.Errors {
			e := &rep.Errors[i]
			j.item()
			j.begin('{')
			j.strField("file", e.File)
			j.field("line")
			j.integer(e.Line)
			j.strFieldOmitEmpty("object", e.Object)
			j.strFieldOmitEmpty("field", e.Field)
			j.strField("message", e.Message)
			j.end('}')
		}
		j.end(']')
	}
	j.field("cluster")
	j.begin('{')
	c := &rep.Cluster
	j.strField("provider", c.Provider)
	j.strField("providerFrom", c.ProviderFrom)
	if len(c.Evidence) > 0 {
		j.field("evidence")
		j.strings(c.Evidence)
	}
	if len(c.Profile) > 0 {
		j.field("profile")
		j.strings(c.Profile)
	}
	j.end('}')
	j.field("summary")
	j.begin('{')
	s := &rep.Summary
	for _, f := range []struct {
		name string
		v    int
	}{{"assessed", s.Assessed}, {"atRisk", s.AtRisk}, {"unknown", s.Unknown}, {"none", s.None}, {"skipped", s.Skipped}, {"errors", s.Errors}} {
		j.field(f.name)
		j.integer(f.v)
	}
	j.end('}')
	j.end('}')
	j.buf = append(j.buf, '\n')
	return j.flush()
}

func (j *jw) objectRef(o *ObjectRef) {
	j.begin('{')
	j.strField("kind", o.Kind)
	j.strField("namespace", o.Namespace)
	j.strField("name", o.Name)
	j.end('}')
}

func (j *jw) reason(r *Reason) {
	j.begin('{')
	j.strField("code", r.Code)
	j.strField("message", r.Message)
	j.strField("source", r.Source)
	j.end('}')
}

func (j *jw) reasons(rs []Reason) {
	if rs == nil {
		j.null()
		return
	}
	j.begin('[')
	for i := range rs {
		j.item()
		j.reason(&rs[i])
	}
	j.end(']')
}

func (j *jw) result(r *Result) {
	j.begin('{')
	j.field("object")
	j.objectRef(&r.Object)
	j.strField("location", r.Location)
	j.strField("provider", r.Provider)
	j.strField("risk", r.Risk)
	if len(r.Missing) > 0 {
		j.field("missing")
		j.strings(r.Missing)
	}
	j.strField("symptom", r.Symptom)
	j.strPtrField("path", r.Path)
	j.floatPtrField("loopProbability", r.LoopProbability)
	j.floatPtrField("declaredClientsLoopProbability", r.DeclaredClientsLoopProbability)
	j.strField("sourceAddress", r.SourceAddress)
	j.strField("clientIP", r.ClientIP)
	j.strFieldOmitEmpty("sourceAddressValue", r.SourceAddressValue)
	j.field("reasons")
	j.reasons(r.Reasons)
	j.field("decision")
	j.decision(&r.Decision)
	if h := r.Hairpin; h != nil {
		j.field("hairpin")
		j.begin('{')
		j.field("works")
		if h.Works == nil {
			j.null()
		} else {
			j.boolean(*h.Works)
		}
		j.strField("sourceAddress", h.SourceAddress)
		j.strField("clientIP", h.ClientIP)
		j.field("reasons")
		j.reasons(h.Reasons)
		j.end('}')
	}
	j.field("notes")
	j.reasons(r.Notes)
	j.end('}')
}

func (j *jw) decision(d *Decision) {
	j.begin('{')
	j.strField("remedy", d.Remedy)
	j.strPtrField("path", d.Path)
	j.strField("why", d.Why)
	j.boolField("tentative", d.Tentative)
	j.strFieldOmitEmpty("action", d.Action)
	if c := d.Costs; c != nil {
		j.field("costs")
		j.begin('{')
		j.boolField("losesLBFeatures", c.LosesLBFeatures)
		j.strField("clientIP", c.ClientIP)
		if len(c.Tickets) > 0 {
			j.field("tickets")
			j.strings(c.Tickets)
		}
		j.boolField("newObject", c.NewObject)
		j.boolField("clientChange", c.ClientChange)
		j.boolField("schedulingChange", c.SchedulingChange)
		j.end('}')
	}
	if len(d.Tickets) > 0 {
		j.field("tickets")
		j.strings(d.Tickets)
	}
	j.field("reason")
	j.reason(&d.Reason)
	j.field("rejected")
	if d.Rejected == nil {
		j.null()
	} else {
		j.begin('[')
		for i := range d.Rejected {
			rj := &d.Rejected[i]
			j.item()
			j.begin('{')
			j.strField("remedy", rj.Remedy)
			j.strFieldOmitEmpty("rankedBelow", rj.RankedBelow)
			j.field("reason")
			j.reason(&rj.Reason)
			j.end('}')
		}
		j.end(']')
	}
	j.end('}')
}
