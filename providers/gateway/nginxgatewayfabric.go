package gateway

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loopguard/loopguard/core"
)

// NGINX Gateway Fabric (github.com/nginx/nginx-gateway-fabric), read at v2.6.7: its
// provisioner generates a Service per Gateway from the effective NginxProxy, the Gateway's
// (spec.infrastructure.parametersRef) merged field by field over its class's
// (spec.parametersRef) (internal/controller/state/graph/nginxproxy.go,
// buildEffectiveNginxProxy: "Fields specified on the Gateway NginxProxy override those set on
// the GatewayClass NginxProxy"); spec.rewriteClientIP sets what NGINX expects.

// NGINXGatewayFabric is NGINX Gateway Fabric.
const NGINXGatewayFabric Implementation = "nginx-gateway-fabric"

const (
	// charts/nginx-gateway-fabric/values.yaml gatewayControllerName.
	ngfController  = "gateway.nginx.org/nginx-gateway-controller"
	ngfGroup       = "gateway.nginx.org"
	kindNginxProxy = "NginxProxy"
)

type nginxGatewayFabricUnit struct{ base }

// ngfConfig is what the unit read for a Gateway: its NginxProxies, the Gateway's own first (at
// most two: the Gateway's and its class's, in buf).
type ngfConfig struct {
	buf     [2]*unstructured.Unstructured
	proxies []*unstructured.Unstructured
}

func (nginxGatewayFabricUnit) id() Implementation        { return NGINXGatewayFabric }
func (nginxGatewayFabricUnit) name() string              { return "NGINX Gateway Fabric" }
func (nginxGatewayFabricUnit) controllerNames() []string { return []string{ngfController} }

func (nginxGatewayFabricUnit) resources() []schema.GroupVersionResource {
	return []schema.GroupVersionResource{{Group: ngfGroup, Version: "v1alpha2", Resource: "nginxproxies"}}
}

func (nginxGatewayFabricUnit) read(v *view, c *core.Cluster, _ Options) {
	cfg := &ngfConfig{}
	cfg.proxies = appendParameters(cfg.buf[:0], v.gw, v.class, c, ngfGroup, kindNginxProxy)
	v.cfg = cfg
}

func nginxProxies(v *view) []*unstructured.Unstructured {
	if cfg, ok := v.cfg.(*ngfConfig); ok {
		return cfg.proxies
	}
	return nil
}

// ngfEffective is a field of the effective NginxProxy: the first of the Gateway's own and its
// class's that sets it (a JSON merge of the Gateway's over the class's), with the object it
// comes from.
func ngfEffective(nps []*unstructured.Unstructured, fields ...string) (any, *unstructured.Unstructured) {
	for _, np := range nps {
		if val, ok, _ := unstructured.NestedFieldNoCopy(np.Object, append([]string{"spec"}, fields...)...); ok && val != nil {
			return val, np
		}
	}
	return nil, nil
}

// ngfModes are the values the NginxProxy CRD admits for spec.rewriteClientIP.mode
// (apis/v1alpha2/nginxproxy_types.go, RewriteClientIPModeType, +kubebuilder:validation:Enum,
// case-sensitive): the API server refuses any other.
var ngfModes = map[string]bool{"ProxyProtocol": true, "XForwardedFor": true}

// ngfMode is the effective spec.rewriteClientIP.mode; a value the CRD refuses is bad input
// naming the NginxProxy and the field.
func ngfMode(v *view) (string, *unstructured.Unstructured, error) {
	val, np := ngfEffective(nginxProxies(v), "rewriteClientIP", "mode")
	if np == nil {
		return "", nil, nil
	}
	mode, ok := val.(string)
	if !ok || !ngfModes[mode] {
		return "", nil, inputError(v.gw, kindNginxProxy, np.GetNamespace(), np.GetName(),
			field.NotSupported(field.NewPath("spec", "rewriteClientIP", "mode"), val, []string{"ProxyProtocol", "XForwardedFor"}))
	}
	return mode, np, nil
}

