package volcengine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/version"

	"github.com/loopguard/loopguard/core"
)

// ServerVersioner reports the API server's version. client-go's discovery client
// (kubernetes.Interface.Discovery()) implements it; the provider does not import client-go.
type ServerVersioner interface {
	ServerVersion() (*version.Info, error)
}

// ServerVersionFunc adapts a function to a ServerVersioner, for tests and small hosts.
type ServerVersionFunc func() (*version.Info, error)

// ServerVersion calls f.
func (f ServerVersionFunc) ServerVersion() (*version.Info, error) { return f() }

// ClusterFacts are the ip-mode prerequisites as a live cluster shows them. Empty fields were not
// shown. Reasons say where each fact came from.
type ClusterFacts struct {
	// KubernetesVersion is the API server's gitVersion (discovery).
	KubernetesVersion string
	// CNI is "vpc-cni" when Cello's configuration is present, "flannel" when Flannel's is.
	CNI string
	// PodInterface is "ipvlan" for Cello's shared-ENI mode; ExclusiveENI is set instead for its
	// exclusive mode, where each Pod gets a whole ENI (not IPVlan).
	PodInterface string
	ExclusiveENI bool
	// ProxyMode is ebpf when Cello's Cilium replaces kube-proxy.
	ProxyMode core.ProxyMode
	// CCMVersion is the cloud-controller-manager's image tag, when it runs in the cluster.
	CCMVersion string
	Reasons    []core.Reason
}

// Objects read by ReadClusterFacts (assumption 8 and 9 in unconfirmed.go).
var (
	celloConfigKey   = core.ObjectKey{APIVersion: "v1", Kind: "ConfigMap", Namespace: "kube-system", Name: "cello-config"}
	ciliumConfigKey  = core.ObjectKey{APIVersion: "v1", Kind: "ConfigMap", Namespace: "kube-system", Name: "cilium-config"}
	flannelConfigKey = core.ObjectKey{APIVersion: "v1", Kind: "ConfigMap", Namespace: "kube-system", Name: "kube-flannel-cfg"}
	// DefaultCCMDeployment is where the open volcengine-cloud-controller-manager chart runs the
	// controller when released as "cloud-controller-manager" into kube-system.
	DefaultCCMDeployment = core.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "kube-system", Name: "cloud-controller-manager"}
)

// ReadClusterFacts reads the ip-mode prerequisites from a live cluster: the server version
// through v (when not nil), and through r (when not nil) Cello's and Cilium's ConfigMaps and
// the cloud-controller-manager's Deployment (ccm; the zero key means DefaultCCMDeployment).
// An object that is absent, or that the reader cannot serve, says nothing; a failed server
// version read is an error, since a host that passed v relies on it.
func ReadClusterFacts(ctx context.Context, r core.ClusterReader, v ServerVersioner, ccm core.ObjectKey) (ClusterFacts, error) {
	var f ClusterFacts
	if v != nil {
		info, err := v.ServerVersion()
		if err != nil {
			return f, err
		}
		if info != nil && info.GitVersion != "" {
			f.KubernetesVersion = info.GitVersion
			f.Reasons = append(f.Reasons, RuleServerVersion.Because("The API server reports "+info.GitVersion+" (discovery)."))
		}
	}
	if r == nil {
		return f, nil
	}
	if cm, err := get(ctx, r, celloConfigKey); err != nil {
		return f, err
	} else if cm != nil {
		f.CNI = "vpc-cni"
		mode := celloNetworkMode(cm)
		switch mode {
		case "", "eni_shared":
			f.PodInterface = "ipvlan"
			f.Reasons = append(f.Reasons, RuleClusterNetwork.Because("ConfigMap kube-system/cello-config is present: the VPC-CNI (Cello) in shared-ENI mode, whose Pods get IPVlan interfaces."))
		case "eni_exclusive":
			f.ExclusiveENI = true
			f.Reasons = append(f.Reasons, RuleClusterNetwork.Because("ConfigMap kube-system/cello-config sets networkMode eni_exclusive: each Pod gets a whole ENI, not an IPVlan interface."))
		default:
			f.Reasons = append(f.Reasons, RuleClusterNetwork.Because("ConfigMap kube-system/cello-config sets networkMode "+quote(mode)+", which loopguard does not know."))
		}
	} else if cm, err := get(ctx, r, flannelConfigKey); err != nil {
		return f, err
	} else if cm != nil {
		f.CNI = "flannel"
		f.Reasons = append(f.Reasons, RuleClusterNetwork.Because("ConfigMap kube-system/kube-flannel-cfg is present: the Flannel network model."))
	}
	if cm, err := get(ctx, r, ciliumConfigKey); err != nil {
		return f, err
	} else if cm != nil && f.CNI == "vpc-cni" {
		f.ProxyMode = core.ProxyModeEBPF
		f.Reasons = append(f.Reasons, RuleClusterNetwork.Because("ConfigMap kube-system/cilium-config is present next to Cello: Cilium replaces kube-proxy (eBPF service forwarding)."))
	}
	if ccm == (core.ObjectKey{}) {
		ccm = DefaultCCMDeployment
	}
	if dep, err := get(ctx, r, ccm); err != nil {
		return f, err
	} else if dep != nil {
		if tag, image := ccmImageTag(dep); tag != "" {
			if _, ok := parseVersion(tag); ok {
				f.CCMVersion = tag
				f.Reasons = append(f.Reasons, RuleClusterCCM.Because("Deployment "+ccm.Namespace+"/"+ccm.Name+" runs "+image+"."))
			}
		}
	}
	return f, nil
}

