package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
)

// ProxyMode is how the cluster implements Services on nodes.
type ProxyMode string

const (
	ProxyModeUnknown  ProxyMode = ""
	ProxyModeIPTables ProxyMode = "iptables"
	ProxyModeIPVS     ProxyMode = "ipvs"
	ProxyModeNFTables ProxyMode = "nftables"
	// ProxyModeEBPF: an eBPF dataplane replaces kube-proxy (Cilium, TKE DataPlaneV2, VKE).
	ProxyModeEBPF ProxyMode = "ebpf"
)

// Validate refuses a proxy mode loopguard does not know, as a field error at path that lists
// the supported values (a CLI flag passes a nil path and prints the error's Detail).
func (m ProxyMode) Validate(path *field.Path) *field.Error {
	switch m {
	case ProxyModeUnknown, ProxyModeIPTables, ProxyModeIPVS, ProxyModeNFTables, ProxyModeEBPF:
		return nil
	}
	return field.NotSupported(path, m, []ProxyMode{ProxyModeIPTables, ProxyModeIPVS, ProxyModeNFTables, ProxyModeEBPF})
}

// ClusterProfile is what loopguard needs to know about a cluster that its objects do not say:
// versions, the dataplane, granted allowlists and the policy. It is read from a YAML file
// (kind ClusterProfile, apiVersion loopguard.io/v1alpha1) and overridden by CLI flags; live
// cluster adapters fill it from the API. Every field is optional: what is absent is unknown.
type ClusterProfile struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Metadata is optional; its name is for people and the CLI's output.
	Metadata *struct {
		Name string `json:"name,omitempty"`
	} `json:"metadata,omitempty"`

	// Provider names the dialect: tencent, volcengine or kubernetes.
	Provider          string    `json:"provider,omitempty"`
	KubernetesVersion string    `json:"kubernetesVersion,omitempty"`
	ProxyMode         ProxyMode `json:"proxyMode,omitempty"`
	KubeProxyVersion  string    `json:"kubeProxyVersion,omitempty"`
	// IngressControllerVersion and ServiceControllerVersion are the cloud's controllers
	// (on TKE read from kube-system/tke-{ingress,service}-controller-config VERSION).
	IngressControllerVersion string `json:"ingressControllerVersion,omitempty"`
	ServiceControllerVersion string `json:"serviceControllerVersion,omitempty"`
	// CCMVersion is the cloud-controller-manager add-on's version.
	CCMVersion string `json:"ccmVersion,omitempty"`
	// Allowlists are capabilities granted to the account (e.g. clb-l4-snat).
	Allowlists []Capability `json:"allowlists,omitempty"`
	Policy     Policy       `json:"policy,omitempty"`
	// Clients is a label selector for the in-cluster client Pods whose placement matters.
	Clients   string           `json:"clients,omitempty"`
	Dataplane DataplaneProfile `json:"dataplane,omitempty"`
	// ControllerSettings are settings the cloud's own controller runs with that decide what it
	// does for a Service that does not say (Hetzner's HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL
	// environment variable turns the PROXY protocol on for every such Service): keyed by the
	// name the controller reads, each value as written there. The provider's dialect parses
	// those it knows as that controller does and ignores the others; a setting not stated here
	// is unknown, never guessed.
	ControllerSettings map[string]string `json:"controllerSettings,omitempty"`

	// Stated lists the policy booleans a parsed document states ("allowTickets",
	// "allowDisruptive"), so that Overlay can tell "allowTickets: false" from a document that
	// does not mention it. ParseProfile fills it; it is not part of the document.
	Stated []string `json:"-"`
}

func (p *ClusterProfile) states(key string) bool { return slices.Contains(p.Stated, key) }

func (p *ClusterProfile) state(key string) {
	if !p.states(key) {
		p.Stated = append(p.Stated, key)
	}
}

