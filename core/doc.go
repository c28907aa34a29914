// Package core is for anyone who needs to know whether in-cluster clients of a Kubernetes
// LoadBalancer Service or Ingress loop through the cloud load balancer, and to make them stop,
// without depending on any one cloud.
//
// A host (a cloud-controller-manager fork, a Terraform provider, a controller, a CLI) holds
// one Provider per cloud — tencent.NewProvider, volcengine.NewProvider, kubernetes.NewProvider
// — and a Reconciler built from it:
//
//	r := core.NewReconciler(p, &core.ReconcilerOptions{ClusterWriter: w, Policy: policy})
//	plan, err := r.Plan(ctx, svc, cluster)  // reads only; plan.Blocked says why not, as data
//	out, err := r.Apply(ctx, plan)          // out.Written: what was really written
//	out, err = r.Remove(ctx, svc, cluster)  // takes back what loopguard set, nothing else
//
// Errors have kinds to branch on with errors.Is and errors.As (ErrNotAllowlisted with an
// *AllowlistError, ErrPrecondition with a *PreconditionError, ErrRetryLater with a
// *RetryError, ...); Blocker is the same as data. Evaluate is the read-only path.
//
// Underneath is the portable model and the dataplane physics:
//
//	Kubernetes objects + cloud reads ──► facts
//	facts ──(Dialect: translate a cloud's annotations)──► Exposure        (pure)
//	Exposure ──(Assess: dataplane physics)──► Assessment                  (pure)
//	Assessment + Offers + Policy ──(Decide)──► Decision                   (pure)
//	Decision + observed state ──(Driver)──► Plan of Changes               (reads only)
//	Plan ──(Reconciler + Driver + ClusterWriter)──► applied, then verified
//
// The core knows physics, not clouds: it never imports a cloud SDK or client-go. A Dialect
// turns one cloud's dialect into an Exposure and lists the remedies that cloud can carry out,
// as Offers with their costs and preconditions; a Driver plans and applies them. Every
// conclusion carries a Reason whose Code is stable and documented in docs/reasons.md, with the
// source it comes from. core/drivertest has the conformance scenarios every Driver runs.
package core