// get reads an object; a kind the cluster does not serve counts as absent.
func get(ctx context.Context, r core.ClusterReader, key core.ObjectKey) (*unstructured.Unstructured, error) {
	u, err := r.Get(ctx, key)
	if errors.Is(err, core.ErrUnsupported) {
		return nil, nil
	}
	return u, err
}

// celloNetworkMode reads networkMode from cello-config's "conf" JSON (Cello docs/config.md).
func celloNetworkMode(cm *unstructured.Unstructured) string {
	conf, _, _ := unstructured.NestedString(cm.Object, "data", "conf")
	var c struct {
		NetworkMode string `json:"networkMode"`
	}
	_ = json.Unmarshal([]byte(conf), &c)
	return c.NetworkMode
}

// ccmImageTag returns the tag of the cloud-controller-manager container's image.
func ccmImageTag(dep *unstructured.Unstructured) (tag, image string) {
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		img, _ := m["image"].(string)
		repo, t, ok := strings.Cut(img[strings.LastIndexByte(img, '/')+1:], ":")
		if !ok || (name != "cloud-controller-manager" && repo != "cloud-controller-manager") {
			continue
		}
		if i := strings.IndexByte(t, '@'); i >= 0 {
			t = t[:i]
		}
		return t, img
	}
	return "", ""
}

// Apply writes the facts into a profile. The server's version replaces the profile's, since the
// server knows; the network and CCM facts only fill what the profile leaves empty, since they
// rest on object names no public document guarantees (unconfirmed.go) and the user's
// declaration must win. It returns reasons for what it changed or found contradicted.
func (f *ClusterFacts) Apply(p *core.ClusterProfile) []core.Reason {
	var out []core.Reason
	if f.KubernetesVersion != "" && p.KubernetesVersion != f.KubernetesVersion {
		if p.KubernetesVersion != "" {
			out = append(out, RuleServerVersion.Because("The profile says Kubernetes "+p.KubernetesVersion+" but the API server reports "+f.KubernetesVersion+"; loopguard uses the server's."))
		}
		p.KubernetesVersion = f.KubernetesVersion
	}
	fill := func(dst *string, v string) bool {
		if *dst == "" && v != "" {
			*dst = v
			return true
		}
		return false
	}
	changed := fill(&p.Dataplane.CNI, f.CNI)
	changed = fill(&p.Dataplane.PodInterface, f.PodInterface) || changed
	if p.ProxyMode == core.ProxyModeUnknown && f.ProxyMode != core.ProxyModeUnknown {
		p.ProxyMode = f.ProxyMode
		changed = true
	}
	changed = fill(&p.CCMVersion, f.CCMVersion) || changed
	if changed {
		out = append(out, f.Reasons...)
	}
	return out
}
