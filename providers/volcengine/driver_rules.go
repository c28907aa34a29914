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
	RulePlanCreate = core.Rule{Code: "vke-plan-create",
		Summary: "The Service does not exist yet: loopguard creates it with the ip-mode annotation in the creating write, the only write the cloud-controller-manager takes the mode from; it never adds the annotation to an existing Service.",
		Source:  srcAnnotation + "; " + srcDesign}
	RulePlanReplace = core.Rule{Code: "vke-plan-replace",
		Summary: "The Service exists with another ip-mode and the annotation cannot be changed: loopguard creates a new Service beside it with the new mode, which gets a new CLB and a new address; the old Service keeps serving until the user moves clients and deletes it. Nothing is applied unless disruptive changes are allowed.",
		Source:  srcAnnotation + "; " + srcDesign}
	RuleMoveClients = core.Rule{Code: "vke-move-clients",
		Summary: "After a replacement, the user moves clients and DNS records to the new Service's address, then deletes the old Service; loopguard never deletes a Service.",
		Source:  srcDesign}
	RuleRequestedMode = core.Rule{Code: "vke-requested-mode-differs",
		Summary: "The manifest asks for one ip-mode and the decision is the other; loopguard does not overwrite a mode the user wrote.",
		Source:  srcAnnotation + "; " + srcDesign}
	RuleReplaceReused = core.Rule{Code: "vke-replace-reused-clb",
		Summary: "The Service reuses an existing CLB (loadbalancer-id); a replacement Service on the same CLB would need the same listener ports while the old Service holds them, so loopguard does not plan one.",
		Source:  srcAnnotations}
	RuleReplaceNameTaken = core.Rule{Code: "vke-replace-name-taken",
		Summary: "A Service with the replacement's name already exists and is not loopguard's replacement of this Service.",
		Source:  srcDesign}
	RuleSwitchNeedsReplacement = core.Rule{Code: "vke-switch-needs-replacement",
		Summary: "A remedy that switches the ip-mode of this existing Service needs a new Service; the policy does not allow disruptive changes.",
		Source:  srcAnnotation}

	RuleCoLocated = core.Rule{Code: "vke-same-node-present",
		Summary: "In Proxy mode a declared client Pod runs on a node that runs a backend of the Service: its connections through the CLB that land on that backend fail.",
		Source:  srcRestriction + "; " + srcDomainProb}
	RuleAntiAffinity = core.Rule{Code: "vke-anti-affinity-patch",
		Summary: "Required pod anti-affinity on kubernetes.io/hostname against the backends' labels keeps new client Pods off every node that runs a backend; Pods already placed must be restarted to move.",
		Source:  srcRestriction + "; " + srcAntiAff}
	RuleLocalPolicy = core.Rule{Code: "vke-external-traffic-local",
		Summary: "With NodePort backends and externalTrafficPolicy Cluster the CLB sends to every node, so keeping clients off the backends' nodes is not enough; Local makes it send only to nodes that run a backend (and keeps the client address).",
		Source:  srcDomainProb + "; " + srcAnnotations + " (pass-through off: NodePort backends)"}
	RuleProxyProbability = core.Rule{Code: "vke-proxy-loop-probability",
		Summary: "The core's per-connection loop probability in Proxy mode for the Pods as they are placed now.",
		Source:  srcDomainProb}
	RuleProxyRefused = core.Rule{Code: "vke-proxy-refused-co-located",
		Summary: "The driver is set to refuse Proxy mode while any declared client Pod shares a node with a backend.",
		Source:  srcRestriction}

	RuleStatusPending = core.Rule{Code: "vke-status-pending",
		Summary: "After the write, status.loadBalancer.ingress[].ipMode must show the requested mode; until the cloud-controller-manager sets it the change is not in effect, and loopguard looks again later.",
		Source:  srcVerification + "; " + srcKEP}
	RuleVerifyWithoutIPMode = core.Rule{Code: "vke-verify-without-ipmode",
		Summary: "Whether the API server has status.loadBalancer.ingress[].ipMode (Kubernetes v1.30 or later) is not known, so loopguard does not wait for it; verify VIP mode in the CLB's monitoring (no new connections from in-cluster clients).",
		Source:  srcVerification + "; " + srcKEP}
	RuleServerVersion = core.Rule{Code: "vke-server-version",
		Summary: "The API server's version, read through discovery, decides the Kubernetes prerequisite.",
		Source:  srcPrereqs + "; Kubernetes discovery /version"}
	RuleClusterNetwork = core.Rule{Code: "vke-cluster-network",
		Summary: "The network model, Pod interface and service forwarding were read from the cluster's CNI configuration (object names from public dumps, see assumption 8 in unconfirmed.go; a declared profile value wins).",
		Source:  srcCello}
	RuleClusterCCM = core.Rule{Code: "vke-cluster-ccm",
		Summary: "The cloud-controller-manager's version was read from its Deployment's image tag (the open chart's Deployment; see assumption 9 in unconfirmed.go; a declared ccmVersion wins).",
		Source:  srcCCMChart}
)

// driverRules are appended to the dialect's rules.
var driverRules = []core.Rule{
	RulePlanCreate, RulePlanReplace, RuleMoveClients, RuleRequestedMode, RuleReplaceReused,
	RuleReplaceNameTaken, RuleSwitchNeedsReplacement, RuleCoLocated, RuleAntiAffinity,
	RuleLocalPolicy, RuleProxyProbability, RuleProxyRefused, RuleStatusPending,
	RuleVerifyWithoutIPMode, RuleServerVersion, RuleClusterNetwork, RuleClusterCCM,
}
