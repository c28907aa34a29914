package volcengine

import (
	"math"
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
	all := prerequisites(p)
	return all[:]
}

// prerequisites is Prerequisites without the slice, so a translation keeps it on the stack.
// A met prerequisite costs no allocation; only what falls short is spelled out.
func prerequisites(p *core.ClusterProfile) [3]Prerequisite {
	return [3]Prerequisite{kubernetesPrereq(p), networkPrereq(p), ccmPrereq(p)}
}

var (
	kubernetesMin = [3]uint{1, 30, 0}
	ccmMin        = [3]uint{1, 43, 0}

	reasonKubernetesMet = rulePrereqKubernetes.Because("Kubernetes meets the ip-mode prerequisite (v1.30 or later).")
	reasonCCMMet        = rulePrereqCCM.Because("The cloud-controller-manager add-on meets the ip-mode prerequisite (v1.43.0 or later).")
	reasonNetworkMet    = rulePrereqNetwork.Because("VPC-CNI with IPVlan Pod interfaces and eBPF service forwarding meets the ip-mode prerequisite.")
)

func kubernetesPrereq(p *core.ClusterProfile) Prerequisite {
	r := Prerequisite{Name: PrereqKubernetes, Component: "Kubernetes", Have: p.KubernetesVersion,
		Need: ">= v1.30", Kind: core.PreconditionVersion}
	r.Met, r.Reason = versionPrereq(p.KubernetesVersion, kubernetesMin, MinKubernetesVersion, reasonKubernetesMet,
		rulePrereqKubernetes, "kubernetesVersion", "Kubernetes")
	if r.Met == core.Unknown {
		r.Missing = []string{"kubernetesVersion"}
	}
	return r
}

func ccmPrereq(p *core.ClusterProfile) Prerequisite {
	r := Prerequisite{Name: PrereqCCM, Component: "cloud-controller-manager", Have: p.CCMVersion,
		Need: ">= v1.43.0", Kind: core.PreconditionVersion}
	r.Met, r.Reason = versionPrereq(p.CCMVersion, ccmMin, MinCCMVersion, reasonCCMMet,
		rulePrereqCCM, "ccmVersion", "the cloud-controller-manager add-on")
	if r.Met == core.Unknown {
		r.Missing = []string{"ccmVersion"}
	}
	return r
}

func versionPrereq(have string, min [3]uint, minV *version.Version, met core.Reason, rule core.Rule, fieldName, what string) (core.Fact, core.Reason) {
	if have == "" {
		return core.Unknown, rule.Because("The profile does not say which version " + what + " runs (" + fieldName + "); ip-mode needs v" + minV.String() + " or later.")
	}
	v, ok := parseVersion(have)
	if !ok {
		return core.Unknown, rule.Because("The profile's " + fieldName + " " + quote(have) + " is not a version; ip-mode needs v" + minV.String() + " or later.")
	}
	if atLeast(v, min) {
		return core.Yes, met
	}
	return core.No, rule.Because(what + " " + have + " is older than v" + minV.String() + ", which ip-mode needs.")
}

// parseVersion reads the first three numbers of a version as core.ParseVersion
// (k8s.io/apimachinery version.ParseGeneric) accepts it: optional blanks and "v", at least two
// dot-separated numbers, the first without a leading zero, anything after ignored
// ("v1.43.0-vke.1") as long as it holds no newline. It does not allocate; a test keeps it in step with ParseGeneric.
func parseVersion(s string) (c [3]uint, ok bool) {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f') {
		i++
	}
	if i < len(s) && s[i] == 'v' {
		i++
	}
	n := 0
	for {
		start := i
		var v uint64
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			d := uint64(s[i] - '0')
			if v > (math.MaxUint64-d)/10 {
				return c, false
			}
			v = v*10 + d
			i++
		}
		if i == start {
			break
		}
		if n == 0 && s[start] == '0' && i-start > 1 {
			return c, false
		}
		if n < len(c) {
			c[n] = uint(v)
		}
		n++
		if i+1 < len(s) && s[i] == '.' && s[i+1] >= '0' && s[i+1] <= '9' {
			i++
			continue
		}
		break
	}
	// ParseGeneric's pattern ends in (.*)*$, and "." does not match a newline: whatever
	// follows the numbers must be on their line ("v1.30.2\n" from a YAML block is no version).
	if strings.IndexByte(s[i:], '\n') >= 0 {
		return c, false
	}
	return c, n >= 2
}

func atLeast(v, min [3]uint) bool {
	for i := range v {
		if v[i] != min[i] {
			return v[i] > min[i]
		}
	}
	return true
}

// networkPrereq: "集群网络模型为 VPC-CNI，且 Pod 网络接口为 IPVlan，服务转发模式为 eBPF" (seed 003).
func networkPrereq(p *core.ClusterProfile) Prerequisite {
	d := &p.Dataplane
	r := Prerequisite{Name: PrereqNetwork, Component: "network model",
		Need: "VPC-CNI with IPVlan Pod interfaces and eBPF service forwarding"}
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
	if len(wrong) > 0 || len(r.Missing) > 0 {
		r.Have = networkHave(p)
	}
	switch {
	case len(wrong) > 0:
		r.Met, r.Kind = core.No, core.PreconditionUnsupported
		r.Missing = nil
		r.Reason = rulePrereqNetwork.Because("The cluster's network does not support ip-mode: " + strings.Join(wrong, ", ") + ".")
	case len(r.Missing) > 0:
		r.Met, r.Kind = core.Unknown, core.PreconditionUnknown
		r.Reason = rulePrereqNetwork.Because("The profile does not say " + strings.Join(r.Missing, ", ") + "; ip-mode needs VPC-CNI with IPVlan Pod interfaces and eBPF service forwarding.")
	default:
		r.Met, r.Kind, r.Reason = core.Yes, core.PreconditionUnsupported, reasonNetworkMet
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
