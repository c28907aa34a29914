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

// mergePatch renders edits as a JSON merge patch (RFC 7386), which kubectl patch --type=merge
// applies to any kind, custom resources included. Edits that select list elements by key have
// no merge-patch form (a merge patch replaces lists whole); then it reports false.
func mergePatch(edits []PlanEdit) (string, bool) {
	if len(edits) == 0 {
		return "", false
	}
	root := map[string]any{}
	for _, e := range edits {
		if len(e.Path) == 0 {
			return "", false
		}
		m := root
		for i, step := range e.Path {
			field, ok := step.(string)
			if !ok {
				return "", false
			}
			if i == len(e.Path)-1 {
				m[field] = e.Value
				break
			}
			next, ok := m[field].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[field] = next
			}
			m = next
		}
	}
	js, err := json.Marshal(root)
	if err != nil {
		return "", false
	}
	return string(js), true
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
	patch, ok := mergePatch(c.Edits)
	if !ok {
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
