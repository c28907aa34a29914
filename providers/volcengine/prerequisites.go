package volcengine

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/loopguard/loopguard/core"
)

// The ip-mode prerequisites of seed 003 ("前提条件").
var (
	// MinKubernetesVersion: "集群 Kubernetes 版本为 v1.30 及以上版本".
	MinKubernetesVersion = version.MustParseGeneric("v1.30.0")
	// MinCCMVersion: "已安装 cloud-controller-manager 组件，并升级至 v1.43.0 及以上版本".
	MinCCMVersion = version.MustParseGeneric("v1.43.0")
)

// Names of the prerequisites, also used as Prerequisite.Name.
const (
	PrereqKubernetes = "kubernetes-version"
	PrereqNetwork    = "network"
	PrereqCCM        = "ccm-version"
)

// Prerequisite is one ip-mode prerequisite checked against the ClusterProfile.
type Prerequisite struct {
	// Name is one of PrereqKubernetes, PrereqNetwork, PrereqCCM.
	Name string
	// Component is what the prerequisite is about, in words ("Kubernetes").
	Component string
	// Have is what the profile says ("" when it says nothing).
	Have string
	// Need is what seed 003 requires.
	Need string
	// Met is Yes, No, or Unknown when the profile lacks a fact.
	Met core.Fact
	// Missing names the ClusterProfile fields that would tell, when Met is Unknown.
	Missing []string
	// Kind is the precondition kind an offer reports when the prerequisite is not met:
	// version for Kubernetes and the CCM, unsupported (or unknown) for the network.
	Kind   core.PreconditionKind
	Reason core.Reason
}

// Err returns the prerequisite as a *core.PreconditionError for obj, or nil when it is met.
func (p *Prerequisite) Err(obj core.ObjectRef) error {
	if p.Met == core.Yes {
		return nil
	}
	return &core.PreconditionError{Object: obj, Component: p.Component, Have: p.Have, Need: p.Need, Reason: p.Reason}
}

// Prerequisites checks the three ip-mode prerequisites of seed 003 against a profile, in the
// order the seed lists them: Kubernetes version, network model, CCM version.
func Prerequisites(p *core.ClusterProfile) []Prerequisite {
	return []Prerequisite{kubernetesPrereq(p), networkPrereq(p), ccmPrereq(p)}
}

func kubernetesPrereq(p *core.ClusterProfile) Prerequisite {
	r := Prerequisite{Name: PrereqKubernetes, Component: "Kubernetes", Have: p.KubernetesVersion,
		Need: ">= v1.30", Kind: core.PreconditionVersion}
	r.Met, r.Reason = versionAtLeast(p.KubernetesVersion, MinKubernetesVersion, RulePrereqKubernetes, "kubernetesVersion", "Kubernetes")
	if r.Met == core.Unknown {
		r.Missing = []string{"kubernetesVersion"}
	}
	return r
}

func ccmPrereq(p *core.ClusterProfile) Prerequisite {
	r := Prerequisite{Name: PrereqCCM, Component: "cloud-controller-manager", Have: p.CCMVersion,
		Need: ">= v1.43.0", Kind: core.PreconditionVersion}
	r.Met, r.Reason = versionAtLeast(p.CCMVersion, MinCCMVersion, RulePrereqCCM, "ccmVersion", "the cloud-controller-manager add-on")
	if r.Met == core.Unknown {
		r.Missing = []string{"ccmVersion"}
	}
	return r
}

func versionAtLeast(have string, min *version.Version, rule core.Rule, fieldName, what string) (core.Fact, core.Reason) {
	if have == "" {
		return core.Unknown, rule.Because("The profile does not say which version " + what + " runs (" + fieldName + "); ip-mode needs v" + min.String() + " or later.")
	}
	v, err := core.ParseVersion(have)
	if err != nil {
		return core.Unknown, rule.Because("The profile's " + fieldName + " " + quote(have) + " is not a version; ip-mode needs v" + min.String() + " or later.")
	}
	if v.AtLeast(min) {
		return core.Yes, rule.Because(what + " " + have + " meets the ip-mode prerequisite (v" + min.String() + " or later).")
	}
	return core.No, rule.Because(what + " " + have + " is older than v" + min.String() + ", which ip-mode needs.")
}

// networkPrereq: "集群网络模型为 VPC-CNI，且 Pod 网络接口为 IPVlan，服务转发模式为 eBPF" (seed 003).
func networkPrereq(p *core.ClusterProfile) Prerequisite {
	d := &p.Dataplane
	r := Prerequisite{Name: PrereqNetwork, Component: "network model",
		Have: networkHave(p), Need: "VPC-CNI with IPVlan Pod interfaces and eBPF service forwarding"}
	var wrong []string
	switch cni := strings.ToLower(d.CNI); {
	case cni == "":
		r.Missing = append(r.Missing, "dataplane.cni")
	case !isVPCCNI(cni):
		wrong = append(wrong, "CNI "+quote(d.CNI)+" (need vpc-cni)")
	}
	switch d.PodInterface {
	case "":
		r.Missing = append(r.Missing, "dataplane.podInterface")
	case "ipvlan":
	default:
		wrong = append(wrong, "Pod interface "+quote(d.PodInterface)+" (need ipvlan)")
	}
	switch p.ProxyMode {
	case core.ProxyModeUnknown:
		r.Missing = append(r.Missing, "proxyMode")
	case core.ProxyModeEBPF:
	default:
		wrong = append(wrong, "service forwarding "+quote(string(p.ProxyMode))+" (need ebpf)")
	}
	switch {
	case len(wrong) > 0:
		r.Met, r.Kind = core.No, core.PreconditionUnsupported
		r.Missing = nil
		r.Reason = RulePrereqNetwork.Because("The cluster's network does not support ip-mode: " + strings.Join(wrong, ", ") + ".")
	case len(r.Missing) > 0:
		r.Met, r.Kind = core.Unknown, core.PreconditionUnknown
		r.Reason = RulePrereqNetwork.Because("The profile does not say " + strings.Join(r.Missing, ", ") + "; ip-mode needs VPC-CNI with IPVlan Pod interfaces and eBPF service forwarding.")
	default:
		r.Met, r.Kind = core.Yes, core.PreconditionUnsupported
		r.Reason = RulePrereqNetwork.Because("VPC-CNI with IPVlan Pod interfaces and eBPF service forwarding meets the ip-mode prerequisite.")
	}
	return r
}

// isVPCCNI accepts the names the VKE VPC-CNI goes by: "vpc-cni" (the VKE add-on) and "cello"
// (its open-source implementation, volcengine/cello README: secondary-ENI Pod network with
// ipvlan, Cilium eBPF for Services).
func isVPCCNI(cni string) bool { return cni == "vpc-cni" || cni == "cello" }

func networkHave(p *core.ClusterProfile) string {
	d := &p.Dataplane
	if d.CNI == "" && d.PodInterface == "" && p.ProxyMode == "" {
		return ""
	}
	return orUnknown(d.CNI) + "/" + orUnknown(d.PodInterface) + "/" + orUnknown(string(p.ProxyMode))
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func quote(s string) string { return "\"" + s + "\"" }
