package kubernetes

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// GKE: the GCE cloud provider (kubernetes/cloud-provider-gcp, read at v36.3.8) and the GKE L4
// controllers (kubernetes/ingress-gce, read at v1.41.1) make a passthrough Network Load
// Balancer for every LoadBalancer Service, internal or external.
type gkeCloud struct{ cloudBase }

const (
	annGKELBType           = "networking.gke.io/load-balancer-type"
	annGKELBTypeDeprecated = "cloud.google.com/load-balancer-type"
	gkeClassInternal       = "networking.gke.io/l4-regional-internal"
	gkeClassExternal       = "networking.gke.io/l4-regional-external"
	gkeClassInternalLegacy = "networking.gke.io/l4-regional-internal-legacy"
	gkeClassExternalLegacy = "networking.gke.io/l4-regional-external-legacy"
	gkeClassStandaloneNEG  = "networking.gke.io/standalone-passthrough-lb-neg"
)

// Upstream sources, at the tag read.
const (
	srcGKEType   = "kubernetes/ingress-gce pkg/l4/annotations/gce_annotations.go GetLoadBalancerAnnotationType@v1.41.1 and kubernetes/cloud-provider-gcp providers/gce/gce_annotations.go@v36.3.8 (the class decides first; then networking.gke.io/load-balancer-type if present at all, else cloud.google.com/load-balancer-type; \"Internal\" or \"internal\" is internal, anything else external, without error)"
	srcGKEKind   = "Google Cloud docs load-balancing/docs/passthrough-network-load-balancer (packets reach the backends with source and destination unchanged; direct server return) and load-balancing/docs/internal (the original packets unproxied); GKE docs concepts/service-load-balancer"
	srcGKEStatus = "kubernetes/cloud-provider-gcp providers/gce/gce_loadbalancer*.go@v36.3.8 and kubernetes/ingress-gce pkg/utils/utils.go AddIPToLBStatus@v1.41.1 (the IP, no ipMode; the standalone NEG class sets ipMode VIP, v1.41.0)"
)

// gkeClasses are the classes the GKE controllers claim (ingress-gce gce_annotations.go@v1.41.1;
// v1.36.0 for the first four, v1.41.0 for the standalone NEG class).
var gkeClasses = []string{gkeClassInternal, gkeClassExternal, gkeClassInternalLegacy, gkeClassExternalLegacy, gkeClassStandaloneNEG}

var gkeFacts = cloudFacts{
	name:               "gke",
	title:              "Google Kubernetes Engine",
	providerIDPrefixes: []string{"gce://"},
	classes:            gkeClasses,
	annotationPrefixes: []string{"networking.gke.io/", "cloud.google.com/"},
	sourceNAT:          core.No,
	ipMode:             ccmIPMode{read: true, source: srcGKEStatus},
	source:             srcGKEKind,
	scope: []ScopeAnnotation{
		{Cloud: "GKE", Key: annGKELBType,
			// "Internal" (or the deprecated "internal") makes an internal passthrough NLB; any
			// other value falls back to the external default. A class decides before it.
			Private: []string{"Internal", "internal"}, Public: []string{"*"},
			when:   gkeNoScopeClass,
			Source: srcGKEType},
		{Cloud: "GKE (deprecated key)", Key: annGKELBTypeDeprecated,
			Private: []string{"Internal", "internal"}, Public: []string{"*"},
			ShadowedBy: annGKELBType,
			when:       gkeNoScopeClass,
			Source:     srcGKEType},
	},
	scopeClasses: []ScopeClass{
		{Cloud: "GKE", Class: gkeClassInternal, Scope: core.Private, Source: srcGKEType},
		{Cloud: "GKE", Class: gkeClassInternalLegacy, Scope: core.Private, Source: srcGKEType},
		{Cloud: "GKE", Class: gkeClassExternal, Scope: core.Public, Source: srcGKEType},
		{Cloud: "GKE", Class: gkeClassExternalLegacy, Scope: core.Public, Source: srcGKEType},
	},
	doc: cloudDoc{
		lb:      "a passthrough Network Load Balancer, internal or external, whichever controller makes it: the client's address, replies by direct server return",
		backend: "nothing: no PROXY protocol, no X-Forwarded-For",
		status:  "the IP, no ipMode (VIP); the standalone NEG class publishes VIP explicitly",
		remedy:  "none needed (intercepted, nothing loops); ipMode Proxy is not offered, not even to a fork: the packets from outside reach the nodes addressed to the LB's IP (inferred)",
		sources: "cloud-provider-gcp v36.3.8: `providers/gce/gce_annotations.go`, `gce_loadbalancer*.go`; ingress-gce v1.41.1 (classes dated from v1.36.0): `pkg/l4/annotations/gce_annotations.go`, `pkg/utils/utils.go`; Google Cloud passthrough NLB documentation",
	},
}

func (gkeCloud) facts() *cloudFacts { return &gkeFacts }

// gkeNoScopeClass: the annotation decides only when no class does.
func gkeNoScopeClass(svc *corev1.Service) bool {
	c := svc.Spec.LoadBalancerClass
	return c == nil || *c != gkeClassInternal && *c != gkeClassExternal && *c != gkeClassInternalLegacy && *c != gkeClassExternalLegacy
}

func (gkeCloud) read(v *cloudView) {
	v.rowDefault()
	if v.detected {
		v.rd.throughLBUnmet = append(v.rd.throughLBUnmet, core.Precondition{Kind: core.PreconditionUnsupported,
			Reason: ruleCCMNoProxyIPMode.Because("gke: a passthrough load balancer delivers the packets from outside to the nodes still addressed to its IP, which the nodes' rule for that IP answers: ipMode Proxy would remove the rule (inferred) [" + srcGKEKind + "]")})
	}
}
