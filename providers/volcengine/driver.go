package volcengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// DriverOptions configure a Driver. A nil *DriverOptions gives the documented behaviour: the
// profile's versions, cluster reads where the profile is silent, Proxy allowed (and reported)
// while clients share nodes with backends, replacements named <name>-vip / <name>-proxy.
type DriverOptions struct {
	// Dialect configures the dialect the driver plans with (Driver.Dialect); nil uses the
	// defaults.
	Dialect *Options
	// ServerVersion reads the API server's version; client-go's discovery client implements
	// it. When set, the server's version decides the Kubernetes prerequisite, whatever the
	// profile says.
	ServerVersion ServerVersioner
	// NoClusterReads stops the driver from reading the network model and the
	// cloud-controller-manager's version from the cluster (ReadClusterFacts) when the profile
	// does not declare them.
	NoClusterReads bool
	// CCMDeployment is where the cloud-controller-manager runs in the cluster, if it does; the
	// zero value means DefaultCCMDeployment.
	CCMDeployment core.ObjectKey
	// RefuseCoLocatedProxy blocks every plan that creates or keeps a Service in Proxy mode
	// while a declared client Pod shares a node with one of its ready backends (seed 003:
	// "客户端 Pod 和服务端 Pod 不能运行在同一个节点上"). Without it such plans go ahead and
	// list every co-location and the scheduling change that prevents it.
	RefuseCoLocatedProxy bool
	// ReplacementName names the new Service of a replacement; nil means DefaultReplacementName.
	ReplacementName func(svc *corev1.Service, mode core.Path) string
	// Logger receives the driver's logs (named "volcengine"); nil discards.
	Logger hclog.Logger
}

// Driver carries out VKE's remedies for loopguard's Reconciler (core.Driver). VKE's remedies
// are all in the Service's ip-mode annotation (service.beta.kubernetes.io/volcengine-
// loadbalancer-ip-mode: VIP | Proxy) and in where client Pods run:
//
//   - A Service that does not exist yet is created with the annotation in the creating write
//     (server-side apply strategy, create-only): the cloud-controller-manager reads the mode
//     when it creates the CLB, and the annotation cannot be changed afterwards (seed 003).
//   - An existing Service whose mode would change is replaced: a new Service beside it, with
//     the new mode, a new CLB and a new address (a disruptive change the Reconciler refuses
//     unless the policy allows it), then a step for the user to move clients and delete the
//     old Service. loopguard never deletes a Service.
//   - Proxy mode needs its prerequisites (Kubernetes >= v1.30, VPC-CNI with IPVlan and eBPF
//     forwarding, cloud-controller-manager >= v1.43.0): each unmet or unknown one blocks the
//     plan with a *core.PreconditionError before anything is written.
//   - Proxy mode keeps clients off the backends' nodes (node separation): the plan lists every
//     client/backend co-location, the core's loop probability, and the anti-affinity patch per
//     client workload for the user; it sets externalTrafficPolicy Local where the CLB would
//     otherwise send to every node.
//   - After a write, status.loadBalancer.ingress[*].ipMode must show the mode (a core.Check):
//     while it does not, the Reconciler returns a *core.RetryError that says why and what next.
//
// The driver makes no cloud writes (the cloud-controller-manager owns the CLB), so ApplyCloud
// reports core.ErrUnsupported. Planning only reads. A Driver is safe for concurrent use.
type Driver struct {
	dialect   *Dialect
	version   ServerVersioner
	reads     bool
	ccm       core.ObjectKey
	refuse    bool
	replaceAs func(*corev1.Service, core.Path) string
	log       hclog.Logger
}

var _ core.Driver = (*Driver)(nil)

// NewDriver returns the VKE driver; opts may be nil. A CCMDeployment that names no Deployment is
// an error matching core.ErrInvalid.
func NewDriver(opts *DriverOptions) (*Driver, error) {
	var o DriverOptions
	if opts != nil {
		o = *opts
	}
	d := &Driver{dialect: NewDialect(o.Dialect), version: o.ServerVersion, reads: !o.NoClusterReads,
		ccm: o.CCMDeployment, refuse: o.RefuseCoLocatedProxy, replaceAs: o.ReplacementName, log: o.Logger}
	if d.ccm != (core.ObjectKey{}) && (d.ccm.Kind != "Deployment" || d.ccm.Name == "" || d.ccm.Namespace == "") {
		return nil, fmt.Errorf("volcengine.DriverOptions: %w: CCMDeployment %v must name a Deployment with its namespace", core.ErrInvalid, d.ccm)
	}
	if d.ccm.APIVersion == "" && d.ccm.Kind != "" {
		d.ccm.APIVersion = "apps/v1"
	}
	if d.replaceAs == nil {
		d.replaceAs = DefaultReplacementName
	}
	if d.log == nil {
		d.log = hclog.NewNullLogger()
	}
	d.log = d.log.Named("volcengine")
	return d, nil
}

