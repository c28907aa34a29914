package gateway

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/loopguard/loopguard/core"
)

// API groups and kinds of the implementations' own resources loopguard reads.
const (
	envoyGatewayGroup   = "gateway.envoyproxy.io"
	kindEnvoyProxy      = "EnvoyProxy"
	kindClientTraffic   = "ClientTrafficPolicy"
	ngfGroup            = "gateway.nginx.org"
	kindNginxProxy      = "NginxProxy"
	istioProxyConfigAnn = "proxy.istio.io/config"
	// Cilium's agent and operator read this key of the cilium-config ConfigMap (its Helm
	// value gatewayAPI.enableProxyProtocol): "Enable proxy protocol for all GatewayAPI
	// listeners. Note that only Proxy protocol traffic will be accepted once this is enabled."
	// (cilium operator/option/config.go).
	ciliumConfigNamespace = "kube-system"
	ciliumConfigName      = "cilium-config"
	ciliumProxyProtocol   = "enable-gateway-api-proxy-protocol"
)

// need is one implementation setting about the PROXY protocol.
type need struct {
	// Yes: required; Unknown: accepted but optional; No: loopguard read the implementation's
	// whole setting and it reads no header (only where one object holds the setting and the
	// Gateway or its class names it: a policy absent from the inputs proves nothing).
	fact    core.Fact
	version string
	msg     string
}

// proxyNeeds reads whether the implementation makes the Gateway's proxy expect a PROXY
// protocol header. ok is false when nothing loopguard reads says; err is bad input in what it
// read (inputError).
func proxyNeeds(v *view, c *core.Cluster) (need, bool, error) {
	if c == nil {
		return need{}, false, nil
	}
	switch v.impl {
	case EnvoyGateway, ImplementationUnknown:
		return envoyGatewayNeeds(v, c)
	case NGINXGatewayFabric:
		// apis/v1alpha2/nginxproxy_types.go: rewriteClientIP.mode ProxyProtocol "Sets the
		// proxy_protocol parameter on the listen directive of all servers"; the Gateway's
		// spec.infrastructure.parametersRef overrides the GatewayClass's parametersRef.
		nps := nginxProxies(v, c)
		for _, np := range nps {
			if mode, _, _ := unstructured.NestedString(np.Object, "spec", "rewriteClientIP", "mode"); mode == "ProxyProtocol" {
				return need{fact: core.Yes, msg: fmt.Sprintf("NginxProxy %s/%s sets spec.rewriteClientIP.mode: ProxyProtocol: NGINX listens with proxy_protocol on every server.", np.GetNamespace(), np.GetName())}, true, nil
			}
		}
		if named := parametersNamed(v.gw, v.class, ngfGroup, kindNginxProxy); len(nps) == named {
			what := "The Gateway and its class name no NginxProxy"
			if named > 0 {
				what = "No NginxProxy of the Gateway or its class sets spec.rewriteClientIP.mode: ProxyProtocol"
			}
			return need{fact: core.No, msg: what + ": NGINX listens without proxy_protocol."}, true, nil
		}
	case Istio:
		// Istio reads the proxy configuration of a Gateway's deployment from the
		// proxy.istio.io/config annotation (on the Gateway, or copied from
		// spec.infrastructure.annotations); gatewayTopology.proxyProtocol makes the gateway
		// expect the header (istio.io docs, ops/configuration/traffic-management/network-topologies).
		for _, src := range istioProxyConfigSources(v) {
			if cfg, ok := src[istioProxyConfigAnn]; ok {
				var m map[string]any
				if yaml.Unmarshal([]byte(cfg), &m) == nil {
					if _, on, _ := unstructured.NestedFieldNoCopy(m, "gatewayTopology", "proxyProtocol"); on {
						return need{fact: core.Yes, msg: fmt.Sprintf("The %s annotation sets gatewayTopology.proxyProtocol: the Istio gateway requires the header.", istioProxyConfigAnn)}, true, nil
					}
				}
			}
		}
	case Contour:
		return contourNeeds(v, c)
	case KGateway:
		return kgatewayNeeds(v, c)
	case Traefik:
		return traefikNeeds(v, v.traefik)
	case Cilium:
		if cm := c.ConfigMap(ciliumConfigNamespace, ciliumConfigName); cm != nil {
			if on, err := strconv.ParseBool(cm.Data[ciliumProxyProtocol]); err == nil && on {
				return need{fact: core.Yes, msg: fmt.Sprintf("ConfigMap %s/%s sets %s: \"true\": Cilium's Gateway listeners accept only PROXY protocol traffic.", ciliumConfigNamespace, ciliumConfigName, ciliumProxyProtocol)}, true, nil
			}
			return need{fact: core.No, msg: fmt.Sprintf("ConfigMap %s/%s does not set %s: \"true\": Cilium's Gateway listeners read no PROXY header.", ciliumConfigNamespace, ciliumConfigName, ciliumProxyProtocol)}, true, nil
		}
	}
	return need{}, false, nil
}

