// Package core is for anyone who needs to know whether in-cluster clients of a Kubernetes
// LoadBalancer Service or Ingress loop through the cloud load balancer, and what to do about
// it, without depending on any one cloud.
//
// The package holds the portable model and the dataplane physics (see docs/sources.md#design, "The shape"):
//
//	Kubernetes objects + cloud reads ──► facts
//	facts ──(Dialect: translate a cloud's annotations)──► Exposure        (pure)
//	Exposure ──(Assess: dataplane physics)──► Assessment                  (pure)
//	Assessment + Offers + Policy ──(Decide)──► Decision                   (pure)
//
// The core knows physics, not clouds: it never imports a cloud SDK or client-go. A Dialect
// (providers/tencent, providers/volcengine, providers/kubernetes) turns one cloud's dialect
// into an Exposure and lists the remedies that cloud can carry out, as Offers with their costs
// and preconditions. Every conclusion carries a Reason whose Code is stable and documented in
// docs/reasons.md, with the source document it comes from.
package core
