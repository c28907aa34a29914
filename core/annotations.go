package core

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// loopguard's own annotations. They declare facts no cloud annotation carries, and override a
// dialect's guess where docs/sources.md marks it UNCONFIRMED. Every dialect honours them.
const (
	// AnnotationLBScope declares the LB private or public.
	AnnotationLBScope = "loopguard.io/lb-scope"
	// AnnotationLBSourceNAT declares whether the LB replaces the client source address.
	AnnotationLBSourceNAT = "loopguard.io/lb-source-nat"
	// AnnotationClientAccess declares how in-cluster clients reach the object:
	// lb-address (the default) or service-name.
	AnnotationClientAccess = "loopguard.io/client-access"
	// AnnotationClients is a label selector for the in-cluster client Pods of this object; it
	// overrides the profile's clients.
	AnnotationClients = "loopguard.io/clients"
	// AnnotationBackendExpects declares what the backends need from the LB, for what no
	// dialect can see (a PROXY-expecting server behind a CCM loopguard does not know): a comma
	// list of proxy-protocol, proxy-protocol-v1, proxy-protocol-v2, tls, l7-routing, or none.
	AnnotationBackendExpects = "loopguard.io/backend-expects"
)

// Values of AnnotationBackendExpects.
var backendExpectsValues = []string{"proxy-protocol", "proxy-protocol-v1", "proxy-protocol-v2", "tls", "l7-routing", "none"}

// RuleOverride explains a fact that came from a loopguard.io annotation.
var RuleOverride = Rule{"loopguard-annotation",
	"A loopguard.io annotation on the object declares this fact.", "docs/annotations.md"}

// Overrides are the facts declared by loopguard.io annotations on one object.
type Overrides struct {
	Scope       Scope
	LBSourceNAT Fact
	Access      ClientAccess
	// Clients is nil when the object declares no client selector.
	Clients labels.Selector
	// Needs is nil when the object does not declare what its backends need from the LB.
	Needs *LBDependence
}

var annotationsPath = field.NewPath("metadata", "annotations")

// AnnotationPath is the field path of one annotation, for error messages.
func AnnotationPath(key string) *field.Path { return annotationsPath.Key(key) }

// ReadOverrides parses the loopguard.io annotations of an object.
func ReadOverrides(obj metav1.Object) (Overrides, field.ErrorList) {
	var o Overrides
	var errs field.ErrorList
	ann := obj.GetAnnotations()
	if v, ok := ann[AnnotationLBScope]; ok {
		switch Scope(v) {
		case Private, Public:
			o.Scope = Scope(v)
		default:
			errs = append(errs, field.NotSupported(AnnotationPath(AnnotationLBScope), v, []string{string(Private), string(Public)}))
		}
	}
	if _, ok := ann[AnnotationLBSourceNAT]; ok {
		f, err := BoolAnnotation(ann, AnnotationLBSourceNAT)
		if err != nil {
			errs = append(errs, err)
		}
		o.LBSourceNAT = f
	}
	if v, ok := ann[AnnotationClientAccess]; ok {
		switch v {
		case "lb-address":
			o.Access = AccessLBAddress
		case string(AccessServiceName):
			o.Access = AccessServiceName
		default:
			errs = append(errs, field.NotSupported(AnnotationPath(AnnotationClientAccess), v, []string{"lb-address", string(AccessServiceName)}))
		}
	}
	if v, ok := ann[AnnotationBackendExpects]; ok {
		needs, err := parseBackendExpects(v)
		if err != nil {
			errs = append(errs, err)
		} else {
			o.Needs = needs
		}
	}
	if v, ok := ann[AnnotationClients]; ok {
		sel, err := labels.Parse(v)
		if err != nil {
			errs = append(errs, field.Invalid(AnnotationPath(AnnotationClients), v, "not a label selector: "+err.Error()))
		} else {
			o.Clients = sel
		}
	}
	return o, errs
}

