package gateway

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/loopguard/loopguard/core"
)

// Cilium's class configuration (pkg/k8s/apis/cilium.io/v2alpha1/gatewayclassconfig_types.go):
// a GatewayClass's spec.parametersRef names it, with its namespace.
const (
	ciliumGroup             = "cilium.io"
	kindCiliumGatewayConfig = "CiliumGatewayClassConfig"
	// istioNameOverride names the generated resources instead of "<gateway>-<class>"
	// (pilot/pkg/config/kube/gatewaycommon/deploymentcontroller.go, GetDefaultName).
	istioNameOverride = "gateway.istio.io/name-override"
)

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

// istioProxyConfigSources are the annotation maps whose proxy.istio.io/config configures the
// Istio gateway's proxy, in the order a later one would win: the Gateway's own annotations,
// its spec.infrastructure annotations (the kube-gateway template copies them to the Pods),
// and the Pod annotations of the class defaults' and its parameters' deployment overlays
// (applied last).
func istioProxyConfigSources(v *view) []map[string]string {
	return []map[string]string{v.gw.Annotations, infraAnnotations(v), v.istio.podAnnotations()}
}

// ciliumServiceOf is spec.service of the CiliumGatewayClassConfig the GatewayClass's
// spec.parametersRef names: Cilium takes the generated Service's type, externalTrafficPolicy,
// loadBalancerClass and the rest from it (operator/pkg/model/ingestion, toServiceModel).
func ciliumServiceOf(v *view, c *core.Cluster) map[string]any {
	if c == nil || v.class == nil {
		return nil
	}
	r, ok, _ := unstructured.NestedStringMap(v.class.Object, "spec", "parametersRef")
	if !ok || r["group"] != ciliumGroup || r["kind"] != kindCiliumGatewayConfig {
		return nil
	}
	u := c.Custom(ciliumGroup, kindCiliumGatewayConfig, r["namespace"], r["name"])
	if u == nil {
		return nil
	}
	m, _, _ := unstructured.NestedMap(u.Object, "spec", "service")
	return m
}
