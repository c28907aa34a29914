package kubernetes

// Baidu Cloud CCE: only its internal-LB annotation is read here.
type baiduCloud struct{ cloudBase }

var baiduFacts = cloudFacts{
	name:  "baidu",
	title: "Baidu Cloud CCE",
	scope: []ScopeAnnotation{
		{Cloud: "Baidu Cloud", Key: "service.beta.kubernetes.io/cce-load-balancer-internal-vpc",
			Private: []string{"true"},
			Source:  "kubernetes/website service.md (Internal load balancer, Baidu Cloud)"},
	},
}

func (baiduCloud) facts() *cloudFacts { return &baiduFacts }