// Dialect returns the dialect the driver plans with; a Provider (NewProvider) hands it to the
// Reconciler.
func (d *Driver) Dialect() core.Dialect { return d.dialect }

// ApplyCloud reports core.ErrUnsupported: on VKE the cloud-controller-manager writes the CLB,
// and loopguard's changes are all in Kubernetes objects.
func (d *Driver) ApplyCloud(context.Context, *core.Change) (core.ApplyResult, error) {
	return core.ApplyResult{}, &core.KindError{Kind: core.ErrUnsupported, Msg: "the VKE driver makes no cloud changes: the cloud-controller-manager carries the Service's annotations to the CLB"}
}

var (
	ingressPath = []core.PathElem{dialect.F("status"), dialect.F("loadBalancer"), dialect.F("ingress")}
	etpEdit     = core.Edit{Path: []core.PathElem{dialect.F("spec"), dialect.F("externalTrafficPolicy")}, Value: string(corev1.ServiceExternalTrafficPolicyLocal)}
)

func annotationEdit(key, value string) core.Edit {
	return core.Edit{Path: []core.PathElem{dialect.F("metadata"), dialect.F("annotations"), dialect.F(key)}, Value: value}
}

func serviceKey(ns, name string) core.ObjectKey {
	return core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: ns, Name: name}
}

// modeOf is the ip-mode a remedy means on VKE; "" for remedies that do not set one.
func modeOf(r core.Remedy) core.Path {
	switch r {
	case core.InterceptVIP:
		return core.PathVIP
	case core.NodeSeparation:
		return core.PathProxy
	}
	return core.PathUnknown
}

// planning is the state of one Plan call.
type planning struct {
	d    *Driver
	req  *core.PlanRequest
	ref  core.ObjectRef
	key  core.ObjectKey
	in   *corev1.Service // the object asked about: a manifest, or the live Service
	inF  ServiceFacts
	live *corev1.Service // the Service in the cluster, nil when it does not exist
	lf   ServiceFacts

	profile core.ClusterProfile
	facts   ClusterFacts
	prereqs []Prerequisite

	versionRead bool
	objectsRead bool
	err         error

	plan     *core.Plan
	blockers []error
}

// Plan observes the Service (and, with a reader, the live cluster) and returns the changes that
// make the decision true. See Driver for what each plan contains. It never writes.
func (d *Driver) Plan(ctx context.Context, req *core.PlanRequest) (*core.Plan, error) {
	if req == nil || req.Result == nil {
		return nil, &core.KindError{Kind: core.ErrInvalid, Msg: "volcengine: Plan needs a request with the evaluation result"}
	}
	svc, ok := req.Object.(*corev1.Service)
	if !ok {
		return nil, &core.KindError{Kind: core.ErrUnsupported, Object: req.Result.Exposure.Object, Msg: "the VKE driver plans Services only"}
	}
	ps := &planning{d: d, req: req, in: svc,
		ref:  core.ObjectRef{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name},
		key:  serviceKey(svc.Namespace, svc.Name),
		plan: &core.Plan{Object: req.Result.Exposure.Object, Decision: req.Result.Decision}}
	inF, errs := ReadService(svc)
	if err := dialect.Invalid(ps.ref, errs); err != nil {
		return nil, err
	}
	ps.inF = inF
	if err := ps.observe(ctx); err != nil {
		return nil, err
	}
	if err := ps.build(ctx); err != nil {
		return nil, err
	}
	if ps.err != nil {
		return nil, ps.err
	}
	if len(ps.blockers) > 0 {
		ps.plan.Block(errors.Join(ps.blockers...))
	}
	d.log.Debug("planned", "object", ps.ref.String(), "remedy", string(ps.plan.Decision.Remedy),
		"changes", len(ps.plan.Changes), "checks", len(ps.plan.Checks), "blocked", ps.plan.Blocked != nil)
	return ps.plan, nil
}

