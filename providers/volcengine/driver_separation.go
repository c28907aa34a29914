package volcengine

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// separationPlan is the part of a plan that makes Proxy mode's same-node rule real.
type separationPlan struct {
	ps     *planning
	target core.Path
	// svc is the Service whose backends clients must avoid (live when it exists).
	svc *corev1.Service
	// local: the plan sets externalTrafficPolicy Local, because node separation is the remedy
	// and the CLB would otherwise send to every node's NodePort.
	local bool
}

// separation starts the same-node part of a plan whose Service will be svc (the manifest to
// create, the live Service to keep, or the base of a replacement).
func (ps *planning) separation(target core.Path, svc *corev1.Service) *separationPlan {
	sp := &separationPlan{ps: ps, target: target, svc: svc}
	if target != core.PathProxy {
		return sp
	}
	f, _ := ReadService(svc)
	toPods := f.PassThrough == core.Yes
	if b := ps.req.Result.Exposure.Binding; svc == ps.live && b != core.BindingUnknown {
		// The live Service's binding, which a read of its CLB's backends may have set.
		toPods = b == core.DirectToPod
	}
	sp.local = ps.req.Result.Decision.Remedy == core.NodeSeparation && !toPods &&
		svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal
	return sp
}

// finish adds, for a Proxy target, the co-locations present now, the core's loop probability,
// the anti-affinity patches for the user, and the refusal when the driver is set to refuse.
func (sp *separationPlan) finish() {
	if sp.target != core.PathProxy {
		return
	}
	ps := sp.ps
	// The clients are the ones the evaluated object declares (a manifest may declare them
	// before the live Service does), else the profile's.
	sel, err := ClientSelector(ps.in, &ps.profile)
	if err != nil {
		ps.blockers = append(ps.blockers, err)
		return
	}
	if sel == nil || sel.Empty() {
		ps.plan.Notes = append(ps.plan.Notes, dialect.Rule(dialect.CodeClientsUndeclared).Because("In Proxy mode client Pods must not share a node with a backend (docs/sources.md#vke-ip-mode), but no client Pods are declared ("+
			core.AnnotationClients+" on the Service, or the profile's clients), so loopguard can neither check nor enforce it."))
		return
	}
	c := ps.req.Cluster
	colo := SameNode(sp.svc, c, sel)
	for _, cl := range colo {
		ps.plan.Notes = append(ps.plan.Notes, ruleCoLocated.Because(cl.String()+": in Proxy mode its connections through the CLB that land there fail."))
	}
	ps.plan.Notes = append(ps.plan.Notes, sp.probability())
	if len(colo) > 0 || ps.req.Result.Decision.Remedy == core.NodeSeparation {
		for _, patch := range SeparationPatches(sp.svc, c, sel) {
			ps.plan.Changes = append(ps.plan.Changes, sp.userChange(patch))
		}
	}
	if len(colo) > 0 && ps.d.refuse {
		ps.blockers = append(ps.blockers, &core.PreconditionError{Object: ps.ref, Component: "client placement",
			Have: strconv.Itoa(len(colo)) + " declared client Pod(s) on nodes that run a backend",
			Need: "no declared client Pod on a node that runs a backend",
			Reason: ruleProxyRefused.Because("The driver refuses Proxy mode while clients share nodes with backends: " + colo[0].String() +
				". Apply the anti-affinity change this plan lists, let the client Pods be rescheduled, and plan again.")})
	}
}

// probability is the core's loop probability in Proxy mode for today's placement.
func (sp *separationPlan) probability() core.Reason {
	e := sp.ps.req.Result.Exposure
	e.Intercept, e.Reasons, e.Notes = core.No, nil, nil
	a := core.Assess(&e)
	msg := fmt.Sprintf("In Proxy mode, with the Pods placed as they are now, a connection through the CLB loops with probability %s for the worst-placed client and %s for the declared clients (risk %s).",
		probability(a.WorstCase), probability(a.DeclaredClients), a.Risk)
	if sp.local {
		e.Binding = core.NodePortLocal
		l := core.Assess(&e)
		msg += fmt.Sprintf(" With externalTrafficPolicy Local, which this plan sets: %s and %s.", probability(l.WorstCase), probability(l.DeclaredClients))
	}
	return ruleProxyProbability.Because(msg)
}

func (sp *separationPlan) userChange(patch SeparationPatch) core.Change {
	var terms any
	js, _ := json.Marshal(patch.Terms)
	_ = json.Unmarshal(js, &terms)
	key := patch.Workload
	restart := "Pods already placed keep their node until they are recreated"
	switch {
	case !patch.Patchable:
		restart = "The Pod template of " + key.String() + " cannot be changed in place: add the term where it is defined, then recreate it"
	case key.Kind != "ReplicaSet":
		restart += " (patching the Pod template rolls them)"
	}
	// CreateOnly on a user change: the edit takes effect only when the object is made again.
	// The edit is the whole list after the change; renderers turn it into a command.
	return core.Change{By: core.WriterUser, Object: &key, CreateOnly: !patch.Patchable,
		Field:  core.Edit{Path: patch.Path}.String(),
		From:   strconv.Itoa(len(patch.Terms)-1) + " required term(s)",
		To:     strconv.Itoa(len(patch.Terms)) + " required term(s)",
		Edits:  []core.Edit{{Path: patch.Path, Value: terms}},
		Reason: ruleAntiAffinity.Because("Keeps the client Pods " + strings.Join(patch.Pods, ", ") + " off every node that runs a Pod labelled " + labelsString(sp.svc.Spec.Selector) + " (the backends of " + sp.ps.ref.String() + "). " + restart + ".")}
}

func labelsString(m map[string]string) string {
	return labels.Set(m).String()
}