func infraAnnotations(v *view) map[string]string {
	out := map[string]string{}
	if inf := v.gw.Spec.Infrastructure; inf != nil {
		for k, val := range inf.Annotations {
			out[string(k)] = string(val)
		}
	}
	return out
}

// targets reports whether a policy's targetRefs (or targetRef) name the Gateway.
func targets(p *unstructured.Unstructured, name string) bool {
	refs, _, _ := unstructured.NestedSlice(p.Object, "spec", "targetRefs")
	if one, ok, _ := unstructured.NestedMap(p.Object, "spec", "targetRef"); ok {
		refs = append(refs, one)
	}
	for _, r := range refs {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		if m["kind"] == "Gateway" && m["name"] == name && (m["group"] == Group || m["group"] == nil) {
			return true
		}
	}
	return false
}

// envoyProxyOf is the EnvoyProxy that configures the Gateway's proxy: the Gateway's
// spec.infrastructure.parametersRef (same namespace) overrides the GatewayClass's
// spec.parametersRef (which names a namespace), unless the class's sets mergeGateways, which
// makes Envoy Gateway ignore the Gateway's (internal/gatewayapi/contexts.go,
// attachEnvoyProxy, v1.9.0).
func envoyProxyOf(gw *gwv1.Gateway, class *unstructured.Unstructured, c *core.Cluster) *unstructured.Unstructured {
	if cls := parameters(&gwv1.Gateway{}, class, c, envoyGatewayGroup, kindEnvoyProxy); len(cls) > 0 && mergeGatewaysOn(cls[0]) {
		return cls[0]
	}
	if ps := parameters(gw, class, c, envoyGatewayGroup, kindEnvoyProxy); len(ps) > 0 {
		return ps[0]
	}
	return nil
}

// mergeGatewaysOn reports whether an EnvoyProxy sets spec.mergeGateways: true: one proxy and
// one Service for every Gateway of the class (api/v1alpha1/envoyproxy_types.go).
func mergeGatewaysOn(ep *unstructured.Unstructured) bool {
	on, _, _ := unstructured.NestedBool(ep.Object, "spec", "mergeGateways")
	return on
}

// nginxProxies are the NginxProxy objects for the Gateway, the Gateway's own first.
func nginxProxies(v *view, c *core.Cluster) []*unstructured.Unstructured {
	return parameters(v.gw, v.class, c, ngfGroup, kindNginxProxy)
}

// parametersNamed counts the references to group/kind among the Gateway's
// spec.infrastructure.parametersRef and its class's spec.parametersRef.
func parametersNamed(gw *gwv1.Gateway, class *unstructured.Unstructured, group, kind string) int {
	n := 0
	if inf := gw.Spec.Infrastructure; inf != nil && inf.ParametersRef != nil && string(inf.ParametersRef.Group) == group && string(inf.ParametersRef.Kind) == kind {
		n++
	}
	if class != nil {
		if r, ok, _ := unstructured.NestedStringMap(class.Object, "spec", "parametersRef"); ok && r["group"] == group && r["kind"] == kind {
			n++
		}
	}
	return n
}

// parameters returns the objects of group/kind that the Gateway's
// spec.infrastructure.parametersRef and its class's spec.parametersRef name, in that order.
func parameters(gw *gwv1.Gateway, class *unstructured.Unstructured, c *core.Cluster, group, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	if inf := gw.Spec.Infrastructure; inf != nil && inf.ParametersRef != nil {
		if r := inf.ParametersRef; string(r.Group) == group && string(r.Kind) == kind {
			if u := c.Custom(group, kind, gw.Namespace, r.Name); u != nil {
				out = append(out, u)
			}
		}
	}
	if class != nil {
		if r, ok, _ := unstructured.NestedStringMap(class.Object, "spec", "parametersRef"); ok && r["group"] == group && r["kind"] == kind {
			if u := c.Custom(group, kind, r["namespace"], r["name"]); u != nil {
				out = append(out, u)
			}
		}
	}
	return out
}

// envoyServiceOf is spec.provider.kubernetes.envoyService of an EnvoyProxy.
func envoyServiceOf(ep *unstructured.Unstructured) map[string]any {
	m, _, _ := unstructured.NestedMap(ep.Object, "spec", "provider", "kubernetes", "envoyService")
	return m
}
