package gateway

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loopguard/loopguard/core"
)

// Cilium (github.com/cilium/cilium), read at main commit a5827f4d (the repository is too large
// to bring here at a release tag): its operator generates a Service per Gateway, shaped by the
// class's CiliumGatewayClassConfig; the cilium-config ConfigMap's Gateway API keys configure
// every Gateway's listeners (operator/pkg/gateway-api/cell.go, gatewayApiConfig).

// Cilium is Cilium.
const Cilium Implementation = "cilium"

const (
	ciliumController = "io.cilium/gateway-controller"
	// Cilium's class configuration (pkg/k8s/apis/cilium.io/v2alpha1/gatewayclassconfig_types.go):
	// a GatewayClass's spec.parametersRef names it, with its namespace.
	ciliumGroup             = "cilium.io"
	kindCiliumGatewayConfig = "CiliumGatewayClassConfig"
	// operator/pkg/gateway-api/gateway_reconcile.go owningGatewayLabel.
	labelCiliumOwning = "io.cilium.gateway/owning-gateway"
	// The operator reads these keys of the cilium-config ConfigMap (its Helm values
	// gatewayAPI.*), each declared as a flag in operator/pkg/gateway-api/cell.go
	// gatewayApiConfig.Flags: "Enable proxy protocol for all GatewayAPI listeners. Note that
	// _only_ Proxy protocol traffic will be accepted once this is enabled."; the XFF hops
	// (uint32, default 0) and whether the remote address is the client's (bool, default true)
	// set every Gateway listener's original IP detection; the externalTrafficPolicy (Cluster by
	// default, Cluster or Local) of every Gateway's Service.
	ciliumConfigNamespace  = "kube-system"
	ciliumConfigName       = "cilium-config"
	ciliumProxyProtocol    = "enable-gateway-api-proxy-protocol"
	ciliumXFFHops          = "gateway-api-xff-num-trusted-hops"
	ciliumUseRemoteAddress = "gateway-api-use-remote-address"
	ciliumServiceETP       = "gateway-api-service-externaltrafficpolicy"
)

type ciliumUnit struct{ base }

// ciliumConfig is what the unit read for a Gateway: the class's CiliumGatewayClassConfig, when
// known.
type ciliumConfig struct {
	classConfig *unstructured.Unstructured
}

func (ciliumUnit) id() Implementation        { return Cilium }
func (ciliumUnit) name() string              { return "Cilium" }
func (ciliumUnit) controllerNames() []string { return []string{ciliumController} }

func (ciliumUnit) ownerByMarks(svc *corev1.Service) (Owner, bool) {
	if n := svc.Labels[labelCiliumOwning]; n != "" {
		return Owner{Namespace: svc.Namespace, Name: n, By: "label " + labelCiliumOwning}, true
	}
	return Owner{}, false
}

func (ciliumUnit) resources() []schema.GroupVersionResource {
	// Cilium serves CiliumGatewayClassConfig at v2alpha1 only, namespaced.
	return []schema.GroupVersionResource{{Group: ciliumGroup, Version: "v2alpha1", Resource: "ciliumgatewayclassconfigs"}}
}

func (ciliumUnit) read(v *view, c *core.Cluster, _ Options) {
	v.cfg = ciliumConfig{classConfig: ciliumClassConfigOf(v, c)}
}

// ciliumService is spec.service of the class's CiliumGatewayClassConfig.
func ciliumService(v *view) map[string]any {
	cfg, _ := v.cfg.(ciliumConfig)
	if cfg.classConfig == nil {
		return nil
	}
	m, _, _ := unstructured.NestedMap(cfg.classConfig.Object, "spec", "service")
	return m
}

// ciliumConfigMap is kube-system/cilium-config, when among the inputs.
func ciliumConfigMap(v *view) *corev1.ConfigMap {
	if v.cluster == nil {
		return nil
	}
	return v.cluster.ConfigMap(ciliumConfigNamespace, ciliumConfigName)
}

