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
	// Unreadable says which objects the reader could not read (RBAC, a failing API), and why.
	Unreadable []core.Reason
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
// the cloud-controller-manager's Deployment (ccm; the zero key means DefaultCCMDeployment). An
// object that is absent or that the reader cannot serve says nothing, and one it may not read
// (RBAC) is noted in Reasons and says nothing either: these reads only fill what a profile
// leaves out. A failed server version read is an error, since a host that passed v relies on it.
func ReadClusterFacts(ctx context.Context, r core.ClusterReader, v ServerVersioner, ccm core.ObjectKey) (ClusterFacts, error) {
	var f ClusterFacts
	if err := f.readVersion(v); err != nil {
		return f, err
	}
	f.readObjects(ctx, r, ccm)
	return f, nil
}

func (f *ClusterFacts) readVersion(v ServerVersioner) error {
	if v == nil {
		return nil
	}
	info, err := v.ServerVersion()
	if err != nil {
		return err
	}
	if info != nil && info.GitVersion != "" {
		f.KubernetesVersion = info.GitVersion
		f.Reasons = append(f.Reasons, ruleServerVersion.Because("The API server reports "+info.GitVersion+" (discovery)."))
	}
	return nil
}

func (f *ClusterFacts) readObjects(ctx context.Context, r core.ClusterReader, ccm core.ObjectKey) {
	if r == nil {
		return
	}
	read := func(key core.ObjectKey, rule core.Rule) *unstructured.Unstructured {
		u, err := r.Get(ctx, key)
		if err != nil && !errors.Is(err, core.ErrUnsupported) {
			f.Unreadable = append(f.Unreadable, rule.Because("Could not read "+key.String()+": "+err.Error()+"; the profile decides."))
		}
		return u
	}
	if cm := read(celloConfigKey, ruleClusterNetwork); cm != nil {
		f.CNI = "vpc-cni"
		mode := celloNetworkMode(cm)
		switch mode {
		case "", "eni_shared":
			f.PodInterface = "ipvlan"
			f.Reasons = append(f.Reasons, ruleClusterNetwork.Because("ConfigMap kube-system/cello-config is present: the VPC-CNI (Cello) in shared-ENI mode, whose Pods get IPVlan interfaces."))
		case "eni_exclusive":
			f.ExclusiveENI = true
			f.Reasons = append(f.Reasons, ruleClusterNetwork.Because("ConfigMap kube-system/cello-config sets networkMode eni_exclusive: each Pod gets a whole ENI, not an IPVlan interface."))
		default:
			f.Reasons = append(f.Reasons, ruleClusterNetwork.Because("ConfigMap kube-system/cello-config sets networkMode "+quote(mode)+", which loopguard does not know."))
		}
	} else if cm := read(flannelConfigKey, ruleClusterNetwork); cm != nil {
		f.CNI = "flannel"
		f.Reasons = append(f.Reasons, ruleClusterNetwork.Because("ConfigMap kube-system/kube-flannel-cfg is present: the Flannel network model."))
	}
	if f.CNI == "vpc-cni" {
		if cm := read(ciliumConfigKey, ruleClusterNetwork); cm != nil {
			f.ProxyMode = core.ProxyModeEBPF
			f.Reasons = append(f.Reasons, ruleClusterNetwork.Because("ConfigMap kube-system/cilium-config is present next to Cello: Cilium replaces kube-proxy (eBPF service forwarding)."))
		}
	}
	if ccm == (core.ObjectKey{}) {
		ccm = DefaultCCMDeployment
	}
	if dep := read(ccm, ruleClusterCCM); dep != nil {
		if tag, image := ccmImageTag(dep); tag != "" {
			if _, ok := parseVersion(tag); ok {
				f.CCMVersion = tag
				f.Reasons = append(f.Reasons, ruleClusterCCM.Because("Deployment "+ccm.Namespace+"/"+ccm.Name+" runs "+image+"."))
			}
		}
	}
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
// declaration must win. It returns the reasons for what it changed, and for a profile the
// server contradicts; applying the same facts again returns none.
func (f *ClusterFacts) Apply(p *core.ClusterProfile) []core.Reason {
	var out []core.Reason
	of := func(c core.Code) []core.Reason {
		var rs []core.Reason
		for _, r := range f.Reasons {
			if r.Code == c {
				rs = append(rs, r)
			}
		}
		return rs
	}
	if f.KubernetesVersion != "" && p.KubernetesVersion != f.KubernetesVersion {
		if p.KubernetesVersion != "" {
			out = append(out, ruleServerVersion.Because("The profile says Kubernetes "+p.KubernetesVersion+" but the API server reports "+f.KubernetesVersion+"; loopguard uses the server's."))
		} else {
			out = append(out, of(ruleServerVersion.Code)...)
		}
		p.KubernetesVersion = f.KubernetesVersion
	}
	network := false
	fill := func(dst *string, v string) bool {
		if *dst == "" && v != "" {
			*dst = v
			return true
		}
		return false
	}
	network = fill(&p.Dataplane.CNI, f.CNI)
	network = fill(&p.Dataplane.PodInterface, f.PodInterface) || network
	if p.ProxyMode == core.ProxyModeUnknown && f.ProxyMode != core.ProxyModeUnknown {
		p.ProxyMode = f.ProxyMode
		network = true
	}
	if network {
		out = append(out, of(ruleClusterNetwork.Code)...)
	}
	if fill(&p.CCMVersion, f.CCMVersion) {
		out = append(out, of(ruleClusterCCM.Code)...)
	}
	return out
}
