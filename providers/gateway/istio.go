package gateway

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/loopguard/loopguard/core"
)

// Istio (github.com/istio/istio), read at 1.30.3: istiod's deployment controller renders a
// Deployment and a Service per Gateway from its kube-gateway template, then applies the
// overlays of the class's defaults ConfigMap and of the Gateway's parameters ConfigMap; the
// proxy reads its ProxyConfig from the Pod's proxy.istio.io/config annotation.

// Istio is Istio.
const Istio Implementation = "istio"

const (
	istioController     = "istio.io/gateway-controller"
	istioProxyConfigAnn = "proxy.istio.io/config"
	// Istio's deployment controller also labels istio.io/gateway-name
	// (manifests/charts/istio-control/istio-discovery/files/kube-gateway.yaml).
	labelIstioGatewayName = "istio.io/gateway-name"
)

// istioOmitted are the Gateway annotations the kube-gateway template does not copy
// (kube-gateway.yaml: omit .InfrastructureAnnotations ...).
var istioOmitted = []string{"kubectl.kubernetes.io/last-applied-configuration", istioNameOverride, "gateway.istio.io/service-account", "gateway.istio.io/controller-version"}

type istioUnit struct{ base }

func (istioUnit) id() Implementation        { return Istio }
func (istioUnit) name() string              { return "Istio" }
func (istioUnit) controllerNames() []string { return []string{istioController} }

func (istioUnit) defaults(o *Options) {
	if o.IstioNamespace == "" {
		o.IstioNamespace = DefaultIstioNamespace
	}
}

func (istioUnit) claims(svc *corev1.Service, gateway string) bool {
	return svc.Labels[labelIstioGatewayName] == gateway
}

// configMaps: the class defaults in Istio's namespace, selected by their label, and the
// ConfigMap the Gateway's spec.infrastructure.parametersRef names, in its namespace.
func (istioUnit) configMaps(gw *gwv1.Gateway, o Options) []ConfigMapRef {
	out := []ConfigMapRef{{Namespace: o.IstioNamespace, LabelSelector: istioDefaultsForClass}}
	if name, ok := istioParametersRef(gw); ok {
		out = append(out, ConfigMapRef{Namespace: gw.Namespace, Name: name})
	}
	return out
}

func (istioUnit) read(v *view, c *core.Cluster, o Options) {
	v.cfg = istioParametersOf(v, c, o.IstioNamespace)
}

func istioParams(v *view) *istioParameters {
	p, _ := v.cfg.(*istioParameters)
	return p
}

// istioInfra is what the kube-gateway template copies to the generated objects' annotations or
// labels (meta): spec.infrastructure's when the Gateway sets that map, without the keys under
// gateway.networking.k8s.io/; else, since PILOT_ENABLE_GATEWAY_API_COPY_LABELS_ANNOTATIONS is on
// by default, the Gateway's own (pilot/pkg/config/kube/gatewaycommon/deploymentcontroller.go
// extractInfrastructureMetadata; pilot/pkg/features/experimental.go); annotations without the
// keys the template omits.
func istioInfra(gw *gwv1.Gateway, meta string) map[string]string {
	out := map[string]string{}
	var own map[string]string
	if inf := gw.Spec.Infrastructure; inf != nil && meta == "annotations" && inf.Annotations != nil {
		for k, val := range inf.Annotations {
			if !strings.HasPrefix(string(k), Group+"/") {
				out[string(k)] = string(val)
			}
		}
	} else if inf != nil && meta == "labels" && inf.Labels != nil {
		for k, val := range inf.Labels {
			if !strings.HasPrefix(string(k), Group+"/") {
				out[string(k)] = string(val)
			}
		}
	} else if meta == "annotations" {
		own = gw.Annotations
	} else {
		own = gw.Labels
	}
	maps.Copy(out, own)
	if meta == "annotations" {
		for _, k := range istioOmitted {
			delete(out, k)
		}
	}
	return out
}