// observe reads the live Service and the cluster's prerequisite facts.
func (ps *planning) observe(ctx context.Context) error {
	req := ps.req
	if req.Reader != nil {
		u, err := req.Reader.Get(ctx, ps.key)
		if err != nil {
			return err
		}
		if u != nil {
			obj, err := dialect.TypedFromUnstructured(u)
			if err != nil {
				return err
			}
			ps.live = obj.(*corev1.Service)
		}
	} else if ps.inF.Exists {
		// Offline: the object carries a uid or a status, so it is the live one.
		ps.live = ps.in
	}
	if ps.live != nil {
		lf, errs := ReadService(ps.live)
		if err := dialect.Invalid(ps.ref, errs); err != nil {
			return err
		}
		ps.lf = lf
	}
	if req.Cluster != nil {
		ps.profile = req.Cluster.Profile
	}
	ps.computePrerequisites()
	return nil
}

// The prerequisites are read lazily: most plans need none (a Service that keeps its mode) or
// only the Kubernetes version (to know whether status has ipMode), and every read is a request
// to the API server.

// kubernetes returns the Kubernetes prerequisite, asking the server for its version first.
func (ps *planning) kubernetes() Prerequisite {
	if !ps.versionRead {
		ps.versionRead = true
		if err := ps.facts.readVersion(ps.d.version); err != nil {
			ps.fail(fmt.Errorf("%s: reading the API server's version: %w", ps.ref, err))
		}
		ps.plan.Notes = append(ps.plan.Notes, ps.facts.Apply(&ps.profile)...)
		ps.computePrerequisites()
	}
	return ps.prereqs[0]
}

// prerequisites returns all three, reading what the profile does not declare from the cluster.
func (ps *planning) prerequisites(ctx context.Context) []Prerequisite {
	ps.kubernetes()
	if !ps.objectsRead {
		ps.objectsRead = true
		if ps.d.reads && ps.req.Reader != nil {
			ps.facts.readObjects(ctx, ps.req.Reader, ps.d.ccm)
			ps.plan.Notes = append(ps.plan.Notes, ps.facts.Unreadable...)
			ps.plan.Notes = append(ps.plan.Notes, ps.facts.Apply(&ps.profile)...)
			ps.computePrerequisites()
		}
	}
	return ps.prereqs
}

func (ps *planning) computePrerequisites() {
	all := prerequisites(&ps.profile)
	ps.prereqs = all[:]
	if ps.facts.ExclusiveENI && ps.profile.Dataplane.PodInterface == "" {
		n := &ps.prereqs[1]
		n.Met, n.Kind, n.Missing = core.No, core.PreconditionUnsupported, nil
		n.Have = "vpc-cni/exclusive ENI/" + orUnknown(string(ps.profile.ProxyMode))
		n.Reason = rulePrereqNetwork.Because("The cluster's network does not support ip-mode: Cello runs in exclusive-ENI mode, so Pods have no IPVlan interface.")
	}
}

// fail records the first error that stops planning.
func (ps *planning) fail(err error) {
	if ps.err == nil {
		ps.err = err
	}
}

func (ps *planning) allMet(ctx context.Context) bool {
	for _, p := range ps.prerequisites(ctx) {
		if p.Met != core.Yes {
			return false
		}
	}
	return true
}

func (ps *planning) anyUnmet(ctx context.Context) bool {
	for _, p := range ps.prerequisites(ctx) {
		if p.Met == core.No {
			return true
		}
	}
	return false
}