// ciliumBool reads a bool key of cilium-config as the operator decodes it: mapstructure with
// WeaklyTypedInput (github.com/cilium/hive cell/config.go decoderConfig) turns a string into a
// bool with strconv.ParseBool, "" into false, and fails on anything else, which stops the
// operator (github.com/mitchellh/mapstructure v1.5.0 decodeBool). set is false when the key is
// absent (the flag's default holds).
func ciliumBool(cm *corev1.ConfigMap, key string) (value, set bool, err error) {
	s, ok := cm.Data[key]
	if !ok {
		return false, false, nil
	}
	if s == "" {
		return false, true, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, true, ciliumBad(key, s, "not a bool (strconv.ParseBool): Cilium's operator does not start")
	}
	return b, true, nil
}

// ciliumUint32 reads a uint32 key the same way: strconv.ParseUint(s, 0, 32) (decimal, 0x, 0o
// or 0b), "" as 0 (mapstructure decodeUint).
func ciliumUint32(cm *corev1.ConfigMap, key string) (uint64, bool, error) {
	s, ok := cm.Data[key]
	if !ok {
		return 0, false, nil
	}
	if s == "" {
		return 0, true, nil
	}
	n, err := strconv.ParseUint(s, 0, 32)
	if err != nil {
		return 0, true, ciliumBad(key, s, "not a whole number from 0 to 4294967295: Cilium's operator does not start")
	}
	return n, true, nil
}

func ciliumBad(key, val, why string) error {
	return &core.InvalidError{Object: core.ObjectRef{Kind: "ConfigMap", Namespace: ciliumConfigNamespace, Name: ciliumConfigName},
		Errs: field.ErrorList{field.Invalid(field.NewPath("data").Key(key), val, why)}}
}

// service: the Service is cilium-gateway-<gateway>, labelled with its Gateway; its
// externalTrafficPolicy is cilium-config's gateway-api-service-externaltrafficpolicy (Cluster
// by default), and the class's CiliumGatewayClassConfig spec.service sets type,
// externalTrafficPolicy and more (operator/pkg/model/ingestion, toServiceModel).
func (ciliumUnit) service(v *view, svc *corev1.Service, _ Options) {
	svc.Name = "cilium-gateway-" + v.gw.Name
	svc.Labels[labelCiliumOwning] = v.gw.Name
	svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	if cm := ciliumConfigMap(v); cm != nil {
		if p := cm.Data[ciliumServiceETP]; p == string(corev1.ServiceExternalTrafficPolicyLocal) || p == string(corev1.ServiceExternalTrafficPolicyCluster) {
			svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicy(p)
		}
	}
	service := ciliumService(v)
	if t, ok := service["type"].(string); ok && t != "" {
		svc.Spec.Type = corev1.ServiceType(t)
	}
	if p, ok := service["externalTrafficPolicy"].(string); ok && p != "" {
		svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicy(p)
	}
}

// proxyNeeds: enable-gateway-api-proxy-protocol puts the PROXY protocol on every Gateway
// listener, which then accepts only connections that send it. Only cilium-config holds it, so
// when that ConfigMap is among the inputs and says nothing, the listeners read no header.
func (ciliumUnit) proxyNeeds(v *view, _ *core.Cluster) (need, bool, error) {
	cm := ciliumConfigMap(v)
	if cm == nil {
		return need{}, false, nil
	}
	on, _, err := ciliumBool(cm, ciliumProxyProtocol)
	if err != nil {
		return need{}, false, err
	}
	if on {
		return need{fact: core.Yes, msg: "ConfigMap " + ciliumConfigNamespace + "/" + ciliumConfigName + " sets " + ciliumProxyProtocol + ": \"" + cm.Data[ciliumProxyProtocol] + "\": Cilium's Gateway listeners accept only PROXY protocol traffic."}, true, nil
	}
	return need{fact: core.No, msg: fmt.Sprintf("ConfigMap %s/%s does not set %s: \"true\": Cilium's Gateway listeners read no PROXY header.", ciliumConfigNamespace, ciliumConfigName, ciliumProxyProtocol)}, true, nil
}