// Overlay writes what a later profile states over p: every field the later one sets, and the
// policy's booleans when it states them (a later "allowTickets: false" turns an earlier true
// off). A profile built in Go rather than parsed states its booleans only when true.
func (p *ClusterProfile) Overlay(later *ClusterProfile) {
	str := func(d *string, s string) {
		if s != "" {
			*d = s
		}
	}
	str(&p.Provider, later.Provider)
	str(&p.KubernetesVersion, later.KubernetesVersion)
	if later.ProxyMode != "" {
		p.ProxyMode = later.ProxyMode
	}
	str(&p.KubeProxyVersion, later.KubeProxyVersion)
	str(&p.IngressControllerVersion, later.IngressControllerVersion)
	str(&p.ServiceControllerVersion, later.ServiceControllerVersion)
	str(&p.CCMVersion, later.CCMVersion)
	if len(later.Allowlists) > 0 {
		p.Allowlists = append([]Capability(nil), later.Allowlists...)
	}
	if later.Policy.Prefer != "" {
		p.Policy.Prefer = later.Policy.Prefer
	}
	if later.states("allowTickets") || later.Policy.AllowTickets {
		p.Policy.AllowTickets = later.Policy.AllowTickets
		p.state("allowTickets")
	}
	if later.states("allowDisruptive") || later.Policy.AllowDisruptive {
		p.Policy.AllowDisruptive = later.Policy.AllowDisruptive
		p.state("allowDisruptive")
	}
	str(&p.Clients, later.Clients)
	if later.Metadata != nil {
		p.Metadata = later.Metadata
	}
	d, s := &p.Dataplane, &later.Dataplane
	str(&d.CNI, s.CNI)
	str(&d.CiliumVersion, s.CiliumVersion)
	str(&d.PodInterface, s.PodInterface)
	if s.Attachment != "" {
		d.Attachment = s.Attachment
	}
	if s.BridgeHairpin != nil {
		d.BridgeHairpin = s.BridgeHairpin
	}
	if s.BridgeNetfilter != nil {
		d.BridgeNetfilter = s.BridgeNetfilter
	}
	if s.SocketLBInPod != nil {
		d.SocketLBInPod = s.SocketLBInPod
	}
	str(&d.KubeletHairpinMode, s.KubeletHairpinMode)
	if len(later.ControllerSettings) > 0 {
		merged := make(map[string]string, len(p.ControllerSettings)+len(later.ControllerSettings))
		for k, v := range p.ControllerSettings {
			merged[k] = v
		}
		for k, v := range later.ControllerSettings {
			merged[k] = v
		}
		p.ControllerSettings = merged
	}
}

// DataplaneProfile describes the Pod network as far as loops and hairpins care.
type DataplaneProfile struct {
	// CNI names the network plugin: bridge, flannel, calico, cilium, vpc-cni, ...
	CNI string `json:"cni,omitempty"`
	// CiliumVersion gates KEP-1860 support in Cilium (1.17+, broken in 1.18.0).
	CiliumVersion string `json:"ciliumVersion,omitempty"`
	// PodInterface is ipvlan or veth (VKE's VPC-CNI uses ipvlan for ip-mode).
	PodInterface string `json:"podInterface,omitempty"`
	// Attachment is bridge or routed; derived from CNI when absent.
	Attachment Attachment `json:"attachment,omitempty"`
	// BridgeHairpin: the CNI bridge plugin's hairpinMode.
	BridgeHairpin *bool `json:"bridgeHairpin,omitempty"`
	// BridgeNetfilter: net.bridge.bridge-nf-call-iptables on nodes.
	BridgeNetfilter *bool `json:"bridgeNetfilter,omitempty"`
	// SocketLBInPod: Cilium's socket LB also runs inside Pods (bpf-lb-sock-hostns-only=false).
	SocketLBInPod *bool `json:"socketLBInPod,omitempty"`
	// KubeletHairpinMode is kubelet's hairpinMode when someone relies on it (it has no effect).
	KubeletHairpinMode string `json:"kubeletHairpinMode,omitempty"`
}

// ParseProfile reads a ClusterProfile from YAML or JSON. Unknown fields, a wrong kind and
// invalid values are errors that name the file and the field; nothing is half-read.
func ParseProfile(name string, data []byte) (*ClusterProfile, error) {
	js, err := yaml.ToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: not YAML: %v", name, ErrInvalid, err)
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil, fmt.Errorf("%s: %w: empty profile", name, ErrInvalid)
	}
	var p ClusterProfile
	// The API server's own strict decoder: case-sensitive field names (encoding/json would
	// quietly take "proxymode" for proxyMode), no unknown or duplicate fields.
	strictErrs, err := kjson.UnmarshalStrict(js, &p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", name, ErrInvalid, jsonErrorText(err))
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = strings.TrimPrefix(e.Error(), "json: ")
		}
		return nil, fmt.Errorf("%s: %w: %s", name, ErrInvalid, strings.Join(msgs, "; "))
	}
	if errs := p.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w: %s", name, ErrInvalid, errs.ToAggregate().Error())
	}
	// Which booleans the document states: the strict decode above has checked the shape.
	var stated struct {
		Policy map[string]json.RawMessage `json:"policy"`
	}
	if json.Unmarshal(js, &stated) == nil {
		for _, k := range []string{"allowTickets", "allowDisruptive"} {
			if _, ok := stated.Policy[k]; ok {
				p.state(k)
			}
		}
	}
	return &p, nil
}

// jsonErrorText drops the decoder's "json: " prefix; its messages already name the field.
func jsonErrorText(err error) string { return strings.TrimPrefix(err.Error(), "json: ") }

// Validate checks the profile's values. Provider names and allowlist capabilities are checked
// by the caller that knows the dialects.
func (p *ClusterProfile) Validate() field.ErrorList {
	var errs field.ErrorList
	if p.APIVersion != ProfileAPIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), p.APIVersion, []string{ProfileAPIVersion}))
	}
	if p.Kind != ProfileKind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), p.Kind, []string{ProfileKind}))
	}
	errs = append(errs, p.validateValues()...)
	return errs
}