// build decides the target mode and lists the changes, checks and notes.
func (ps *planning) build(ctx context.Context) error {
	dec := &ps.req.Result.Decision
	decided := modeOf(dec.Remedy)
	target := decided
	if target == core.PathUnknown {
		target = ps.inF.IPMode
	}
	// A mode the user wrote in a manifest is theirs: following the decision against it would
	// give them a Service unlike the manifest (and drop the CLB features, or expose the loop,
	// they did not choose). The live object's annotation is not a request: it records how the
	// Service was created.
	if decided != core.PathUnknown && ps.inF.IPModeSet && ps.inF.IPMode != decided && !ps.inF.Exists {
		ps.blockers = append(ps.blockers, ps.requestedModeError(decided))
	}

	switch {
	case ps.live == nil:
		if done, err := ps.alreadyReplaced(ctx, target); err != nil || done {
			return err
		}
		ps.planCreate(ctx, target)
	default:
		created := ps.lf.CreatedMode()
		pending := false
		if ps.lf.Status != core.PathUnknown && ps.lf.Status != ps.lf.IPMode && ps.lf.IPMode == target {
			// The annotation asks for the target but the status shows the other mode. With every
			// prerequisite known met the controller would have honoured it at creation: the
			// annotation came later, or the Service predates the prerequisites (assumption 5),
			// and only a new Service helps. Otherwise the controller may be too old, or not done.
			if ps.allMet(ctx) {
				created = ps.lf.Status
			} else {
				created, pending = target, true
			}
		}
		if created == target {
			ps.planKeep(ctx, target, pending)
		} else if err := ps.planReplace(ctx, created, target); err != nil {
			return err
		}
	}
	ps.explainRejectedSwitches()
	if dec.Remedy == core.DNSSteering {
		ps.plan.Changes = append(ps.plan.Changes, core.Change{By: core.WriterUser, Resource: "in-cluster clients of " + ps.ref.String(),
			Field: "address clients use", From: "the CLB address", To: dec.Action, Reason: dec.Reason})
	}
	return nil
}

// requestedModeError explains a manifest whose explicit mode the decision does not follow.
func (ps *planning) requestedModeError(decided core.Path) error {
	dec := &ps.req.Result.Decision
	var how string
	if ps.inF.IPMode == core.PathProxy {
		how = "To follow the decision, remove the annotation (VIP is the default) or set it to VIP. To keep Proxy safely, declare the client Pods (" +
			core.AnnotationClients + " or the profile's clients) so that node separation can be planned, and prefer lb-features."
	} else {
		how = "To follow the decision, set the annotation to Proxy. To keep VIP, remove the annotation or use the documented preference."
	}
	return &core.PreconditionError{Object: ps.ref, Component: "the ip-mode annotation", Have: string(ps.inF.IPMode),
		Need: string(decided) + " (the decision: " + string(dec.Remedy) + ")",
		Reason: ruleRequestedMode.Because("The manifest asks for " + string(ps.inF.IPMode) + " but the decision is " + string(dec.Remedy) +
			": " + dec.Why + " loopguard does not overwrite a mode you wrote. " + how)}
}

// alreadyReplaced: the Service is gone but loopguard's replacement of it exists, so the user
// finished a replacement and the manifest is stale; creating the old name again would make a
// third CLB.
func (ps *planning) alreadyReplaced(ctx context.Context, target core.Path) (bool, error) {
	if ps.req.Reader == nil {
		return false, nil
	}
	name := ps.d.replaceAs(ps.in, target)
	u, err := ps.req.Reader.Get(ctx, serviceKey(ps.in.Namespace, name))
	if err != nil || u == nil || u.GetAnnotations()[AnnotationReplaces] != ps.in.Name {
		return false, err
	}
	ps.plan.Notes = append(ps.plan.Notes, rulePlanReplace.Because("Service "+ps.in.Namespace+"/"+ps.in.Name+" was replaced by "+name+
		" ("+AnnotationReplaces+") and has been deleted; loopguard does not create it again. Update your manifests to "+name+"."))
	ps.addCheck(serviceKey(ps.in.Namespace, name), target, liveFactsOf(u))
	return true, nil
}

func liveFactsOf(u *unstructured.Unstructured) *ServiceFacts {
	obj, err := dialect.TypedFromUnstructured(u)
	if err != nil {
		return nil
	}
	f, _ := ReadService(obj.(*corev1.Service))
	return &f
}

// planCreate: the Service does not exist; create it with the mode.
func (ps *planning) planCreate(ctx context.Context, target core.Path) {
	edits := []core.Edit{annotationEdit(AnnotationIPMode, string(target))}
	sep := ps.separation(target, ps.in)
	if sep.local {
		edits = append(edits, etpEdit)
	}
	msg := "Service " + ps.ref.Namespace + "/" + ps.ref.Name + " does not exist yet: loopguard creates it with " + AnnotationIPMode + ": " + string(target) +
		" in the creating write, since the cloud-controller-manager reads the mode once, when it creates the CLB."
	if sep.local {
		msg += " It also sets spec.externalTrafficPolicy: Local, so that the CLB sends only to nodes that run a backend."
	}
	ps.plan.Changes = append(ps.plan.Changes, core.Change{By: core.WriterCluster, Object: &ps.key, Strategy: core.StrategyApply,
		Create: true, CreateOnly: true, Template: createTemplate(ps.in), Edits: edits,
		Field: "metadata.annotations[" + AnnotationIPMode + "]", To: string(target), Reason: rulePlanCreate.Because(msg)})
	if target == core.PathProxy {
		ps.requirePrerequisites(ctx)
	}
	ps.addCheck(ps.key, target, nil)
	sep.finish()
}