// service: internal/controller/provisioner/objects.go buildNginxService: a LoadBalancer
// Service named after the Gateway and its class, externalTrafficPolicy Local unless the
// NginxProxy's spec.kubernetes.service says otherwise (or the type is ClusterIP); its service
// patches, applied last (applyPatches), set annotations over the Gateway's.
func (nginxGatewayFabricUnit) service(v *view, svc *corev1.Service, _ Options) {
	gw := v.gw
	svc.Name = gw.Name + "-" + string(gw.Spec.GatewayClassName)
	nps := nginxProxies(v)
	if t, _ := ngfEffective(nps, "kubernetes", "service", "type"); t != nil {
		if s, ok := t.(string); ok && s != "" {
			svc.Spec.Type = corev1.ServiceType(s)
		}
	}
	if svc.Spec.Type != corev1.ServiceTypeClusterIP {
		svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		if p, _ := ngfEffective(nps, "kubernetes", "service", "externalTrafficPolicy"); p != nil {
			if s, ok := p.(string); ok && s != "" {
				svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicy(s)
			}
		}
	}
	for i := len(nps) - 1; i >= 0; i-- {
		for k, val := range nginxPatchAnnotations(nps[i]) {
			if svc.Annotations == nil {
				svc.Annotations = map[string]string{}
			}
			svc.Annotations[k] = val
		}
	}
}

// proxyNeeds: rewriteClientIP.mode ProxyProtocol "Sets the proxy_protocol parameter on the
// listen directive of all servers" (apis/v1alpha2/nginxproxy_types.go).
func (nginxGatewayFabricUnit) proxyNeeds(v *view, _ *core.Cluster) (need, bool, error) {
	mode, np, err := ngfMode(v)
	if err != nil {
		return need{}, false, err
	}
	if mode == "ProxyProtocol" {
		return need{fact: core.Yes, msg: fmt.Sprintf("NginxProxy %s/%s sets spec.rewriteClientIP.mode: ProxyProtocol: NGINX listens with proxy_protocol on every server.", np.GetNamespace(), np.GetName())}, true, nil
	}
	nps := nginxProxies(v)
	if named := parametersNamed(v.gw, v.class, ngfGroup, kindNginxProxy); len(nps) == named {
		what := "The Gateway and its class name no NginxProxy"
		if named > 0 {
			what = "No NginxProxy of the Gateway or its class sets spec.rewriteClientIP.mode: ProxyProtocol"
		}
		return need{fact: core.No, msg: what + ": NGINX listens without proxy_protocol."}, true, nil
	}
	return need{}, false, nil
}

// clientAddress: RewriteClientIP mode XForwardedFor sets real_ip_header X-Forwarded-For and
// trustedAddresses set_real_ip_from ("If no addresses are provided, NGINX will not rewrite the
// client IP information"), each field of the effective NginxProxy.
func (nginxGatewayFabricUnit) clientAddress(v *view, _ *core.Cluster) (clientAddress, bool, error) {
	mode, np, err := ngfMode(v)
	if err != nil || mode != "XForwardedFor" {
		return clientAddress{}, false, err
	}
	val, from := ngfEffective(nginxProxies(v), "rewriteClientIP", "trustedAddresses")
	trusted, _ := val.([]any)
	if len(trusted) == 0 {
		return clientAddress{}, false, nil
	}
	where := fmt.Sprintf("NginxProxy %s/%s sets spec.rewriteClientIP.mode: XForwardedFor with %d trusted address(es)", np.GetNamespace(), np.GetName(), len(trusted))
	if from != np {
		where = fmt.Sprintf("NginxProxy %s/%s sets spec.rewriteClientIP.mode: XForwardedFor and NginxProxy %s/%s %d trusted address(es)", np.GetNamespace(), np.GetName(), from.GetNamespace(), from.GetName(), len(trusted))
	}
	return clientAddress{why: where + ": NGINX takes the client address from X-Forwarded-For of connections from those addresses, else the connection's source."}, true, nil
}

// override: an annotation one of the NginxProxies' service patches sets is applied after the
// Gateway's; a patch entry is not a field loopguard can own, so the change is the user's.
func (nginxGatewayFabricUnit) override(v *view, meta, key string) (override, bool) {
	if meta != "annotations" {
		return override{}, false
	}
	for _, np := range nginxProxies(v) {
		if _, set := nginxPatchAnnotations(np)[key]; set {
			return override{userOwned: true, key: core.ObjectKey{APIVersion: np.GetAPIVersion(), Kind: kindNginxProxy, Namespace: np.GetNamespace(), Name: np.GetName()},
				what: "spec.kubernetes.service.patches", how: "change that patch (loopguard does not edit a patch list)"}, true
		}
	}
	return override{}, false
}

