package gateway

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/loopguard/loopguard/core"
)

// kgateway (github.com/kgateway-dev/kgateway, module github.com/kgateway-dev/kgateway/v2),
// read at main commit 028d2df5 (api/v1alpha1/kgateway/listener_policy_types.go) and the
// deployer's files of the same period: no release tag of v2 could be read (the stored snapshot
// of the repository stops at v2.0.0-beta1, February 2025, and the Go module proxy refuses the
// module). Its deployer renders a Service per Gateway from its Helm chart and GatewayParameters;
// ListenerPolicies configure the listeners.

// KGateway is kgateway.
const KGateway Implementation = "kgateway"

const (
	// install/helm/kgateway/values.yaml gatewayClass.controllerName.
	kgatewayController    = "kgateway.dev/kgateway"
	kgatewayGroup         = "gateway.kgateway.dev"
	kindGatewayParameters = "GatewayParameters"
	kindListenerPolicy    = "ListenerPolicy"
	// kgateway's deployer renders the Service from its Helm chart with the constant label
	// kgateway: kube-gateway (pkg/kgateway/helm/envoy/templates/_helpers.tpl,
	// "kgateway.gateway.constLabels") beside the Gateway's ownerReference and
	// gateway.networking.k8s.io/gateway-name (pkg/deployer/deployer.go,
	// SetNamespaceAndOwnerWithGVK).
	labelKGateway      = "kgateway"
	labelKGatewayValue = "kube-gateway"
)

type kgatewayUnit struct{ base }

// kgatewayConfig is what the unit read for a Gateway: spec.kube.service of its
// GatewayParameters, merged.
type kgatewayConfig struct {
	service map[string]any
}

func (kgatewayUnit) id() Implementation        { return KGateway }
func (kgatewayUnit) name() string              { return "kgateway" }
func (kgatewayUnit) controllerNames() []string { return []string{kgatewayController} }

func (kgatewayUnit) claims(svc *corev1.Service, _ string) bool {
	return svc.Labels[labelKGateway] == labelKGatewayValue
}

func (kgatewayUnit) resources() []schema.GroupVersionResource {
	return []schema.GroupVersionResource{
		{Group: kgatewayGroup, Version: "v1alpha1", Resource: "gatewayparameters"},
		{Group: kgatewayGroup, Version: "v1alpha1", Resource: "listenerpolicies"},
	}
}

func (kgatewayUnit) read(v *view, c *core.Cluster, _ Options) {
	v.cfg = kgatewayConfig{service: gatewayParametersOf(v, c)}
}

// service: pkg/kgateway/helm/envoy/templates/service.yaml: a Service named after the Gateway,
// type LoadBalancer by default (pkg/deployer/gateway_parameters.go defaultGatewayParameters),
// GatewayParameters' spec.kube.service type, externalTrafficPolicy (unset: the API's Cluster)
// and extraAnnotations, the Gateway's spec.infrastructure annotations winning over those.
func (kgatewayUnit) service(v *view, svc *corev1.Service, _ Options) {
	svc.Labels[labelKGateway] = labelKGatewayValue
	cfg, _ := v.cfg.(kgatewayConfig)
	if gp := cfg.service; gp != nil {
		if t, ok := gp["type"].(string); ok && t != "" {
			svc.Spec.Type = corev1.ServiceType(t)
		}
		if p, ok := gp["externalTrafficPolicy"].(string); ok && p != "" {
			svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicy(p)
		}
		svc.Annotations = mergeUnder(svc.Annotations, stringMap(gp, "extraAnnotations"))
		svc.Labels = mergeUnder(svc.Labels, stringMap(gp, "extraLabels"))
	}
}

// kgatewayListenerConfig is the ListenerConfig a ListenerPolicy gives one port: the spec.perPort
// entry for the port, which "completely replaces the default configuration for all listeners
// handling traffic that match this port", else spec.default
// (api/v1alpha1/kgateway/listener_policy_types.go). Its targetRefs are
// LocalPolicyTargetReferences: no sectionName; per port is how it configures one listener.
type kgatewayListenerConfig struct {
	m map[string]any
	// entry is the index of the spec.perPort entry; -1 for spec.default.
	entry int
}

// path is where the ListenerConfig is in the policy, for an error.
func (c kgatewayListenerConfig) path() *field.Path {
	if c.entry < 0 {
		return field.NewPath("spec", "default")
	}
	return field.NewPath("spec", "perPort").Index(c.entry).Child("listener")
}

func kgatewayConfigs(p *unstructured.Unstructured) (def kgatewayListenerConfig, perPort map[int64]kgatewayListenerConfig) {
	def = kgatewayListenerConfig{entry: -1}
	if m, ok, _ := unstructured.NestedFieldNoCopy(p.Object, "spec", "default"); ok {
		def.m, _ = m.(map[string]any)
	}
	list, _, _ := unstructured.NestedFieldNoCopy(p.Object, "spec", "perPort")
	entries, _ := list.([]any)
	if len(entries) == 0 {
		return def, nil
	}
	perPort = make(map[int64]kgatewayListenerConfig, len(entries))
	for i, item := range entries {
		if m, ok := item.(map[string]any); ok {
			if port, ok := intOf(m["port"]); ok {
				cfg := kgatewayListenerConfig{entry: i}
				cfg.m, _ = m["listener"].(map[string]any)
				perPort[port] = cfg
			}
		}
	}
	return def, perPort
}

