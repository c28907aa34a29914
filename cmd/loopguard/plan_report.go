package main

import (
	"github.com/loopguard/loopguard/core"
)

// The plan report is the output contract of plan and apply for -o json and -o yaml, defined
// here field by field like the assess report, so the core's types can change without changing
// what scripts read. Fields are added, never renamed or removed, within ReportAPIVersion.
const (
	PlanReportKind  = "PlanReport"
	ApplyReportKind = "ApplyReport"
)

// Plan statuses.
const (
	// StatusUpToDate: nothing to write; the decision already holds (or is to change nothing).
	StatusUpToDate = "up-to-date"
	// StatusPlanned: changes to write, and nothing blocks them.
	StatusPlanned = "planned"
	// StatusUserAction: loopguard writes nothing; the user has changes to make (a scheduling
	// rule, DNS).
	StatusUserAction = "user-action"
	// StatusBlocked: the plan cannot be applied as it is; Blocked says why.
	StatusBlocked = "blocked"
	// StatusUnsupported: loopguard cannot carry out this cloud's remedies (the plain
	// Kubernetes dialect: ipMode belongs to the cloud-controller-manager).
	StatusUnsupported = "unsupported"
	// StatusFailed: the plan could not be computed, or (apply) a write failed; Error says why.
	StatusFailed = "failed"
	// StatusApplied (apply): changes were written and verified.
	StatusApplied = "applied"
	// StatusPending (apply): the changes were written but what they promise does not show yet
	// (a cloud controller has not acted on them); apply again later.
	StatusPending = "pending"
)

// PlanReport is what plan computed, or what apply did.
type PlanReport struct {
	APIVersion string `json:"apiVersion"`
	// Kind is PlanReport (plan) or ApplyReport (apply).
	Kind string `json:"kind"`
	// Mode is offline (from manifests; the inputs are the observed state) or live (read from
	// the cluster as it is now).
	Mode string `json:"mode"`
	// DryRun (apply): plans were computed against the cluster and nothing was written.
	DryRun bool `json:"dryRun"`
	// Plans has one entry per planned LoadBalancer Service and Ingress, ordered like assess's
	// results.
	Plans   []ObjectPlan `json:"plans"`
	Skipped []Skipped    `json:"skipped"`
	Errors  []InputError `json:"errors"`
	Cluster ClusterInfo  `json:"cluster"`
	Summary PlanSummary  `json:"summary"`
}

// ObjectPlan is the decision and the concrete plan for one exposure.
type ObjectPlan struct {
	Object   ObjectRef `json:"object"`
	Location string    `json:"location"`
	Provider string    `json:"provider"`
	// Risk and Symptom are assess's verdict.
	Risk     string   `json:"risk"`
	Symptom  string   `json:"symptom"`
	Decision Decision `json:"decision"`
	// Status is up-to-date, planned, user-action, blocked, unsupported or failed; apply adds
	// applied and pending.
	Status string `json:"status"`
	// Changes are the plan's changes, in the order they are written.
	Changes []PlanChange `json:"changes"`
	// Checks are what is re-read after writing to confirm the changes took effect.
	Checks []PlanCheck `json:"checks"`
	// Notes are consequences worth reading before applying.
	Notes []Reason `json:"notes"`
	// Blocked says why the plan cannot be applied as it is; null when it can.
	Blocked *PlanError `json:"blocked"`
	// Written (apply) are the changes written by this run; changes already in place are not.
	Written []PlanChange `json:"written,omitempty"`
	// ForUser (apply) are the changes loopguard does not make: the user has to.
	ForUser []PlanChange `json:"forUser,omitempty"`
	// Error is why the plan could not be computed, or (apply) why writing it failed.
	Error *PlanError `json:"error,omitempty"`
}

