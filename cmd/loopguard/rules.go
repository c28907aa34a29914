package main

import (
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
	"github.com/loopguard/loopguard/providers/gateway"
)

// The CLI's own rules: remarks about the inputs, not physics.
var (
	RuleDuplicateObject = core.Rule{Code: "cli-duplicate-object",
		Summary: "The object is defined more than once in the inputs; the last definition is used, as a sequence of kubectl applies would leave it.",
		Source:  "docs/annotations.md (reading manifests)"}
)

// cliRules lists the CLI's rules for docs/reasons.md.
func cliRules() []core.Rule { return []core.Rule{RuleDuplicateObject} }

// ruleGroup is one package's rules, as docs/reasons.md lists them.
type ruleGroup struct {
	Title string
	// Package is the Go package that declares the rules.
	Package string
	Rules   []core.Rule
}

// ruleGroups lists every rule any package can emit: the core's, each dialect's and the CLI's.
func ruleGroups() []ruleGroup {
	// The offers every cloud can make (core/dialect) are listed with the core's physics: to a
	// reader they are one set of rules that hold on every cloud.
	groups := []ruleGroup{{Title: "core: physics and decisions (every cloud)", Package: "github.com/loopguard/loopguard/core", Rules: append(core.Rules(), dialect.Rules()...)}}
	for _, d := range dialectEntries() {
		groups = append(groups, ruleGroup{Title: "dialect " + d.name, Package: "github.com/loopguard/loopguard/providers/" + d.name, Rules: d.newDialect().Rules()})
	}
	groups = append(groups, ruleGroup{Title: "Gateway API (every cloud)", Package: "github.com/loopguard/loopguard/providers/gateway", Rules: gateway.Rules()})
	groups = append(groups, ruleGroup{Title: "loopguard CLI", Package: "github.com/loopguard/loopguard/cmd/loopguard", Rules: cliRules()})
	return groups
}