// kgatewayProxyProtocolOn reads ListenerConfig.proxyProtocol, a *ProxyProtocolConfig: "The
// presence of this configuration enables PROXY protocol support"; a null value is no
// configuration (a nil pointer).
func kgatewayProxyProtocolOn(cfg map[string]any) bool {
	val, set, _ := unstructured.NestedFieldNoCopy(cfg, "proxyProtocol")
	return set && val != nil
}

// proxyNeeds: a ListenerPolicy in the Gateway's namespace that targets it by targetRefs or
// targetSelectors sets proxyProtocol in the ListenerConfig of a listener's port: "When set,
// Envoy will expect connections to include the PROXY protocol header."
func (kgatewayUnit) proxyNeeds(v *view, c *core.Cluster) (need, bool, error) {
	gw := v.gw
	ps, err := kgatewayPolicies(gw, c)
	if err != nil {
		return need{}, false, err
	}
	for _, p := range ps {
		def, perPort := kgatewayConfigs(p)
		seen := map[int64]bool{}
		var ports []string
		for _, l := range gw.Spec.Listeners {
			port := int64(l.Port)
			if seen[port] {
				continue
			}
			seen[port] = true
			cfg, ok := perPort[port]
			if !ok {
				cfg = def
			}
			if kgatewayProxyProtocolOn(cfg.m) {
				ports = append(ports, fmt.Sprint(port))
			}
		}
		if len(ports) > 0 {
			return need{fact: core.Yes, msg: fmt.Sprintf("ListenerPolicy %s/%s sets proxyProtocol for port %s: kgateway's Envoy requires the header there.", p.GetNamespace(), p.GetName(), strings.Join(ports, ", "))}, true, nil
		}
	}
	return need{}, false, nil
}

// kgatewayHops reads httpSettings.xffNumTrustedHops as kgateway's API types it: an *int32 with
// +kubebuilder:validation:Minimum=0, so 0 to 2147483647; the API server refuses anything else.
func kgatewayHops(val any) (int64, error) {
	n, ok := intOf(val)
	if !ok || n < 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("must be a whole number from 0 to %d", math.MaxInt32)
	}
	return n, nil
}

// clientAddress: ListenerConfig.httpSettings in the ListenerConfig of a listener's port:
// xffNumTrustedHops, "the number of additional ingress proxy hops from the right side of the
// X-Forwarded-For HTTP header to trust when determining the origin client's IP address", above
// 0; or useRemoteAddress: false, "Envoy will use the X-Forwarded-For header to determine the
// client address" (true, kgateway's default for every connection manager, uses the
// connection's).
func (kgatewayUnit) clientAddress(v *view, c *core.Cluster) (clientAddress, bool, error) {
	ps, err := kgatewayPolicies(v.gw, c)
	if err != nil {
		return clientAddress{}, false, err
	}
	for _, p := range ps {
		def, perPort := kgatewayConfigs(p)
		defSays, err := kgatewayClientSettings(v, p, def)
		if err != nil {
			return clientAddress{}, false, err
		}
		var portSays map[int64]string
		if len(perPort) > 0 {
			portSays = make(map[int64]string, len(perPort))
		}
		for port, cfg := range perPort {
			if portSays[port], err = kgatewayClientSettings(v, p, cfg); err != nil {
				return clientAddress{}, false, err
			}
		}
		var on []listener
		var says string
		for _, l := range ownListeners(v.gw) {
			s, ok := portSays[int64(l.Port)]
			if !ok {
				s = defSays
			}
			if s != "" {
				on, says = append(on, l), s
			}
		}
		if len(on) > 0 {
			return clientAddress{why: fmt.Sprintf("ListenerPolicy %s/%s sets %s for listener %s: kgateway's Envoy takes the client address from X-Forwarded-For set by the proxies in front.", p.GetNamespace(), p.GetName(), says, onListeners(on))}, true, nil
		}
	}
	return clientAddress{}, false, nil
}

