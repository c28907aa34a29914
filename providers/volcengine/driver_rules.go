package volcengine

import "github.com/loopguard/loopguard/core"

// Sources of the driver's rules besides seed 003.
const (
	srcDesign     = "docs/sources.md#design (invariants: nothing written before the whole plan is validated; a change that costs the user something is never applied silently)"
	srcDomainProb = "docs/sources.md#loopback (probability)"
	srcCello      = "volcengine/cello README and docs/config.md (networkMode eni_shared: IPVlan; Cilium replaces kube-proxy); imroc/kubernetes-guide appendix/vendor/volcengine (a VKE cluster's cello-config and cilium-config)"
	srcCCMChart   = "volcengine/volcengine-cloud-controller-manager manifests/cloud-controller-manager (Deployment, image .../vke/cloud-controller-manager:<version>)"
	srcAntiAff    = "Kubernetes API: PodAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution (a list without a merge key: a strategic merge patch replaces it whole)"
)

// The driver's rules: how a plan is made. Listed by Dialect.Rules with the dialect's own.
var (
	rulePlanCreate = core.Rule{Code: CodePlanCreate,
		Summary: "The Service does not exist yet: loopguard creates it with the ip-mode annotation in the creating write, the only write the cloud-controller-manager takes the mode from; it never adds the annotation to an existing Service.",
		Source:  srcAnnotation + "; " + srcDesign}
	rulePlanReplace = core.Rule{Code: CodePlanReplace,
		Summary: "The Service exists with another ip-mode and the annotation cannot be changed: loopguard creates a new Service beside it with the new mode, which gets a new CLB and a new address; the old Service keeps serving until the user moves clients and deletes it. Nothing is applied unless disruptive changes are allowed.",
		Source:  srcAnnotation + "; " + srcDesign}
	ruleMoveClients = core.Rule{Code: CodeMoveClients,
		Summary: "After a replacement, the user moves clients and DNS records to the new Service's address, then deletes the old Service; loopguard never deletes a Service.",
		Source:  srcDesign}
	ruleRequestedMode = core.Rule{Code: CodeRequestedMode,
		Summary: "The manifest asks for one ip-mode and the decision is the other; loopguard does not overwrite a mode the user wrote.",
		Source:  srcAnnotation + "; " + srcDesign}
	ruleReplaceReused = core.Rule{Code: CodeReplaceReused,
		Summary: "The Service reuses an existing CLB (loadbalancer-id); a replacement Service on the same CLB would need the same listener ports while the old Service holds them, so loopguard does not plan one.",
		Source:  srcAnnotations}
	ruleReplaceNameTaken = core.Rule{Code: CodeReplaceNameTaken,
		Summary: "A Service with the replacement's name already exists and is not loopguard's replacement of this Service.",
		Source:  srcDesign}
	ruleSwitchNeedsReplacement = core.Rule{Code: CodeSwitchNeedsReplacement,
		Summary: "A remedy that switches the ip-mode of this existing Service needs a new Service; the policy does not allow disruptive changes.",
		Source:  srcAnnotation}

	ruleCoLocated = core.Rule{Code: CodeCoLocated,
		Summary: "In Proxy mode a declared client Pod runs on a node that runs a backend of the Service: its connections through the CLB that land on that backend fail.",
		Source:  srcRestriction + "; " + srcDomainProb}
	ruleAntiAffinity = core.Rule{Code: CodeAntiAffinity,
		Summary: "Required pod anti-affinity on kubernetes.io/hostname against the backends' labels keeps new client Pods off every node that runs a backend; Pods already placed must be restarted to move.",
		Source:  srcRestriction + "; " + srcAntiAff}
	ruleLocalPolicy = core.Rule{Code: CodeLocalPolicy,
		Summary: "With NodePort backends and externalTrafficPolicy Cluster the CLB sends to every node, so keeping clients off the backends' nodes is not enough; Local makes it send only to nodes that run a backend (and keeps the client address).",
		Source:  srcDomainProb + "; " + srcAnnotations + " (pass-through off: NodePort backends)"}
	ruleProxyProbability = core.Rule{Code: CodeProxyProbability,
		Summary: "The core's per-connection loop probability in Proxy mode for the Pods as they are placed now.",
		Source:  srcDomainProb}
	ruleProxyRefused = core.Rule{Code: CodeProxyRefused,
		Summary: "The driver is set to refuse Proxy mode while any declared client Pod shares a node with a backend.",
		Source:  srcRestriction}

	ruleStatusPending = core.Rule{Code: CodeStatusPending,
		Summary: "After the write, status.loadBalancer.ingress[].ipMode must show the requested mode; until the cloud-controller-manager sets it the change is not in effect, and loopguard looks again later.",
		Source:  srcVerification + "; " + srcKEP}
	ruleVerifyWithoutIPMode = core.Rule{Code: CodeVerifyWithoutIPMode,
		Summary: "Whether the API server has status.loadBalancer.ingress[].ipMode (Kubernetes v1.30 or later) is not known, so loopguard does not wait for it; verify VIP mode in the CLB's monitoring (no new connections from in-cluster clients).",
		Source:  srcVerification + "; " + srcKEP}
	ruleServerVersion = core.Rule{Code: CodeServerVersion,
		Summary: "The API server's version, read through discovery, decides the Kubernetes prerequisite.",
		Source:  srcPrereqs + "; Kubernetes discovery /version"}
	ruleClusterNetwork = core.Rule{Code: CodeClusterNetwork,
		Summary: "The network model, Pod interface and service forwarding were read from the cluster's CNI configuration (object names from public dumps, see assumption 8 in unconfirmed.go; a declared profile value wins).",
		Source:  srcCello}
	ruleClusterCCM = core.Rule{Code: CodeClusterCCM,
		Summary: "The cloud-controller-manager's version was read from its Deployment's image tag (the open chart's Deployment; see assumption 9 in unconfirmed.go; a declared ccmVersion wins).",
		Source:  srcCCMChart}
)

// driverRules are appended to the dialect's rules.
var driverRules = []core.Rule{
	rulePlanCreate, rulePlanReplace, ruleMoveClients, ruleRequestedMode, ruleReplaceReused,
	ruleReplaceNameTaken, ruleSwitchNeedsReplacement, ruleCoLocated, ruleAntiAffinity,
	ruleLocalPolicy, ruleProxyProbability, ruleProxyRefused, ruleStatusPending,
	ruleVerifyWithoutIPMode, ruleServerVersion, ruleClusterNetwork, ruleClusterCCM,
}