// ObjectKey names a Kubernetes object a change writes.
type ObjectKey struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// PlanChange is one concrete change.
type PlanChange struct {
	// By is cluster (loopguard writes a Kubernetes object), cloud (loopguard calls the cloud
	// API) or user (loopguard does not write it; the user does).
	By string `json:"by"`
	// Object is the Kubernetes object a cluster change writes.
	Object *ObjectKey `json:"object,omitempty"`
	// Resource names what a cloud or user change is about.
	Resource string `json:"resource,omitempty"`
	// Field, From and To describe the change; From is "" when the field is unset.
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
	// Strategy is how a cluster change is written: apply (server-side apply of the edited
	// fields as the loopguard field manager) or update (read, edit, write back with the
	// resourceVersion read).
	Strategy string `json:"strategy,omitempty"`
	// Create: the object is created when it does not exist; CreateOnly: only then (an
	// existing object that differs is refused as immutable).
	Create     bool `json:"create,omitempty"`
	CreateOnly bool `json:"createOnly,omitempty"`
	// Disruptive: the change replaces an object (a new LB address); applied only with
	// --allow-disruptive.
	Disruptive bool `json:"disruptive,omitempty"`
	// Delete: the object is deleted (a removal's cluster change; for a user change, the user
	// deletes it).
	Delete bool `json:"delete,omitempty"`
	// Edits are the leaves a cluster change sets; nothing else in the object is touched. On
	// a user change with CreateOnly they go where the object is defined.
	Edits  []PlanEdit `json:"edits,omitempty"`
	Reason Reason     `json:"reason"`
	// mergePatch is a user change's edits as a JSON merge patch, for the text renderer.
	mergePatch string
}

// PlanEdit sets one leaf. Path is the list of steps from the object's root: a string is a map
// field, an object selects the element of a list whose fields have these values (TKE's
// listeners, keyed by protocol and port): [spec, loadBalancer, l4Listeners, {port: 80,
// protocol: TCP}, snatEnable]; [metadata, annotations, "service.cloud.tencent.com/prevent-loopback"].
type PlanEdit struct {
	Path  []any `json:"path"`
	Value any   `json:"value"`
}

// PlanCheck is re-read after writing.
type PlanCheck struct {
	Object ObjectKey `json:"object"`
	Field  string    `json:"field"`
	Value  any       `json:"value"`
	// Pending says what it means while the check does not hold, and what to do.
	Pending string `json:"pending"`
	// jsonPath is Field as a kubectl JSONPath template, for the text renderer.
	jsonPath string
}

// PlanError is an error with the kind a script branches on.
type PlanError struct {
	// Kind is core's name for the error's kind (core.Blocker's Kind): not-allowlisted,
	// unauthenticated, precondition, immutable, unsupported, invalid, conflict, retry-later,
	// not-exposed, or error when it has none of them.
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Capability and Ask (not-allowlisted): the allowlist missing and what to ask the cloud's
	// support for.
	Capability string `json:"capability,omitempty"`
	Ask        string `json:"ask,omitempty"`
	// Component, Have and Need (precondition): what falls short, as it is and as needed.
	Component string `json:"component,omitempty"`
	Have      string `json:"have,omitempty"`
	Need      string `json:"need,omitempty"`
	// RetryAfterSeconds (retry-later): when to look again.
	RetryAfterSeconds float64 `json:"retryAfterSeconds,omitempty"`
}

// PlanSummary counts the plans by status.
type PlanSummary struct {
	Planned     int `json:"planned"`
	UpToDate    int `json:"upToDate"`
	ToWrite     int `json:"toWrite"`
	UserAction  int `json:"userAction"`
	Blocked     int `json:"blocked"`
	Unsupported int `json:"unsupported"`
	Failed      int `json:"failed"`
	// Applied, Pending and Written (apply): objects written and verified, objects written
	// but not verified yet, and changes written.
	Applied int `json:"applied"`
	Pending int `json:"pending"`
	Written int `json:"written"`
	Skipped int `json:"skipped"`
	Errors  int `json:"errors"`
}

