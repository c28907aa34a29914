package kubernetes

// Volcengine VKE has a dialect of its own (providers/volcengine); this unit reads only its
// address-type annotation, for a VKE Service assessed with the plain dialect.
type volcengineCloud struct{ cloudBase }

var volcengineFacts = cloudFacts{
	name:  "volcengine",
	title: "Volcengine VKE",
	scope: []ScopeAnnotation{
		{Cloud: "Volcengine", Key: "service.beta.kubernetes.io/volcengine-loadbalancer-address-type",
			Private: []string{"PRIVATE"}, Public: []string{"PUBLIC"},
			Source: "docs/sources.md#vke (Volcengine docs 6460/100304)"},
	},
}

func (volcengineCloud) facts() *cloudFacts { return &volcengineFacts }