// service: pilot/pkg/config/kube/gatewaycommon: named "<gateway>-<class>" unless the Gateway's
// gateway.istio.io/name-override says otherwise; the template's annotations and labels
// (istioInfra), then the class defaults' and the parameters' service overlays over them.
func (istioUnit) service(v *view, svc *corev1.Service, _ Options) {
	gw := v.gw
	svc.Name = gw.Name + "-" + string(gw.Spec.GatewayClassName)
	if n := gw.Annotations[istioNameOverride]; n != "" {
		svc.Name = n
	}
	svc.Annotations = nil
	if ann := istioInfra(gw, "annotations"); len(ann) > 0 {
		svc.Annotations = ann
	}
	maps.Copy(svc.Labels, istioInfra(gw, "labels"))
	svc.Labels[LabelGatewayName] = gw.Name
	svc.Labels[labelIstioGatewayName] = gw.Name
	p := istioParams(v)
	for k, val := range p.serviceMeta("annotations") {
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations[k] = val
	}
	for k, val := range p.serviceMeta("labels") {
		svc.Labels[k] = val
	}
	if t := p.serviceSpec("type"); t != "" {
		svc.Spec.Type = corev1.ServiceType(t)
	}
	if pol := p.serviceSpec("externalTrafficPolicy"); pol != "" {
		svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicy(pol)
	}
}

// istioProxyConfig is the proxy.istio.io/config annotation of the gateway's Pods, parsed, and
// where it comes from: the deployment overlays' Pod annotations (applied last) over what the
// template copies (istioInfra). The proxy parses it as YAML into its ProxyConfig
// (pilot/cmd/pilot-agent/config/config.go getMeshConfig, pkg/config/mesh/mesh.go
// MergeProxyConfig, pkg/util/protomarshal ApplyYAML: unknown fields allowed); one that does not
// parse stops the proxy ("failed to unmarshal mesh config from annotation"), which is bad
// input naming where it is set.
func istioProxyConfig(v *view) (map[string]any, string, bool, error) {
	var cfg, from string
	if val, ok := istioParams(v).podAnnotations()[istioProxyConfigAnn]; ok {
		cfg, from = val, "the deployment overlay's Pod annotation"
	} else if inf := v.gw.Spec.Infrastructure; inf != nil && inf.Annotations != nil {
		// What istioInfra copies, looked up without copying it.
		val, ok := inf.Annotations[gwv1.AnnotationKey(istioProxyConfigAnn)]
		if !ok {
			return nil, "", false, nil
		}
		cfg, from = string(val), "the spec.infrastructure annotation"
	} else if val, ok := v.gw.Annotations[istioProxyConfigAnn]; ok {
		cfg, from = val, "the annotation"
	} else {
		return nil, "", false, nil
	}
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(cfg), &m); err != nil {
		return nil, "", false, inputError(v.gw, "Gateway", v.gw.Namespace, v.gw.Name, field.Invalid(field.NewPath("metadata", "annotations").Key(istioProxyConfigAnn), cfg,
			"not YAML: Istio's proxy would not start (pilot/cmd/pilot-agent/config/config.go, 1.30.3)"))
	}
	return m, from, true, nil
}

// istioUint32 reads a uint32 field of a ProxyConfig as protobuf's JSON mapping does: a number,
// or a string holding one.
func istioUint32(val any) (uint64, bool) {
	switch n := val.(type) {
	case string:
		u, err := strconv.ParseUint(n, 10, 32)
		return u, err == nil
	default:
		i, ok := intOf(val)
		return uint64(i), ok && i >= 0 && i <= math.MaxUint32
	}
}

// proxyNeeds: gatewayTopology.proxyProtocol (a message: present and not null) makes the gateway
// expect the header (mesh/v1alpha1/proxy.proto Topology.proxy_protocol).
func (istioUnit) proxyNeeds(v *view, _ *core.Cluster) (need, bool, error) {
	m, from, ok, err := istioProxyConfig(v)
	if err != nil || !ok {
		return need{}, false, err
	}
	if val, on, _ := unstructured.NestedFieldNoCopy(m, "gatewayTopology", "proxyProtocol"); on && val != nil {
		return need{fact: core.Yes, msg: fmt.Sprintf("The %s %s sets gatewayTopology.proxyProtocol: the Istio gateway requires the header.", istioProxyConfigAnn, strings.TrimPrefix(from, "the "))}, true, nil
	}
	return need{}, false, nil
}