// kgatewayClientSettings says what a ListenerConfig's httpSettings set about the client
// address ("" when nothing), or why the policy is bad input.
func kgatewayClientSettings(v *view, p *unstructured.Unstructured, cfg kgatewayListenerConfig) (string, error) {
	var hops, remote string
	if val, set, _ := unstructured.NestedFieldNoCopy(cfg.m, "httpSettings", "xffNumTrustedHops"); set && val != nil {
		n, err := kgatewayHops(val)
		if err != nil {
			return "", inputError(v.gw, kindListenerPolicy, p.GetNamespace(), p.GetName(), field.Invalid(cfg.path().Child("httpSettings", "xffNumTrustedHops"), val, err.Error()))
		}
		if n != 0 {
			hops = "httpSettings.xffNumTrustedHops (" + strconv.FormatInt(n, 10) + ")"
		}
	}
	if val, set, _ := unstructured.NestedFieldNoCopy(cfg.m, "httpSettings", "useRemoteAddress"); set && val != nil {
		b, ok := val.(bool)
		if !ok {
			return "", inputError(v.gw, kindListenerPolicy, p.GetNamespace(), p.GetName(), field.Invalid(cfg.path().Child("httpSettings", "useRemoteAddress"), val, "must be true or false"))
		}
		if !b {
			remote = "httpSettings.useRemoteAddress: false"
		}
	}
	if hops != "" && remote != "" {
		return hops + " and " + remote, nil
	}
	return hops + remote, nil
}

func (kgatewayUnit) ownResource(*view) string {
	return "the GatewayParameters' spec.kube.service (named by the Gateway's spec.infrastructure.parametersRef or the GatewayClass's spec.parametersRef)"
}

func (kgatewayUnit) expectProxy() remedy {
	return remedy{ID: "kgateway/listener-policy-proxy-protocol", Object: "a ListenerPolicy whose targetRefs name the Gateway", Field: "spec.default.proxyProtocol", Value: "{}"}
}

func (kgatewayUnit) doc() unitDoc {
	return unitDoc{
		Expects:       "a PROXY protocol header on the ports a ListenerPolicy's `proxyProtocol` covers; the client address from X-Forwarded-For with `xffNumTrustedHops` or `useRemoteAddress: false`",
		Service:       "the Gateway's namespace, named after the Gateway, LoadBalancer by default; type, `externalTrafficPolicy`, `extraAnnotations` and `extraLabels` from GatewayParameters `spec.kube.service` (the Gateway's over its class's), under the Gateway's `spec.infrastructure`",
		Marks:         "ownerReference to the Gateway with the label `kgateway: kube-gateway`",
		ProxyProtocol: "a ListenerPolicy in the Gateway's namespace whose `targetRefs` name the Gateway or whose `targetSelectors` match its labels: `spec.default.proxyProtocol`, or `spec.perPort[].listener.proxyProtocol` for a listener's port (a port's entry replaces the default); present and not null is on. The report names the ports",
		ClientAddress: "a ListenerPolicy for the Gateway (as for its PROXY protocol): `httpSettings.xffNumTrustedHops` above 0 (an int32 with minimum 0: 0 to 2147483647), or `httpSettings.useRemoteAddress: false`, in `spec.default` or in the `spec.perPort` entry of a listener's port (which replaces the default there)",
		Fix:           "`spec.infrastructure.annotations` / `labels` of the Gateway, which win over GatewayParameters' `extraAnnotations`",
		Sources: []source{{Repo: "kgateway-dev/kgateway", Version: "main 028d2df5 (no v2 release tag readable)", Files: []string{
			"api/v1alpha1/kgateway/listener_policy_types.go", "pkg/kgateway/helm/envoy/templates/service.yaml",
			"pkg/kgateway/helm/envoy/templates/_helpers.tpl", "pkg/deployer/gateway_parameters.go", "pkg/deployer/deployer.go"}}},
	}
}

// gatewayParametersOf is kgateway's GatewayParameters for the Gateway: the one the Gateway's
// spec.infrastructure.parametersRef names (same namespace) merged over the GatewayClass's
// (pkg/deployer/gateway_parameters.go getGatewayParametersForGateway,
// DeepMergeGatewayParameters). Only spec.kube.service is kept, which is what the Service is
// rendered from; nil when neither names one.
func gatewayParametersOf(v *view, c *core.Cluster) map[string]any {
	objs := parameters(v.gw, v.class, c, kgatewayGroup, kindGatewayParameters)
	if len(objs) == 0 {
		return nil
	}
	out := map[string]any{}
	// The class's first, the Gateway's over it.
	for i := len(objs) - 1; i >= 0; i-- {
		svc, _, _ := unstructured.NestedMap(objs[i].Object, "spec", "kube", "service")
		for k, val := range svc {
			if m, ok := val.(map[string]any); ok {
				prev, _ := out[k].(map[string]any)
				merged := map[string]any{}
				for pk, pv := range prev {
					merged[pk] = pv
				}
				for mk, mv := range m {
					merged[mk] = mv
				}
				out[k] = merged
				continue
			}
			out[k] = val
		}
	}
	return out
}

// kgatewayPolicies are kgateway's ListenerPolicies of the Gateway's namespace that target it by
// targetRefs or targetSelectors, in namespace/name order.
func kgatewayPolicies(gw *gwv1.Gateway, c *core.Cluster) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, p := range c.CustomListIn(kgatewayGroup, kindListenerPolicy, gw.Namespace) {
		picked, err := selects(gw, p, "Gateway", gw.Labels)
		if err != nil {
			return nil, err
		}
		if picked || targets(p, gw.Name) {
			out = append(out, p)
		}
	}
	return out, nil
}
