package gateway

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// istioParameters is the ConfigMap a Gateway's spec.infrastructure.parametersRef names for
// Istio, with its overlays parsed. Istio renders the Service from its kube-gateway template
// (the Gateway's spec.infrastructure annotations and labels), then applies the "service" key
// of the class's defaults ConfigMap and then of this one as strategic merge patches
// (pilot/pkg/config/kube/gatewaycommon/deploymentcontroller.go: fetchParameters, a ConfigMap in
// the Gateway's namespace; applyOverlay, keys deployment, service, serviceAccount,
// horizontalPodAutoscaler, podDisruptionBudget). What the overlay sets wins over the Gateway.
type istioParameters struct {
	cm *corev1.ConfigMap
	// service and deployment are the parsed overlays, nil when absent or not YAML.
	service, deployment map[string]any
}

// istioParametersOf reads the ConfigMap the Gateway's spec.infrastructure.parametersRef names
// (group "", kind ConfigMap); nil when there is none or it is not among the inputs.
func istioParametersOf(v *view, c *core.Cluster) *istioParameters {
	inf := v.gw.Spec.Infrastructure
	if c == nil || inf == nil || inf.ParametersRef == nil || inf.ParametersRef.Group != "" || inf.ParametersRef.Kind != "ConfigMap" {
		return nil
	}
	cm := c.ConfigMap(v.gw.Namespace, inf.ParametersRef.Name)
	if cm == nil {
		return nil
	}
	p := &istioParameters{cm: cm}
	for key, dst := range map[string]*map[string]any{"service": &p.service, "deployment": &p.deployment} {
		if s, ok := cm.Data[key]; ok {
			m := map[string]any{}
			if yaml.Unmarshal([]byte(s), &m) == nil {
				*dst = m
			}
		}
	}
	return p
}

// serviceMeta is what the service overlay sets under metadata.annotations or metadata.labels.
func (p *istioParameters) serviceMeta(meta string) map[string]string {
	if p == nil || p.service == nil {
		return nil
	}
	out, _, _ := unstructured.NestedStringMap(p.service, "metadata", meta)
	return out
}

// podAnnotations are the annotations the deployment overlay sets on the proxy's Pods, where
// Istio's proxy reads proxy.istio.io/config.
func (p *istioParameters) podAnnotations() map[string]string {
	if p == nil || p.deployment == nil {
		return nil
	}
	out, _, _ := unstructured.NestedStringMap(p.deployment, "spec", "template", "metadata", "annotations")
	return out
}

// istioProxyConfigSources are the annotation maps whose proxy.istio.io/config configures the
// Istio gateway's proxy, in the order a later one would win: the Gateway's own annotations,
// its spec.infrastructure annotations (the kube-gateway template copies them to the Pods),
// and the Pod annotations of its parameters' deployment overlay (applied last).
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