// Apply writes the declared facts over a dialect's, with a reason for each.
func (o *Overrides) Apply(e *Exposure) {
	if o.Scope != ScopeUnknown {
		e.Scope = o.Scope
		e.Reasons = append(e.Reasons, RuleOverride.Because(AnnotationLBScope+": "+string(o.Scope)))
	}
	if o.LBSourceNAT != Unknown {
		e.LBSourceNAT = o.LBSourceNAT
		e.Reasons = append(e.Reasons, RuleOverride.Because(AnnotationLBSourceNAT+": "+boolString(o.LBSourceNAT)))
	}
	if o.Access != AccessLBAddress {
		e.Access = o.Access
	}
	if o.Needs != nil {
		// A declaration is the whole answer: what it does not name, the backends do not need.
		e.Needs = *o.Needs
		if e.Needs.ProxyHeader == No && e.ProxyProtocol == Yes {
			// The LB's own header cannot be declared away; the dialect read it.
			e.Needs.ProxyHeader = Yes
		}
		e.Reasons = append(e.Reasons, RuleOverride.Because(AnnotationBackendExpects+": "+o.Needs.String()))
	}
}

// parseBackendExpects reads AnnotationBackendExpects.
func parseBackendExpects(v string) (*LBDependence, *field.Error) {
	d := &LBDependence{ProxyHeader: No, TLS: No, L7Routing: No}
	none := false
	for _, item := range strings.Split(v, ",") {
		switch item = strings.TrimSpace(item); item {
		case "proxy-protocol":
			d.ProxyHeader = Yes
		case "proxy-protocol-v1", "proxy-protocol-v2":
			if d.ProxyVersion != "" && d.ProxyVersion != item[len(item)-2:] {
				return nil, field.Invalid(AnnotationPath(AnnotationBackendExpects), v, "name one PROXY protocol version")
			}
			d.ProxyHeader, d.ProxyVersion = Yes, item[len(item)-2:]
		case "tls":
			d.TLS = Yes
		case "l7-routing":
			d.L7Routing = Yes
		case "none":
			none = true
		default:
			return nil, field.NotSupported(AnnotationPath(AnnotationBackendExpects), item, backendExpectsValues)
		}
	}
	if none && d.Any() == Yes {
		return nil, field.Invalid(AnnotationPath(AnnotationBackendExpects), v, "none cannot be combined with another value")
	}
	return d, nil
}

// String is the dependence in AnnotationBackendExpects's words.
func (d LBDependence) String() string {
	var parts []string
	if d.ProxyHeader == Yes {
		p := "proxy-protocol"
		if d.ProxyVersion != "" {
			p += "-" + d.ProxyVersion
		}
		parts = append(parts, p)
	}
	if d.TLS == Yes {
		parts = append(parts, "tls")
	}
	if d.L7Routing == Yes {
		parts = append(parts, "l7-routing")
	}
	if len(parts) == 0 {
		if d.Any() == No {
			return "none"
		}
		return "unknown"
	}
	return strings.Join(parts, ",")
}

func boolString(f Fact) string {
	if f == Yes {
		return "true"
	}
	return "false"
}

// BoolAnnotation reads an annotation that must be exactly "true" or "false". Cloud controllers
// compare these strings literally, so "True", "1" or a typo like "ture" would be silently read
// as false by them; loopguard refuses them instead. A missing annotation is Unknown.
func BoolAnnotation(ann map[string]string, key string) (Fact, *field.Error) {
	v, ok := ann[key]
	if !ok {
		return Unknown, nil
	}
	switch v {
	case "true":
		return Yes, nil
	case "false":
		return No, nil
	}
	hint := ""
	if l := strings.ToLower(strings.TrimSpace(v)); l == "true" || l == "false" {
		hint = " (values are case-sensitive)"
	}
	fe := field.NotSupported(AnnotationPath(key), v, []string{"true", "false"})
	fe.Detail += hint
	return Unknown, fe
}
