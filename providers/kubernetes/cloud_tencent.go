package kubernetes

// Tencent Cloud TKE has a dialect of its own (providers/tencent); this unit reads only its
// internal-LB annotation, for a TKE Service assessed with the plain dialect.
type tencentCloud struct{ cloudBase }

var tencentFacts = cloudFacts{
	name:  "tencent",
	title: "Tencent Cloud TKE",
	scope: []ScopeAnnotation{
		{Cloud: "Tencent Cloud", Key: "service.kubernetes.io/qcloud-loadbalancer-internal-subnetid",
			// Any subnet ID makes the CLB private.
			Private: []string{"*"},
			Source:  "kubernetes/website service.md (Internal load balancer, Tencent Cloud); docs/sources.md#tke-annotations (Tencent doc 457/51258)"},
	},
}

func (tencentCloud) facts() *cloudFacts { return &tencentFacts }
