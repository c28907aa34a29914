package kubernetes

import "github.com/loopguard/loopguard/core"

// GKE: the GKE L4 controllers (kubernetes/ingress-gce pkg/l4) and the GCE cloud provider make
// a pass-through load balancer for a LoadBalancer Service, internal or external.
type gkeCloud struct{ cloudBase }

const (
	srcGKE    = "GKE docs concepts/service-load-balancer (a LoadBalancer Service gets a pass-through load balancer, internal or external); Google Cloud docs load-balancing/docs/passthrough-network-load-balancer, opening paragraph (packets reach the backends with source and destination unchanged; direct server return) and load-balancing/docs/internal (the internal one forwards the original packets unproxied, preserving the client source IP); the status carries the IP, which kube-proxy intercepts"
	srcCCMGKE = "kubernetes/ingress-gce pkg/l4 (the GKE L4 controllers publish ipMode VIP); kubernetes/cloud-provider-gcp (no ipMode)"
)

var gkeFacts = cloudFacts{
	name:               "gke",
	title:              "Google Kubernetes Engine",
	providerIDPrefixes: []string{"gce://"},
	classes:            []string{"networking.gke.io/l4-regional-internal", "networking.gke.io/l4-regional-external"},
	annotationPrefixes: []string{"networking.gke.io/", "cloud.google.com/"},
	sourceNAT:          core.No,
	ipMode:             ccmIPMode{read: true, source: srcCCMGKE},
	source:             srcGKE,
	scope: []ScopeAnnotation{
		{Cloud: "GKE", Key: "networking.gke.io/load-balancer-type",
			// GetLoadBalancerAnnotationType: "Internal" (or the deprecated "internal") makes an
			// internal passthrough NLB; any other value falls back to the external default.
			Private: []string{"Internal", "internal"}, Public: []string{"*"},
			Source: "GKE docs concepts/service-load-balancer-parameters; kubernetes/legacy-cloud-providers gce/gce_annotations.go GetLoadBalancerAnnotationType"},
		{Cloud: "GKE (deprecated key)", Key: "cloud.google.com/load-balancer-type",
			Private: []string{"Internal", "internal"}, Public: []string{"*"},
			ShadowedBy: "networking.gke.io/load-balancer-type",
			Source:     "kubernetes/website service.md (Internal load balancer, GCP); gce_annotations.go (networking.gke.io/load-balancer-type is read first)"},
	},
	scopeClasses: []ScopeClass{
		{Cloud: "GKE", Class: "networking.gke.io/l4-regional-internal", Scope: core.Private,
			Source: "GKE docs concepts/service-load-balancer-parameters (spec.loadBalancerClass: networking.gke.io/l4-regional-internal)"},
	},
}

func (gkeCloud) facts() *cloudFacts { return &gkeFacts }
