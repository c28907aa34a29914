package kubernetes

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// Azure: kubernetes-sigs/cloud-provider-azure, read at v1.36.5, makes an Azure Standard Load
// Balancer rule, which passes the client's address through.
type azureCloud struct{ cloudBase }

const (
	annAzureInternal        = "service.beta.kubernetes.io/azure-load-balancer-internal"
	annAzureNoFloatingIP    = "service.beta.kubernetes.io/azure-disable-load-balancer-floating-ip"
	azureRepo               = "kubernetes-sigs/cloud-provider-azure "
	srcAzureInternal        = azureRepo + "pkg/provider/azure_loadbalancer.go requiresInternalLoadBalancer@v1.36.5 (exactly \"true\" builds an internal load balancer; \"True\" a public one, though helpers for side decisions compare case-insensitively)"
	srcAzureFloating        = azureRepo + "pkg/consts/helpers.go IsK8sServiceDisableLoadBalancerFloatingIP, pkg/provider/azure_loadbalancer.go@v1.36.5 (\"true\" in any case: the rule sends to the NodePort; otherwise floating IP on, the packets keep the frontend IP as destination)"
	srcAzureStatus          = azureRepo + "pkg/provider/azure_loadbalancer.go@v1.36.5 (each frontend IP, no hostname, no ipMode)"
	srcAzureKind            = "learn.microsoft.com azure/load-balancer/concepts, \"Load balancing algorithm\" (the load balancer doesn't close or originate flows; the original source IP address is preserved)"
	codeAzureInternalCase   = core.Code("k8s-azure-internal-case")
	msgAzureInternalCaseFix = "write exactly \"true\" for an internal load balancer"
)

var ruleAzureInternalCase = core.Rule{Code: codeAzureInternalCase,
	Summary: "azure-load-balancer-internal is compared with \"true\" exactly when the load balancer is built, so \"True\" makes a public one, while some of the controller's helpers read it case-insensitively: probably a mistake.",
	Source:  srcAzureInternal}

var azureFacts = cloudFacts{
	name:               "azure",
	title:              "Azure",
	providerIDPrefixes: []string{"azure://"},
	annotationPrefixes: []string{"service.beta.kubernetes.io/azure-"},
	sourceNAT:          core.No,
	ipMode:             ccmIPMode{read: true, source: srcAzureStatus},
	source:             srcAzureKind,
	scope: []ScopeAnnotation{
		{Cloud: "Azure", Key: annAzureInternal,
			// requiresInternalLoadBalancer: value == "true"; anything else keeps the public default.
			Private: []string{"true"}, Public: []string{"*"},
			Source: srcAzureInternal},
	},
	rules: []core.Rule{ruleAzureInternalCase},
	doc: cloudDoc{
		lb:      "pass-through: the client's address (floating IP on by default: the packets keep the frontend IP; `azure-disable-load-balancer-floating-ip` sends to the NodePort)",
		backend: "nothing (the PROXY header of `azure-pls-proxy-protocol` only on Private Link connections, not read)",
		status:  "each frontend IP, never a hostname or an ipMode",
		remedy:  "none needed (intercepted, nothing loops); with floating IP on, ipMode Proxy is not offered, not even to a fork (inferred)",
		sources: "cloud-provider-azure v1.36.5: `pkg/provider/azure_loadbalancer.go`, `pkg/consts/helpers.go`; Azure Load Balancer documentation",
	},
}

func (azureCloud) facts() *cloudFacts { return &azureFacts }

// azureNoFloatingIP reads azure-disable-load-balancer-floating-ip as the controller does:
// "true" in any case, untrimmed.
func azureNoFloatingIP(svc *corev1.Service) (bool, taken) {
	raw, set := svc.Annotations[annAzureNoFloatingIP]
	if !set {
		return false, valueAbsent
	}
	return strings.EqualFold(raw, "true"), valueTaken
}

func (azureCloud) read(v *cloudView) {
	if raw := v.svc.Annotations[annAzureInternal]; raw != "true" && strings.EqualFold(raw, "true") {
		v.note(ruleAzureInternalCase.Because("Service " + v.svc.Namespace + "/" + v.svc.Name + ": " + annAzureInternal + ": " + quote(raw) +
			": the controller builds a public load balancer for it; " + msgAzureInternalCaseFix + " [" + srcAzureInternal + "]"))
	}
	v.rowDefault()
	if off, _ := azureNoFloatingIP(v.svc); v.detected && !off {
		v.rd.throughLBUnmet = append(v.rd.throughLBUnmet, core.Precondition{Kind: core.PreconditionUnsupported,
			Reason: ruleCCMNoProxyIPMode.Because("azure: with floating IP on, the packets from outside reach the nodes addressed to the frontend IP, which the nodes' rule for that IP answers: ipMode Proxy would remove the rule (inferred) [" + srcAzureFloating + "]")})
	}
}
