package manifest

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loopguard/loopguard/internal/near"
)

// customKinds are the custom resources loopguard's dialects read, as their CRDs define them
// (providers/tencent/crds). The API server serves a kind exactly as its CRD spells it, so
// anything else is not that object, however close.
var customKinds = []schema.GroupVersionKind{
	{Group: "cloud.tencent.com", Version: "v1alpha1", Kind: "TkeServiceConfig"},
}

// nearCustomKind refuses an object whose kind or version is a near miss of a custom kind
// loopguard reads ("TKEServiceConfig", the spelling of Tencent's documentation page): the API
// server would refuse it, and keeping it as some unknown object would make the Service that
// references it look as if its config were missing.
func nearCustomKind(gvk schema.GroupVersionKind) error {
	for _, k := range customKinds {
		switch {
		case gvk.Group == k.Group && gvk.Kind == k.Kind && gvk.Version != k.Version:
			return fmt.Errorf("%s is served as apiVersion %s, not %s", k.Kind, k.GroupVersion(), gvk.GroupVersion())
		case gvk.Kind != k.Kind && near.Distance(gvk.Kind, k.Kind) <= 2:
			return fmt.Errorf("kind %s is not %s (kinds are case-sensitive; the API server refuses any other spelling): did you mean kind: %s with apiVersion: %s?",
				gvk.Kind, k.Kind, k.Kind, k.GroupVersion())
		}
	}
	return nil
}

// typedKinds lists the kinds the scheme knows in a group version, for suggestions.
func typedKinds(gv schema.GroupVersion) []string {
	var out []string
	for gvk := range scheme.AllKnownTypes() {
		if gvk.GroupVersion() == gv && !strings.HasSuffix(gvk.Kind, "Options") && !strings.HasSuffix(gvk.Kind, "Event") {
			out = append(out, gvk.Kind)
		}
	}
	sort.Strings(out)
	return out
}

// didYouMean is ": did you mean X?" for the nearest known word, or "".
func didYouMean(word string, known []string) string {
	if w := near.Words(word, known, 1); len(w) > 0 {
		return fmt.Sprintf(" (did you mean %s?)", w[0])
	}
	return ""
}

// validateServicePorts checks a Service's ports as the API server does
// (k8s.io/kubernetes pkg/apis/core/validation: validateServicePort), with apimachinery's
// helpers: an out-of-range port must not be assessed or planned as if it could exist.
func validateServicePorts(svc *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	for i, p := range svc.Spec.Ports {
		// The path is built when a port is wrong: building one per port of every Service
		// was a few per cent of what reading 10,000 Services allocated.
		if validPort(p) {
			continue
		}
		at := field.NewPath("spec", "ports").Index(i)
		for _, msg := range validation.IsValidPortNum(int(p.Port)) {
			errs = append(errs, field.Invalid(at.Child("port"), p.Port, msg))
		}
		switch p.TargetPort.Type {
		case intstr.Int:
			// 0 means "the same as port" and is defaulted by the API server.
			if p.TargetPort.IntVal != 0 {
				for _, msg := range validation.IsValidPortNum(int(p.TargetPort.IntVal)) {
					errs = append(errs, field.Invalid(at.Child("targetPort"), p.TargetPort.IntVal, msg))
				}
			}
		case intstr.String:
			for _, msg := range validation.IsValidPortName(p.TargetPort.StrVal) {
				errs = append(errs, field.Invalid(at.Child("targetPort"), p.TargetPort.StrVal, msg))
			}
		}
		if p.NodePort != 0 {
			for _, msg := range validation.IsValidPortNum(int(p.NodePort)) {
				errs = append(errs, field.Invalid(at.Child("nodePort"), p.NodePort, msg))
			}
		}
	}
	return errs
}

// validPort reports whether validateServicePorts finds nothing wrong with p.
func validPort(p corev1.ServicePort) bool {
	if len(validation.IsValidPortNum(int(p.Port))) > 0 {
		return false
	}
	switch p.TargetPort.Type {
	case intstr.Int:
		if p.TargetPort.IntVal != 0 && len(validation.IsValidPortNum(int(p.TargetPort.IntVal))) > 0 {
			return false
		}
	case intstr.String:
		if len(validation.IsValidPortName(p.TargetPort.StrVal)) > 0 {
			return false
		}
	}
	return p.NodePort == 0 || len(validation.IsValidPortNum(int(p.NodePort))) == 0
}