// clientAddress: gatewayTopology.numTrustedProxies, a uint32, is the number of trusted proxies in
// front whose X-Forwarded-For the gateway reads (pilot/pkg/networking/core/gateway.go sets the
// connection manager's xff_num_trusted_hops from it).
func (istioUnit) clientAddress(v *view, _ *core.Cluster) (clientAddress, bool, error) {
	m, from, ok, err := istioProxyConfig(v)
	if err != nil || !ok {
		return clientAddress{}, false, err
	}
	val, set, _ := unstructured.NestedFieldNoCopy(m, "gatewayTopology", "numTrustedProxies")
	if !set || val == nil {
		return clientAddress{}, false, nil
	}
	n, valid := istioUint32(val)
	if !valid {
		return clientAddress{}, false, inputError(v.gw, "Gateway", v.gw.Namespace, v.gw.Name, field.Invalid(field.NewPath("metadata", "annotations").Key(istioProxyConfigAnn), val,
			"gatewayTopology.numTrustedProxies must be a whole number from 0 to 4294967295: Istio's proxy would not start"))
	}
	if n == 0 {
		return clientAddress{}, false, nil
	}
	return clientAddress{why: fmt.Sprintf("The %s %s sets gatewayTopology.numTrustedProxies: %d: the Istio gateway takes the client address from X-Forwarded-For set by that many proxies in front.", istioProxyConfigAnn, strings.TrimPrefix(from, "the "), n)}, true, nil
}

// override: the service overlay is YAML inside the ConfigMap's data, not a field loopguard can
// own; named is the ConfigMap whose overlay Istio applies last among those that set the key.
func (istioUnit) override(v *view, meta, key string) (override, bool) {
	if cm := istioParams(v).serviceMetaSetter(meta, key); cm != nil {
		return override{userOwned: true, key: core.ObjectKey{APIVersion: "v1", Kind: "ConfigMap", Namespace: cm.Namespace, Name: cm.Name},
			what: "service overlay (data key service, a strategic merge patch)", how: "change it there (loopguard does not edit YAML inside a ConfigMap)"}, true
	}
	return override{}, false
}

func (istioUnit) ownResource(*view) string {
	return "the ConfigMap the Gateway's spec.infrastructure.parametersRef names (Istio's customization of generated resources)"
}

func (istioUnit) expectProxy() remedy {
	return remedy{ID: "istio/gateway-topology-proxy-protocol", Object: "the Gateway's spec.infrastructure.annotations (copied to the gateway's Pods)", Field: istioProxyConfigAnn, Value: "'{gatewayTopology: {proxyProtocol: {}}}'"}
}

func (istioUnit) doc() unitDoc {
	return unitDoc{
		Expects:       "a PROXY protocol header with `gatewayTopology.proxyProtocol`; the client address from X-Forwarded-For with `numTrustedProxies`",
		Service:       "the Gateway's namespace, `<name>-<class>` (or the Gateway's `gateway.istio.io/name-override`), with the Gateway's `spec.infrastructure` annotations and labels, or, where it sets none, the Gateway's own; the `service` overlay of the class's defaults ConfigMap (in istiod's namespace, `istio-system` unless `--istio-namespace` or `gateway.Options.IstioNamespace` says otherwise, labelled `gateway.istio.io/defaults-for-class: <class>`, the oldest of several), then that of the ConfigMap the Gateway's `spec.infrastructure.parametersRef` names, are applied over it",
		Marks:         "ownerReference to the Gateway; labels `gateway.networking.k8s.io/gateway-name`, `istio.io/gateway-name`",
		ProxyProtocol: "`proxy.istio.io/config` with `gatewayTopology.proxyProtocol` on the gateway's Pods: from the `deployment` overlay of its class defaults or parameters ConfigMap (`spec.template.metadata.annotations`), else the Gateway's `spec.infrastructure.annotations`, or, where it sets none, the Gateway's own annotations (which the template copies); YAML that does not parse is an error naming the Gateway (the proxy would not start)",
		ClientAddress: "`proxy.istio.io/config` `gatewayTopology.numTrustedProxies` above 0 (a uint32, a number or a string holding one), read where its `proxyProtocol` is",
		Fix:           "`spec.infrastructure.annotations` / `labels` of the Gateway; an annotation or label the `service` overlay of the Gateway's parameters ConfigMap or of its class defaults sets is a change for you on the ConfigMap Istio applies last",
		Sources: []source{{Repo: "istio/istio", Version: "1.30.3", Files: []string{
			"manifests/charts/istio-control/istio-discovery/files/kube-gateway.yaml", "pilot/pkg/config/kube/gatewaycommon/deploymentcontroller.go",
			"pilot/pkg/features/experimental.go", "pilot/cmd/pilot-agent/config/config.go", "pkg/config/mesh/mesh.go"}}},
	}
}