// planKeep: the Service exists with the target mode (or is waiting for the controller).
func (ps *planning) planKeep(ctx context.Context, target core.Path, pending bool) {
	if pending && ps.anyUnmet(ctx) {
		for i := range ps.prereqs {
			if err := ps.prereqs[i].Err(ps.ref); err != nil && ps.prereqs[i].Met == core.No {
				ps.blockers = append(ps.blockers, err)
			}
		}
	}
	sep := ps.separation(target, ps.live)
	if sep.local {
		ch := core.Change{By: core.WriterCluster, Object: &ps.key, Strategy: core.StrategyApply,
			Edits: []core.Edit{etpEdit}, Field: "spec.externalTrafficPolicy", From: string(ps.live.Spec.ExternalTrafficPolicy), To: string(corev1.ServiceExternalTrafficPolicyLocal)}
		why := "Node separation needs externalTrafficPolicy Local: with Cluster the CLB sends to every node's NodePort, so a client on any node can loop (about 1/N per connection). With Local it sends only to nodes that run a backend; external clients' traffic then also only reaches those nodes, and backends see the client address."
		if owner := ownerOf(ps.live, "f:spec", "f:externalTrafficPolicy"); owner != "" {
			// Server-side apply would report a conflict, and loopguard never forces: the field
			// is the owner's to change (client-side creators own the defaulted Cluster too).
			// The change keeps its object, field and edit: a renderer turns them into the
			// command for its audience (the CLI prints a kubectl patch).
			ch.By, ch.Strategy = core.WriterUser, ""
			why += " The field belongs to field manager " + quote(owner) + ", so loopguard leaves the change to you (or to that manager's source)."
		}
		ch.Reason = ruleLocalPolicy.Because(why)
		ps.plan.Changes = append(ps.plan.Changes, ch)
	}
	ps.addCheck(ps.key, target, &ps.lf)
	sep.finish()
}

// planReplace: the Service exists with another mode; create a new one beside it.
func (ps *planning) planReplace(ctx context.Context, created, target core.Path) error {
	// The new Service is what the user asks for now: the manifest when one was given (a copy of
	// the live object could carry annotations a controller wrote about the old CLB), else the
	// live Service.
	old, base, baseF := ps.live, ps.live, &ps.lf
	if !ps.inF.Exists {
		base, baseF = ps.in, &ps.inF
	}
	if ps.lf.Reused() || baseF.Reused() {
		ps.blockers = append(ps.blockers, &core.KindError{Kind: core.ErrUnsupported, Object: ps.ref,
			Msg: ruleReplaceReused.Summary + " Create a Service with " + AnnotationIPMode + ": " + string(target) + " on another CLB yourself, move clients to it, then delete this one", Reason: ruleReplaceReused.Reason()})
		return nil
	}
	name := ps.d.replaceAs(old, target)
	newKey := serviceKey(old.Namespace, name)
	var existing *ServiceFacts
	if ps.req.Reader != nil {
		u, err := ps.req.Reader.Get(ctx, newKey)
		if err != nil {
			return err
		}
		if u != nil {
			if u.GetAnnotations()[AnnotationReplaces] != old.Name {
				ps.blockers = append(ps.blockers, &core.KindError{Kind: core.ErrConflict, Object: ps.ref,
					Msg: "Service " + newKey.Namespace + "/" + name + " already exists and is not loopguard's replacement of " + old.Name +
						" (no " + AnnotationReplaces + ": " + old.Name + "); name the replacement otherwise (DriverOptions.ReplacementName)", Reason: ruleReplaceNameTaken.Reason()})
				return nil
			}
			existing = liveFactsOf(u)
		}
	}
	if existing != nil && existing.IPMode == target && existing.IPModeSet {
		// Created by an earlier run: only the user's step and the wait remain.
		ps.plan.Notes = append(ps.plan.Notes, rulePlanReplace.Because("The replacement "+newKey.String()+" exists; what remains is for you to move clients and delete "+ps.key.String()+"."))
	} else {
		ps.planReplacement(ctx, base, old, newKey, created, target)
	}
	// Delete: the user's last step is deleting the old Service; loopguard never does.
	ps.plan.Changes = append(ps.plan.Changes, core.Change{By: core.WriterUser, Object: &ps.key, Delete: true,
		Field: "clients, DNS records, then the Service itself", From: orUnset(strings.Join(ps.lf.Addresses, ", ")), To: "Service " + newKey.Namespace + "/" + name,
		Reason: ruleMoveClients.Because(moveSteps(old, newKey, target))})
	ps.addCheck(newKey, target, existing)
	ps.separation(target, base).finish()
	return nil
}