// clientAddress: gateway-api-xff-num-trusted-hops above 0, or gateway-api-use-remote-address
// false, make every Gateway listener take the client address from X-Forwarded-For
// (OriginalIPDetectionConfig, operator/pkg/gateway-api/cell.go).
func (ciliumUnit) clientAddress(v *view, _ *core.Cluster) (clientAddress, bool, error) {
	cm := ciliumConfigMap(v)
	if cm == nil {
		return clientAddress{}, false, nil
	}
	hops, _, err := ciliumUint32(cm, ciliumXFFHops)
	if err != nil {
		return clientAddress{}, false, err
	}
	remote, set, err := ciliumBool(cm, ciliumUseRemoteAddress)
	if err != nil {
		return clientAddress{}, false, err
	}
	var says string
	switch {
	case hops > 0:
		says = fmt.Sprintf("%s: %q", ciliumXFFHops, cm.Data[ciliumXFFHops])
	case set && !remote:
		says = fmt.Sprintf("%s: %q", ciliumUseRemoteAddress, cm.Data[ciliumUseRemoteAddress])
	default:
		return clientAddress{}, false, nil
	}
	return clientAddress{why: fmt.Sprintf("ConfigMap %s/%s sets %s: Cilium's Gateway listeners take the client address from X-Forwarded-For set by the proxies in front.", ciliumConfigNamespace, ciliumConfigName, says)}, true, nil
}

func (ciliumUnit) ownResource(*view) string {
	return "the CiliumGatewayClassConfig the GatewayClass's spec.parametersRef names"
}

func (ciliumUnit) expectProxy() remedy {
	return remedy{ID: "cilium/cilium-config-proxy-protocol", Object: "ConfigMap kube-system/cilium-config (Helm gatewayAPI.enableProxyProtocol), then restart the operator", Field: ciliumProxyProtocol, Value: `"true"`}
}

func (ciliumUnit) doc() unitDoc {
	return unitDoc{
		Expects:       "a PROXY protocol header on every Gateway listener, and nothing else, with `enable-gateway-api-proxy-protocol`; the client address from X-Forwarded-For with the XFF keys",
		Service:       "the Gateway's namespace, `cilium-gateway-<name>`; `externalTrafficPolicy` from `cilium-config`'s `gateway-api-service-externaltrafficpolicy` (`Cluster` by default), type and `externalTrafficPolicy` from the class's CiliumGatewayClassConfig `spec.service`",
		Marks:         "label `io.cilium.gateway/owning-gateway`",
		ProxyProtocol: "`enable-gateway-api-proxy-protocol` in ConfigMap `kube-system/cilium-config` (Helm `gatewayAPI.enableProxyProtocol`), read as the operator decodes it: `strconv.ParseBool`, empty is false, anything else is an error (the operator does not start)",
		ClientAddress: "`gateway-api-xff-num-trusted-hops` above 0 (`strconv.ParseUint(s, 0, 32)`) or `gateway-api-use-remote-address: \"false\"` in `cilium-config`",
		Fix:           "`spec.infrastructure.annotations` / `labels` of the Gateway",
		Sources: []source{
			{Repo: "cilium/cilium", Version: "main a5827f4d (too large to read at a tag here)", Files: []string{
				"operator/pkg/gateway-api/cell.go", "operator/pkg/gateway-api/gateway_reconcile.go",
				"pkg/k8s/apis/cilium.io/v2alpha1/gatewayclassconfig_types.go", "operator/pkg/model/ingestion"}},
			{Repo: "cilium/hive", Version: "701ba0e3", Files: []string{"cell/config.go"}},
			{Repo: "mitchellh/mapstructure", Version: "v1.5.0", Files: []string{"mapstructure.go"}},
		},
	}
}

// ciliumClassConfigOf is the CiliumGatewayClassConfig the GatewayClass's spec.parametersRef
// names: Cilium takes the generated Service's type, externalTrafficPolicy, loadBalancerClass and
// the rest from its spec.service (operator/pkg/model/ingestion, toServiceModel).
func ciliumClassConfigOf(v *view, c *core.Cluster) *unstructured.Unstructured {
	if c == nil || v.class == nil {
		return nil
	}
	r, ok, _ := unstructured.NestedStringMap(v.class.Object, "spec", "parametersRef")
	if !ok || r["group"] != ciliumGroup || r["kind"] != kindCiliumGatewayConfig {
		return nil
	}
	return c.Custom(ciliumGroup, kindCiliumGatewayConfig, r["namespace"], r["name"])
}
