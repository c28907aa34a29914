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
)

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