func (p *ClusterProfile) validateValues() field.ErrorList {
	var errs field.ErrorList
	if fe := p.ProxyMode.Validate(field.NewPath("proxyMode")); fe != nil {
		errs = append(errs, fe)
	}
	for _, v := range []struct{ path, val string }{
		{"kubernetesVersion", p.KubernetesVersion},
		{"kubeProxyVersion", p.KubeProxyVersion},
		{"ingressControllerVersion", p.IngressControllerVersion},
		{"serviceControllerVersion", p.ServiceControllerVersion},
		{"ccmVersion", p.CCMVersion},
		{"dataplane.ciliumVersion", p.Dataplane.CiliumVersion},
	} {
		if v.val == "" {
			continue
		}
		if _, err := version.ParseGeneric(v.val); err != nil {
			errs = append(errs, field.Invalid(field.NewPath(v.path), v.val, "not a version (want e.g. v1.30.2)"))
		}
	}
	if fe := p.Policy.Prefer.Validate(field.NewPath("policy", "prefer")); fe != nil {
		errs = append(errs, fe)
	}
	if p.Clients != "" {
		if _, err := labels.Parse(p.Clients); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("clients"), p.Clients, err.Error()))
		}
	}
	switch p.Dataplane.Attachment {
	case AttachmentUnknown, AttachmentBridge, AttachmentRouted:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("dataplane", "attachment"), p.Dataplane.Attachment,
			[]string{string(AttachmentBridge), string(AttachmentRouted)}))
	}
	switch p.Dataplane.PodInterface {
	case "", "ipvlan", "veth":
	default:
		errs = append(errs, field.NotSupported(field.NewPath("dataplane", "podInterface"), p.Dataplane.PodInterface, []string{"ipvlan", "veth"}))
	}
	for k := range p.ControllerSettings {
		if strings.TrimSpace(k) == "" {
			errs = append(errs, field.Invalid(field.NewPath("controllerSettings"), k, "a setting needs the name the controller reads"))
		}
	}
	switch p.Dataplane.KubeletHairpinMode {
	case "", "promiscuous-bridge", "hairpin-veth", "none":
	default:
		errs = append(errs, field.NotSupported(field.NewPath("dataplane", "kubeletHairpinMode"), p.Dataplane.KubeletHairpinMode,
			[]string{"promiscuous-bridge", "hairpin-veth", "none"}))
	}
	return errs
}

// HasAllowlist reports whether the profile declares a capability as granted.
func (p *ClusterProfile) HasAllowlist(c Capability) bool {
	for _, a := range p.Allowlists {
		if a == c {
			return true
		}
	}
	return false
}

// HairpinFacts derives the facts for a Pod calling its own Service from the profile; nil when
// the profile says nothing about the dataplane.
func (p *ClusterProfile) HairpinFacts() *HairpinFacts {
	d := &p.Dataplane
	if p.ProxyMode == ProxyModeUnknown && d.CNI == "" && d.Attachment == "" && d.KubeletHairpinMode == "" {
		return nil
	}
	h := &HairpinFacts{KubeletHairpinMode: d.KubeletHairpinMode}
	cni := strings.ToLower(d.CNI)
	switch {
	case p.ProxyMode == ProxyModeEBPF && cni == "cilium":
		h.Dataplane = DataplaneCiliumTC
		if d.SocketLBInPod != nil && *d.SocketLBInPod {
			h.Dataplane = DataplaneCiliumSocketLB
		}
	case p.ProxyMode == ProxyModeIPTables || p.ProxyMode == ProxyModeIPVS || p.ProxyMode == ProxyModeNFTables:
		// kube-proxy puts the self-masquerade rule first in every endpoint chain in all three
		// modes (seed 002 §3, docs/sources.md#hairpin).
		h.Dataplane = DataplaneKubeProxy
		h.SelfMasquerade = Yes
	}
	h.Attachment = d.Attachment
	if h.Attachment == AttachmentUnknown {
		switch cni {
		case "bridge", "flannel", "kubenet":
			h.Attachment = AttachmentBridge
		case "calico", "vpc-cni", "cilium", "terway":
			h.Attachment = AttachmentRouted
		}
	}
	switch {
	case d.BridgeHairpin != nil:
		h.BridgeHairpin = factOf(*d.BridgeHairpin)
	case cni == "flannel":
		// flannel's default manifest delegates to the bridge plugin with hairpinMode: true (seed 002 §3).
		h.BridgeHairpin = Yes
	case cni == "bridge":
		// The bridge plugin's hairpinMode defaults to false (seed 002 §3, CNI bridge docs).
		h.BridgeHairpin = No
	}
	switch {
	case d.BridgeNetfilter != nil:
		h.BridgeNetfilter = factOf(*d.BridgeNetfilter)
	case h.Dataplane == DataplaneKubeProxy:
		// Kubernetes' network plugin requirements ask for bridge-nf-call-iptables=1 with kube-proxy.
		h.BridgeNetfilter = Yes
	}
	return h
}
