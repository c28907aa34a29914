package main

import (
	"encoding/json"
	"strings"

	"github.com/loopguard/loopguard/core"
)

// The plan says what to change as data (object, field path, value); these turn it into the
// kubectl commands a person at a terminal runs. Only the CLI renders commands: an Event or a
// Terraform diagnostic shows the same change as a summary plus its structured detail.

// kubectlTarget is "-n NS RESOURCE NAME" for kubectl: the resource as kind.group, which kubectl
// resolves without ambiguity ("deployment.apps"), the kind alone for the core group.
func kubectlTarget(k *ObjectKey) string {
	res := strings.ToLower(k.Kind)
	if group, _, ok := strings.Cut(k.APIVersion, "/"); ok && group != "" {
		res += "." + group
	}
	s := res + " " + k.Name
	if k.Namespace != "" {
		s = "-n " + k.Namespace + " " + s
	}
	return s
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// mergePatch renders a change's edits as a JSON merge patch (RFC 7386), which kubectl patch
// --type=merge applies to any kind, custom resources included: the edits made on an empty
// object (core.Edit.ApplyTo, the Reconciler's own mechanism). Edits that select list elements
// by key have no merge-patch form (a merge patch replaces lists whole); then it returns "".
func mergePatch(edits []core.Edit) string {
	if len(edits) == 0 {
		return ""
	}
	obj := map[string]any{}
	for _, e := range edits {
		for _, p := range e.Path {
			if p.Keys != nil {
				return ""
			}
		}
		if _, err := e.ApplyTo(obj); err != nil {
			return ""
		}
	}
	js, err := json.Marshal(obj)
	if err != nil {
		return ""
	}
	return string(js)
}

// userCommand is how the user carries out a change loopguard leaves to them, as a line to
// print under it: a kubectl delete, a kubectl patch, or, for edits that cannot be made on the
// live object (CreateOnly), the patch to put where the object is defined. "" when the change
// is not about a Kubernetes object (a support ticket, a DNS record).
func userCommand(c *PlanChange) string {
	if c.Object == nil {
		return ""
	}
	if c.Delete {
		return "run: kubectl delete " + kubectlTarget(c.Object)
	}
	patch := c.mergePatch
	if patch == "" {
		return ""
	}
	if c.CreateOnly {
		return "add to its definition, then recreate it: " + patch
	}
	return "run: kubectl patch " + kubectlTarget(c.Object) + " --type=merge -p " + shellQuote(patch)
}

// checkJSONPath renders a check's field as a kubectl JSONPath template
// ({.status.loadBalancer.ingress[*].ipMode}); "" when a step selects list elements by key,
// which a template cannot say in one filter.
func checkJSONPath(c *core.Check) string {
	var b strings.Builder
	b.WriteString("{")
	write := func(path []core.PathElem) bool {
		for _, p := range path {
			if p.Keys != nil {
				return false
			}
			b.WriteString(".")
			b.WriteString(strings.ReplaceAll(p.Field, ".", `\.`))
		}
		return true
	}
	if c.Each != nil {
		if !write(c.Each) {
			return ""
		}
		b.WriteString("[*]")
	}
	if !write(c.Edit.Path) {
		return ""
	}
	b.WriteString("}")
	return b.String()
}

// checkCommand is the kubectl get that shows a check's field.
func checkCommand(c *PlanCheck) string {
	if c.jsonPath == "" {
		return ""
	}
	return "see: kubectl get " + kubectlTarget(&c.Object) + " -o jsonpath=" + shellQuote(c.jsonPath)
}