// istioNameOverride names the generated resources instead of "<gateway>-<class>"
// (pilot/pkg/config/kube/gatewaycommon/deploymentcontroller.go, GetDefaultName).
const istioNameOverride = "gateway.istio.io/name-override"

// istioDefaultsForClass labels the ConfigMap of class defaults in Istio's own namespace; its
// value is the GatewayClass's name (pilot/pkg/config/kube/gatewaycommon/gateway_utils.go
// GatewayClassDefaults; the istiod chart's gateway-class-configmap.yaml makes one per
// gatewayClasses entry, "istio-<revision>-gatewayclass-<class>" in the release's namespace).
const istioDefaultsForClass = "gateway.istio.io/defaults-for-class"

// DefaultIstioNamespace is where istiod runs by default, and so where it looks for class
// defaults (pilot/pkg/bootstrap/options.go: POD_NAMESPACE, default istio-system).
const DefaultIstioNamespace = "istio-system"

// istioParameters are the ConfigMaps whose overlays Istio applies to a Gateway's generated
// objects, in its order. Istio renders the Service from its kube-gateway template (the
// Gateway's spec.infrastructure annotations and labels), then applies as strategic merge
// patches the keys of the class's defaults ConfigMap (in istiod's namespace, labelled
// gateway.istio.io/defaults-for-class: <class>, the oldest if several) and then those of the
// ConfigMap the Gateway's spec.infrastructure.parametersRef names (in the Gateway's
// namespace) (pilot/pkg/config/kube/gatewaycommon/deploymentcontroller.go: render,
// fetchParameters, applyOverlay, keys deployment, service, serviceAccount,
// horizontalPodAutoscaler, podDisruptionBudget). What an overlay sets wins over the Gateway,
// and the Gateway's over the class's.
type istioParameters struct {
	// layers: the class defaults first, the Gateway's own last; only those among the inputs.
	layers []istioOverlay
}

// istioOverlay is one ConfigMap of overlays.
type istioOverlay struct {
	cm *corev1.ConfigMap
	// service and deployment are the parsed overlays, nil when absent or not YAML.
	service, deployment map[string]any
}

// istioParametersOf reads the class defaults in namespace ns and the ConfigMap the Gateway's
// spec.infrastructure.parametersRef names (group "", kind ConfigMap); nil when neither is
// among the inputs.
func istioParametersOf(v *view, c *core.Cluster, ns string) *istioParameters {
	if c == nil {
		return nil
	}
	p := &istioParameters{}
	if cm := istioClassDefaults(c, ns, string(v.gw.Spec.GatewayClassName)); cm != nil {
		p.layers = append(p.layers, parseIstioOverlay(cm))
	}
	if ref, ok := istioParametersRef(v.gw); ok {
		if cm := c.ConfigMap(v.gw.Namespace, ref); cm != nil {
			p.layers = append(p.layers, parseIstioOverlay(cm))
		}
	}
	if len(p.layers) == 0 {
		return nil
	}
	return p
}

