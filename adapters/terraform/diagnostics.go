package terraform

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/loopguard/loopguard/core"
)

// Severity of a Diagnostic.
type Severity int

const (
	// Error stops Terraform: nothing is written.
	Error Severity = iota
	// Warning is shown and Terraform goes on.
	Warning
)

func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// Attribute names of the resource that diagnostics point at. A provider's schema uses the same
// names (examples/terraform-provider does), so the CLI underlines the attribute at fault.
const (
	AttrKind            = "kind"
	AttrNamespace       = "namespace"
	AttrName            = "name"
	AttrPrefer          = "prefer"
	AttrAllowTickets    = "allow_tickets"
	AttrAllowDisruptive = "allow_disruptive"
	AttrAllowlists      = "allowlists"
	AttrRemedy          = "remedy"
	AttrPath            = "path"
	AttrManaged         = "managed"
)

// Diagnostic is what a Terraform provider shows for one problem or note: a one-line summary,
// the detail (with the reason code and the field when there is one) and the resource attribute
// at fault ("" for the resource as a whole). Providers convert it to their framework's type.
type Diagnostic struct {
	Severity  Severity
	Summary   string
	Detail    string
	Attribute string
	// Code is the reason code, when a rule is behind the diagnostic (docs/reasons.md).
	Code core.Code
}

func (d Diagnostic) String() string {
	s := d.Severity.String() + ": " + d.Summary
	if d.Attribute != "" {
		s += " (" + d.Attribute + ")"
	}
	return s
}

// Diagnostics is a list of diagnostics.
type Diagnostics []Diagnostic

// HasError reports whether any diagnostic is an error.
func (ds Diagnostics) HasError() bool {
	for _, d := range ds {
		if d.Severity == Error {
			return true
		}
	}
	return false
}

// blockerDiagnostic turns a blocked plan into an error diagnostic that says what to do, on the
// attribute the user can change to get past it.
func blockerDiagnostic(obj core.ObjectRef, b *core.Blocker) Diagnostic {
	d := Diagnostic{Severity: Error, Code: b.Code, Summary: obj.String() + ": " + b.Message}
	var detail []string
	switch b.Kind {
	case "not-allowlisted":
		d.Attribute = AttrAllowlists
		d.Summary = fmt.Sprintf("%s: the account is not allowlisted for %s", obj, b.Capability)
		if b.Ask != "" {
			detail = append(detail, "Ask the cloud's support for: "+b.Ask+".")
		}
		detail = append(detail, fmt.Sprintf("Once granted, list %q in %s; or choose another remedy with %s.", b.Capability, AttrAllowlists, AttrPrefer))
	case "precondition":
		if b.Component != "" {
			detail = append(detail, fmt.Sprintf("%s is %s; %s needs %s.", b.Component, orUnknown(b.Have), obj, b.Need))
		}
		detail = append(detail, "Declare the facts in the provider's profile, or upgrade the component, then plan again.")
	case "immutable":
		d.Attribute = AttrAllowDisruptive
		detail = append(detail, "The change needs a new object (a new load-balancer address); set "+AttrAllowDisruptive+" = true to accept it.")
	case "invalid":
		d.Attribute = AttrName
	case "unauthenticated":
		detail = append(detail, "The cloud refused the provider's credentials: check the provider's credentials and endpoint.")
	case "retry-later":
		detail = append(detail, fmt.Sprintf("Nothing was written. Apply again in %.0f s.", b.RetryAfterSeconds))
	}
	detail = append(detail, kindLine(b.Kind, b.Code))
	d.Detail = strings.Join(detail, "\n")
	return d
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// reasonsURL is the public page that explains every reason code.
const reasonsURL = "https://github.com/loopguard/loopguard/blob/main/docs/reasons.md"

func kindLine(kind string, code core.Code) string {
	s := "Kind: " + kind
	if code != "" {
		// A Terraform user has the provider, not the repository: the reason's page by address.
		s += "; reason code: " + string(code) + " (" + reasonsURL + ")"
	}
	return s
}

// errorDiagnostic turns an error from planning or applying into a diagnostic. written says what
// was written before the error, so the user knows nothing (or exactly what) was half-applied.
func errorDiagnostic(obj core.ObjectRef, what string, err error, written []core.Change) Diagnostic {
	b := core.BlockerOf(err)
	d := blockerDiagnostic(obj, b)
	d.Summary = what + " " + obj.String() + ": " + firstLine(b.Message)
	if b.Kind == "not-allowlisted" {
		d.Summary = fmt.Sprintf("%s %s: the cloud refused %s: the account is not allowlisted", what, obj, b.Capability)
		d.Detail = strings.Replace(d.Detail, fmt.Sprintf("Once granted, list %q in %s;", b.Capability, AttrAllowlists),
			fmt.Sprintf("The cloud says the account does not have %q yet, whatever %s lists: apply again once support grants it;", b.Capability, AttrAllowlists), 1)
	}
	var ie *core.InvalidError
	if errors.As(err, &ie) && len(ie.Errs) > 0 {
		d.Detail = "Field " + ie.Errs[0].Field + ": " + ie.Errs[0].Detail + "\n" + d.Detail
	}
	if len(written) == 0 {
		d.Detail += "\nNothing was written."
	} else {
		var ws []string
		for i := range written {
			ws = append(ws, "  "+written[i].String())
		}
		d.Detail += "\nWritten before the error (a second apply converges from here):\n" + strings.Join(ws, "\n")
	}
	return d
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// noteDiagnostics turns a plan's notes into warnings: consequences worth reading before
// applying, each with its reason code and source.
func noteDiagnostics(obj core.ObjectRef, notes []core.Reason) Diagnostics {
	var out Diagnostics
	for _, n := range notes {
		detail := "Reason code: " + string(n.Code)
		if n.Source != "" {
			detail += "; source: " + n.Source
		}
		out = append(out, Diagnostic{Severity: Warning, Code: n.Code, Summary: obj.String() + ": " + firstLine(n.Message), Detail: detail})
	}
	return out
}

// userDiagnostics are the changes loopguard does not make: for a person (a scheduling rule, a
// support ticket, a DNS change) or for the owner of the Service's status (the
// cloud-controller-manager publishes ipMode).
func userDiagnostics(obj core.ObjectRef, changes []core.Change) Diagnostics {
	var out Diagnostics
	for i := range changes {
		ch := &changes[i]
		var who string
		switch ch.By {
		case core.WriterUser:
			who = "for you to make"
		case core.WriterStatus:
			who = "for the cloud-controller-manager to publish"
		default:
			continue
		}
		detail := ch.String()
		// The structured part: the object's fields and values, which the person turns into
		// whatever their tooling applies (a manifest edit, a kubectl patch).
		for _, e := range ch.Edits {
			v, err := json.Marshal(e.Value)
			if err != nil {
				v = []byte(fmt.Sprint(e.Value))
			}
			detail += "\nset " + e.String() + " = " + string(v)
		}
		if ch.Delete && ch.Object != nil {
			detail += "\nthen delete " + ch.Object.String()
		}
		out = append(out, Diagnostic{Severity: Warning, Code: ch.Reason.Code,
			Summary: fmt.Sprintf("%s: a change %s (loopguard does not make it)", obj, who),
			Detail:  detail + "\n" + kindLine(string(ch.By), ch.Reason.Code)})
	}
	return out
}