// planReplacement is the disruptive create of the new Service.
func (ps *planning) planReplacement(ctx context.Context, base, old *corev1.Service, newKey core.ObjectKey, created, target core.Path) {
	name := newKey.Name
	tmpl, dropped := replacementTemplate(base)
	edits := []core.Edit{annotationEdit(AnnotationIPMode, string(target)), annotationEdit(AnnotationReplaces, old.Name)}
	sep := ps.separation(target, base)
	if sep.local {
		edits = append(edits, etpEdit)
	}
	ps.plan.Changes = append(ps.plan.Changes, core.Change{By: core.WriterCluster, Object: &newKey, Strategy: core.StrategyApply,
		Create: true, CreateOnly: true, Template: tmpl, Edits: edits, Disruptive: true,
		Field: "metadata.annotations[" + AnnotationIPMode + "]", From: string(created), To: string(target),
		Reason: rulePlanReplace.Because(ps.replacementCost(old, name, created, target, sep.local, dropped))})
	if target == core.PathProxy {
		ps.requirePrerequisites(ctx)
	}
}

func orUnset(s string) string {
	if s == "" {
		return "(no address yet)"
	}
	return s
}

func (ps *planning) replacementCost(old *corev1.Service, name string, created, target core.Path, local bool, dropped []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Service %s/%s was created in %s mode and %s cannot be changed (docs/sources.md#vke-ip-mode): switching to %s needs a new Service. loopguard creates %s/%s beside it, a copy with %s: %s",
		old.Namespace, old.Name, created, AnnotationIPMode, target, old.Namespace, name, AnnotationIPMode, target)
	if local {
		b.WriteString(" and spec.externalTrafficPolicy: Local")
	}
	b.WriteString(". It costs: a second CLB with a new address (billed, and counted against the CLB quota, while both exist); every client and DNS record must move to the new address; new NodePorts and ClusterIP")
	switch target {
	case core.PathVIP:
		b.WriteString("; in-cluster clients of the new Service lose the CLB's TLS offload, monitoring, protocol conversion and PROXY protocol/TOA")
	case core.PathProxy:
		b.WriteString("; in-cluster traffic of the new Service goes through the CLB (a longer path, CLB bandwidth and connection quota), and client Pods must stay off the backends' nodes")
	}
	b.WriteString(". The old Service keeps serving until you delete it.")
	if len(dropped) > 0 {
		b.WriteString(" Not copied: " + strings.Join(dropped, "; ") + ".")
	}
	return b.String()
}

// moveSteps is what the user does to move from old to the replacement. It names objects and
// fields, not commands: the CLI renders the check (kubectl get) and the deletion (kubectl
// delete) from the plan's data; an Event or a Terraform diagnostic shows the same steps.
func moveSteps(old *corev1.Service, newKey core.ObjectKey, target core.Path) string {
	return "1. Wait until the status of " + newKey.String() + " shows the new CLB address and ipMode " + string(target) + " (status.loadBalancer.ingress[*].ip and ipMode). " +
		"2. Point in-cluster and external clients and DNS records at the new address (or at the Service name " + newKey.Name + "." + newKey.Namespace + ".svc). " +
		"3. Delete the old Service " + old.Namespace + "/" + old.Name + " yourself (loopguard never deletes it). " +
		"4. Update your manifests: the Service to keep is " + newKey.Name + "."
}

// requirePrerequisites blocks the plan for each ip-mode prerequisite not known to hold.
func (ps *planning) requirePrerequisites(ctx context.Context) {
	for _, p := range ps.prerequisites(ctx) {
		if err := p.Err(ps.ref); err != nil {
			ps.blockers = append(ps.blockers, err)
		}
	}
}