// istioParametersRef is the name of the ConfigMap the Gateway's
// spec.infrastructure.parametersRef names, in the Gateway's namespace (fetchParameters).
func istioParametersRef(gw *gwv1.Gateway) (string, bool) {
	inf := gw.Spec.Infrastructure
	if inf == nil || inf.ParametersRef == nil || inf.ParametersRef.Group != "" || inf.ParametersRef.Kind != "ConfigMap" {
		return "", false
	}
	return inf.ParametersRef.Name, true
}

// istioClassDefaults is the class's defaults ConfigMap in namespace ns: of those labelled for
// the class, the oldest, then by name (pkg/kube/controllers/common.go OldestObject).
func istioClassDefaults(c *core.Cluster, ns, class string) *corev1.ConfigMap {
	if class == "" {
		return nil
	}
	var pick *corev1.ConfigMap
	for _, cm := range istioDefaults(c)[istioDefaultsKey{ns, class}] {
		if pick == nil || cm.CreationTimestamp.Before(&pick.CreationTimestamp) ||
			(cm.CreationTimestamp.Equal(&pick.CreationTimestamp) && cm.Name < pick.Name) {
			pick = cm
		}
	}
	return pick
}

func parseIstioOverlay(cm *corev1.ConfigMap) istioOverlay {
	o := istioOverlay{cm: cm}
	for key, dst := range map[string]*map[string]any{"service": &o.service, "deployment": &o.deployment} {
		if s, ok := cm.Data[key]; ok {
			m := map[string]any{}
			if yaml.Unmarshal([]byte(s), &m) == nil {
				*dst = m
			}
		}
	}
	return o
}

// serviceMeta is what the service overlays set under metadata.annotations or metadata.labels,
// a later overlay's value winning (a strategic merge patch merges maps key by key).
func (p *istioParameters) serviceMeta(meta string) map[string]string {
	if p == nil {
		return nil
	}
	var out map[string]string
	for _, l := range p.layers {
		m, _, _ := unstructured.NestedStringMap(l.service, "metadata", meta)
		for k, val := range m {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = val
		}
	}
	return out
}

// serviceMetaSetter is the ConfigMap whose service overlay sets the key last, or nil.
func (p *istioParameters) serviceMetaSetter(meta, key string) *corev1.ConfigMap {
	if p == nil {
		return nil
	}
	for i := len(p.layers) - 1; i >= 0; i-- {
		m, _, _ := unstructured.NestedStringMap(p.layers[i].service, "metadata", meta)
		if _, ok := m[key]; ok {
			return p.layers[i].cm
		}
	}
	return nil
}

// serviceSpec is a string field of spec the service overlays set, the last one's.
func (p *istioParameters) serviceSpec(field string) string {
	if p == nil {
		return ""
	}
	out := ""
	for _, l := range p.layers {
		if s, ok, _ := unstructured.NestedString(l.service, "spec", field); ok && s != "" {
			out = s
		}
	}
	return out
}

// podAnnotations are the annotations the deployment overlays set on the proxy's Pods, where
// Istio's proxy reads proxy.istio.io/config.
func (p *istioParameters) podAnnotations() map[string]string {
	if p == nil {
		return nil
	}
	var out map[string]string
	for _, l := range p.layers {
		m, _, _ := unstructured.NestedStringMap(l.deployment, "spec", "template", "metadata", "annotations")
		for k, val := range m {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = val
		}
	}
	return out
}

type istioDefaultsMemo struct{}

// istioDefaultsKey is a namespace and the class its defaults ConfigMaps are labelled for.
type istioDefaultsKey struct{ namespace, class string }

// istioDefaults indexes the ConfigMaps labelled gateway.istio.io/defaults-for-class by their
// namespace and class, in namespace/name order.
func istioDefaults(c *core.Cluster) map[istioDefaultsKey][]*corev1.ConfigMap {
	return c.Memo(istioDefaultsMemo{}, func() any {
		m := map[istioDefaultsKey][]*corev1.ConfigMap{}
		for _, cm := range c.ConfigMapList() {
			if class := cm.Labels[istioDefaultsForClass]; class != "" {
				k := istioDefaultsKey{cm.Namespace, class}
				m[k] = append(m[k], cm)
			}
		}
		return m
	}).(map[istioDefaultsKey][]*corev1.ConfigMap)
}