func objectKeyOf(k *core.ObjectKey) *ObjectKey {
	if k == nil {
		return nil
	}
	return &ObjectKey{APIVersion: k.APIVersion, Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}
}

func changeOf(c *core.Change) PlanChange {
	out := PlanChange{
		By: string(c.By), Object: objectKeyOf(c.Object), Resource: c.Resource,
		Field: c.Field, From: c.From, To: c.To, Strategy: string(c.Strategy),
		Create: c.Create, CreateOnly: c.CreateOnly, Disruptive: c.Disruptive, Delete: c.Delete,
		Reason: reasonOf(c.Reason),
	}
	if c.By == core.WriterUser && c.Object != nil {
		out.mergePatch = mergePatch(c.Edits)
	}
	if len(c.Edits) > 0 {
		out.Edits = make([]PlanEdit, 0, len(c.Edits))
	}
	for _, e := range c.Edits {
		path := make([]any, len(e.Path))
		for i, p := range e.Path {
			if p.Keys != nil {
				path[i] = p.Keys
			} else {
				path[i] = p.Field
			}
		}
		out.Edits = append(out.Edits, PlanEdit{Path: path, Value: e.Value})
	}
	return out
}

func changesOf(cs []core.Change) []PlanChange {
	out := make([]PlanChange, len(cs))
	for i := range cs {
		out[i] = changeOf(&cs[i])
	}
	return out
}

func checksOf(cs []core.Check) []PlanCheck {
	out := make([]PlanCheck, len(cs))
	for i := range cs {
		c := &cs[i]
		out[i] = PlanCheck{Object: *objectKeyOf(&c.Object), Field: c.What(), Value: c.Edit.Value, Pending: c.Pending, jsonPath: checkJSONPath(c)}
	}
	return out
}

// planErrorOf converts an error, keeping what a user acts on: the allowlist to ask for, the
// component to upgrade, when to retry. The kind is core's own name for it (core.BlockerOf), so
// the CLI, the controller's Events and Terraform's diagnostics name an error alike.
func planErrorOf(err error) *PlanError {
	b := core.BlockerOf(err)
	if b == nil {
		return nil
	}
	return &PlanError{Kind: b.Kind, Message: b.Message, Capability: string(b.Capability), Ask: b.Ask,
		Component: b.Component, Have: b.Have, Need: b.Need, RetryAfterSeconds: b.RetryAfterSeconds}
}

// planStatus is the status of a computed plan before anything is applied.
func planStatus(p *core.Plan) string {
	switch {
	case p.Blocked != nil:
		return StatusBlocked
	case !p.Empty():
		return StatusPlanned
	case len(p.Changes) > 0:
		return StatusUserAction
	}
	return StatusUpToDate
}

// finish counts the plans.
func (rep *PlanReport) finish() {
	s := PlanSummary{Planned: len(rep.Plans), Skipped: len(rep.Skipped), Errors: len(rep.Errors)}
	for i := range rep.Plans {
		p := &rep.Plans[i]
		s.Written += len(p.Written)
		switch p.Status {
		case StatusUpToDate:
			s.UpToDate++
		case StatusPlanned:
			s.ToWrite++
		case StatusUserAction:
			s.UserAction++
		case StatusBlocked:
			s.Blocked++
		case StatusUnsupported:
			s.Unsupported++
		case StatusFailed:
			s.Failed++
		case StatusApplied:
			s.Applied++
		case StatusPending:
			s.Pending++
		}
	}
	rep.Summary = s
}

// exitCode: 2 when an input could not be read; else 3 when a plan is blocked, failed or
// (apply) not verified yet; else 0. An unsupported plan is not a failure: the cloud's remedy
// is someone else's to carry out.
func (rep *PlanReport) exitCode() int {
	s := &rep.Summary
	switch {
	case len(rep.Errors) > 0:
		return exitInput
	case s.Blocked > 0 || s.Failed > 0 || s.Pending > 0:
		return exitBlocked
	}
	return exitOK
}