// addCheck asks the Reconciler to wait for status.loadBalancer.ingress[*].ipMode. observed is
// what the checked Service shows now (nil when it does not exist yet).
func (ps *planning) addCheck(key core.ObjectKey, target core.Path, observed *ServiceFacts) {
	if observed != nil && observed.HostnameOnly {
		ps.plan.Notes = append(ps.plan.Notes, ruleStatusHostname.Because(key.String()+" publishes a hostname, which carries no ipMode; loopguard cannot verify the mode from the status."))
		return
	}
	if target == core.PathVIP && ps.kubernetes().Met != core.Yes {
		ps.plan.Notes = append(ps.plan.Notes, ruleVerifyWithoutIPMode.Reason())
		return
	}
	ps.plan.Checks = append(ps.plan.Checks, core.Check{Object: key, Each: ingressPath,
		Edit: core.Edit{Path: []core.PathElem{dialect.F("ipMode")}, Value: string(target)}, Pending: pendingText(target, observed)})
}

// pendingText says what an unmet ipMode check means and what to do. The check itself (object,
// field, value) is data: renderers add how to look (the CLI prints a kubectl get).
func pendingText(target core.Path, f *ServiceFacts) string {
	switch {
	case f == nil || (f.Status == core.PathUnknown && !f.StatusMixed && len(f.Addresses) == 0):
		return "the cloud-controller-manager has not published the CLB's address yet: it is still creating the CLB, or no Volcengine cloud-controller-manager serves this Service (check the add-on is installed, and that spec.loadBalancerClass, if set, is " + LoadBalancerClass + "). Next: wait; loopguard looks again, and the status shows ipMode " + string(target) + " once it is done."
	case f.Status == target:
		return "the status showed ipMode " + string(target) + " when this plan was made; if it no longer does, something changed it since: look at the Service's events."
	case f.StatusMixed:
		return "the ingress points show different ipModes: the cloud-controller-manager is still updating them, or another controller writes the status. Next: wait, then check the status again."
	case f.Status == core.PathUnknown:
		return "the CLB has an address but the status shows no ipMode: the API server is older than v1.30 (no ipMode field) or the cloud-controller-manager is older than v1.43.0. Next: check both versions; ip-mode needs Kubernetes v1.30 and the cloud-controller-manager add-on v1.43.0 or later."
	default:
		return "the status shows ipMode " + string(f.Status) + " but the annotation asks for " + string(target) + ": the cloud-controller-manager is older than v1.43.0 (upgrade the add-on; Volcengine docs 6460/159826), or it has not reconciled the Service yet. Next: check the add-on's version and declare it (ccmVersion); once it is known to be v1.43.0 or later, a Service that still shows " + string(f.Status) + " was created before ip-mode could take effect, and loopguard plans a new one."
	}
}

// explainRejectedSwitches notes what a remedy rejected as disruptive would have cost.
func (ps *planning) explainRejectedSwitches() {
	for _, rj := range ps.req.Result.Decision.Rejected {
		if rj.Reason.Code != core.CodeDecideDisruptive {
			continue
		}
		action := ""
		for i := range ps.req.Result.Offers {
			if ps.req.Result.Offers[i].Remedy == rj.Remedy {
				action = ps.req.Result.Offers[i].Action
			}
		}
		ps.plan.Notes = append(ps.plan.Notes, ruleSwitchNeedsReplacement.Because(string(rj.Remedy)+" would switch "+ps.ref.String()+
			" to "+string(modeOf(rj.Remedy))+": "+action+". That means a new CLB and address for every client; allow disruptive changes (policy allowDisruptive) to have loopguard plan it."))
	}
}

// ownerOf returns a field manager other than loopguard's that owns the field at path (in
// managedFields' "f:" notation), or "".
func ownerOf(svc *corev1.Service, path ...string) string {
	for _, mf := range svc.ManagedFields {
		if mf.Manager == core.FieldManager || mf.FieldsV1 == nil || mf.Subresource != "" {
			continue
		}
		var fields map[string]any
		if json.Unmarshal(mf.FieldsV1.Raw, &fields) != nil {
			continue
		}
		var cur any = fields
		for _, p := range path {
			m, _ := cur.(map[string]any)
			cur = m[p]
		}
		if cur != nil {
			return mf.Manager
		}
	}
	return ""
}