func (nginxGatewayFabricUnit) ownResource(*view) string {
	return "the NginxProxy's spec.kubernetes.service, or its patches (referenced by spec.infrastructure.parametersRef or the GatewayClass)"
}

func (nginxGatewayFabricUnit) expectProxy() remedy {
	return remedy{ID: "nginx-gateway-fabric/nginxproxy-proxy-protocol", Object: "the NginxProxy the Gateway's spec.infrastructure.parametersRef (or its GatewayClass's spec.parametersRef) names", Field: "spec.rewriteClientIP.mode", Value: "ProxyProtocol"}
}

func (nginxGatewayFabricUnit) doc() unitDoc {
	return unitDoc{
		Expects:       "a PROXY protocol header on every server with `rewriteClientIP.mode: ProxyProtocol`; the client address from X-Forwarded-For of trusted addresses with `mode: XForwardedFor`",
		Service:       "the Gateway's namespace, `<name>-<class>`, `externalTrafficPolicy: Local` by default; type and `externalTrafficPolicy` from the effective NginxProxy's `spec.kubernetes.service` (the Gateway's over its class's, field by field), then the annotations its `patches` set",
		Marks:         "label `gateway.networking.k8s.io/gateway-name` (an annotation of that key when the name is too long for a label)",
		ProxyProtocol: "the effective NginxProxy (the Gateway's `spec.infrastructure.parametersRef` over the GatewayClass's `spec.parametersRef`, field by field): `spec.rewriteClientIP.mode: ProxyProtocol`; a mode the CRD refuses (it admits `ProxyProtocol` and `XForwardedFor`, case-sensitive) is an error naming the NginxProxy",
		ClientAddress: "the effective NginxProxy: `spec.rewriteClientIP.mode: XForwardedFor` with `trustedAddresses` (without addresses NGINX rewrites nothing). `mode: ProxyProtocol` is the PROXY header above",
		Fix:           "`spec.infrastructure.annotations` / `labels` of the Gateway; an annotation one of the NginxProxy's `spec.kubernetes.service.patches` sets (applied after the Gateway's) is a change for you on that NginxProxy",
		Sources: []source{{Repo: "nginx/nginx-gateway-fabric", Version: "v2.6.7", Files: []string{
			"apis/v1alpha2/nginxproxy_types.go", "internal/controller/state/graph/nginxproxy.go",
			"internal/controller/provisioner/objects.go", "charts/nginx-gateway-fabric/values.yaml"}}},
	}
}

// nginxPatchAnnotations are the Service annotations an NginxProxy's
// spec.kubernetes.service.patches set: NGINX Gateway Fabric applies them to the Service it built
// from the Gateway (internal/controller/provisioner/objects.go, buildNginxService,
// applyPatches; StrategicMerge by default, Merge, or JSONPatch), so they win over
// spec.infrastructure.annotations.
func nginxPatchAnnotations(np *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	patches, _, _ := unstructured.NestedSlice(np.Object, "spec", "kubernetes", "service", "patches")
	for _, item := range patches {
		p, ok := item.(map[string]any)
		if !ok {
			continue
		}
		switch p["type"] {
		case nil, "StrategicMerge", "Merge":
			value, _ := p["value"].(map[string]any)
			ann, _, _ := unstructured.NestedStringMap(value, "metadata", "annotations")
			for k, val := range ann {
				out[k] = val
			}
		case "JSONPatch":
			ops, _ := p["value"].([]any)
			for _, o := range ops {
				op, ok := o.(map[string]any)
				if !ok || (op["op"] != "add" && op["op"] != "replace") {
					continue
				}
				path, _ := op["path"].(string)
				key, ok := strings.CutPrefix(path, "/metadata/annotations/")
				if val, isString := op["value"].(string); ok && isString {
					out[strings.NewReplacer("~1", "/", "~0", "~").Replace(key)] = val
				}
			}
		}
	}
	return out
}
