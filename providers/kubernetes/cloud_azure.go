package kubernetes

import "github.com/loopguard/loopguard/core"

// Azure: kubernetes-sigs/cloud-provider-azure makes an Azure Standard Load Balancer, which
// passes the client's address through.
type azureCloud struct{ cloudBase }

const (
	srcAzure    = "learn.microsoft.com azure/load-balancer/concepts, \"Load balancing algorithm\" (the load balancer doesn't close or originate flows, and the original source IP address is preserved when the flow arrives at the virtual machine); cloud-provider-azure publishes the frontend IP"
	srcCCMAzure = "kubernetes-sigs/cloud-provider-azure pkg/provider/azure_loadbalancer.go (the frontend IP, no ipMode; floating IP on unless service.beta.kubernetes.io/azure-disable-load-balancer-floating-ip, which sends to the NodePort instead)"
)

var azureFacts = cloudFacts{
	name:               "azure",
	title:              "Azure",
	providerIDPrefixes: []string{"azure://"},
	annotationPrefixes: []string{"service.beta.kubernetes.io/azure-"},
	sourceNAT:          core.No,
	ipMode:             ccmIPMode{read: true, source: srcCCMAzure},
	source:             srcAzure,
	scope: []ScopeAnnotation{
		{Cloud: "Azure", Key: "service.beta.kubernetes.io/azure-load-balancer-internal",
			// requiresInternalLoadBalancer: value == "true"; anything else keeps the public default.
			Private: []string{"true"}, Public: []string{"*"},
			Source: "learn.microsoft.com azure/aks/internal-lb; cloud-provider-azure requiresInternalLoadBalancer (l == \"true\")"},
	},
}

func (azureCloud) facts() *cloudFacts { return &azureFacts }
