package gateway

import (
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/loopguard/loopguard/core"
)

// API groups and kinds of Contour's and kgateway's own resources loopguard reads.
const (
	contourGroup          = "projectcontour.io"
	kindContourDeployment = "ContourDeployment"
	kgatewayGroup         = "gateway.kgateway.dev"
	kindGatewayParameters = "GatewayParameters"
	kindListenerPolicy    = "ListenerPolicy"
)

// readParams finds the implementation's own resources that shape the Gateway's Service.
func (v *view) readParams(c *core.Cluster, opts *Options) {
	if c == nil {
		return
	}
	switch v.impl {
	case EnvoyGateway:
		if v.envoyProxy == nil {
			v.envoyProxy = envoyProxyOf(v.gw, v.class, c)
		}
	case Contour:
		if v.contourDeployment == nil {
			v.contourDeployment = contourDeploymentOf(v, c)
		}
	case KGateway:
		if v.gatewayParameters == nil {
			v.gatewayParameters = gatewayParametersOf(v, c)
		}
	case NGINXGatewayFabric:
		if v.nginxProxies == nil {
			v.nginxProxies = nginxProxies(v, c)
		}
	case Istio:
		if v.istio == nil {
			v.istio = istioParametersOf(v, c, opts.IstioNamespace)
		}
	case Cilium:
		if v.cilium == nil {
			v.cilium = ciliumServiceOf(v, c)
		}
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

// contourDeploymentOf is the ContourDeployment Contour's gateway provisioner reads for the
// Gateway: only the GatewayClass's spec.parametersRef names one
// (internal/provisioner/controller/gateway.go, getGatewayClassParams).
func contourDeploymentOf(v *view, c *core.Cluster) *unstructured.Unstructured {
	if v.class == nil {
		return nil
	}
	r, ok, _ := unstructured.NestedStringMap(v.class.Object, "spec", "parametersRef")
	if !ok || r["group"] != contourGroup || r["kind"] != kindContourDeployment {
		return nil
	}
	return c.Custom(contourGroup, kindContourDeployment, r["namespace"], r["name"])
}

// contourPublishing is a ContourDeployment's spec.envoy.networkPublishing.
func contourPublishing(cd *unstructured.Unstructured) map[string]any {
	m, _, _ := unstructured.NestedMap(cd.Object, "spec", "envoy", "networkPublishing")
	return m
}

// contourServiceTypes maps ContourDeployment's networkPublishing.type to the Service type
// (apis/projectcontour/v1alpha1/contourdeployment.go, NetworkPublishingType).
var contourServiceTypes = map[string]corev1.ServiceType{
	"LoadBalancerService": corev1.ServiceTypeLoadBalancer,
	"NodePortService":     corev1.ServiceTypeNodePort,
	"ClusterIPService":    corev1.ServiceTypeClusterIP,
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

// contourRuntime is the configuration Contour runs the Gateway's Envoy with
// (apis/projectcontour/v1alpha1/contourconfig.go ContourConfigurationSpec), where loopguard
// finds it, read at Contour v1.33.6:
//   - the ContourConfiguration the gateway provisioner made for the Gateway,
//     "contourconfig-<gateway>" in the Gateway's namespace (internal/provisioner/model/names.go
//     ContourConfigurationName), when among the inputs: the provisioned Contour reads it
//     (--contour-config-name, internal/provisioner/objects/deployment/deployment.go; cmd/contour/
//     serve.go getConfig overlays it on the defaults);
//   - else the class's ContourDeployment spec.runtimeSettings, which the provisioner copies whole
//     into that ContourConfiguration when it creates it
//     (internal/provisioner/objects/contourconfig/contourconfig.go EnsureContourConfig; its
//     updater sets only the Gateway and Envoy Service references afterwards, so a later change
//     of the ContourDeployment's runtimeSettings reaches an existing ContourConfiguration
//     only when loopguard reads that ContourConfiguration itself).
type contourRuntime struct {
	obj  *unstructured.Unstructured
	kind string
	// at is the path of the ContourConfigurationSpec in obj.
	at []string
}

// kindContourConfiguration is Contour's runtime configuration (projectcontour.io/v1alpha1).
const kindContourConfiguration = "ContourConfiguration"

func contourRuntimeOf(v *view, c *core.Cluster) (contourRuntime, bool) {
	if c != nil {
		if cc := c.Custom(contourGroup, kindContourConfiguration, v.gw.Namespace, contourConfigPrefix+v.gw.Name); cc != nil {
			return contourRuntime{obj: cc, kind: kindContourConfiguration, at: []string{"spec"}}, true
		}
	}
	if cd := v.contourDeployment; cd != nil {
		return contourRuntime{obj: cd, kind: kindContourDeployment, at: []string{"spec", "runtimeSettings"}}, true
	}
	return contourRuntime{}, false
}

// field reads a field under the ContourConfigurationSpec; path names it for messages.
func (r contourRuntime) field(fields ...string) (value any, path string, ok bool) {
	full := append(append([]string(nil), r.at...), fields...)
	value, ok, _ = unstructured.NestedFieldNoCopy(r.obj.Object, full...)
	return value, strings.Join(full, "."), ok
}

func (r contourRuntime) String() string {
	return fmt.Sprintf("%s %s/%s", r.kind, r.obj.GetNamespace(), r.obj.GetName())
}

// contourNeeds: envoy.listener.useProxyProtocol of the Gateway's Contour configuration
// (contourRuntime): "Use PROXY protocol for all listeners"
// (apis/projectcontour/v1alpha1/contourconfig.go); Contour then puts Envoy's proxy_protocol
// listener filter with its defaults on every listener (internal/xdscache/v3/listener.go,
// internal/envoy/v3/listener.go ProxyProtocol), which refuses a connection without the header.
//
// The ContourConfiguration, or the ContourDeployment it is made from, is the provisioner's only
// source of that setting, so when the class names none, or the one loopguard reads leaves it
// off, Envoy reads no header.
func contourNeeds(v *view, c *core.Cluster) (need, bool, error) {
	rt, ok := contourRuntimeOf(v, c)
	if !ok {
		if v.class != nil && parametersNamed(v.gw, v.class, contourGroup, kindContourDeployment) == 0 {
			return need{fact: core.No, msg: "The GatewayClass names no ContourDeployment: Contour's Envoy reads no PROXY header (useProxyProtocol is off by default)."}, true, nil
		}
		return need{}, false, nil
	}
	val, path, set := rt.field("envoy", "listener", "useProxyProtocol")
	on, isBool := val.(bool)
	if set && !isBool {
		return need{}, false, inputError(v.gw, rt.kind, rt.obj.GetNamespace(), rt.obj.GetName(), field.Invalid(field.NewPath(path), val, "must be true or false"))
	}
	if on {
		return need{fact: core.Yes, msg: fmt.Sprintf("%s sets %s: true: Contour's Envoy requires the header on every listener.", rt, path)}, true, nil
	}
	return need{fact: core.No, msg: fmt.Sprintf("%s does not set %s: Contour's Envoy reads no PROXY header.", rt, path)}, true, nil
}

// contourClientAddress: envoy.network.numTrustedHops of the Gateway's Contour configuration
// (contourRuntime), NetworkParameters.XffNumTrustedHops, "the number of additional ingress
// proxy hops from the right side of the x-forwarded-for HTTP header to trust when determining
// the origin client's IP address" (apis/projectcontour/v1alpha1/contourconfig.go, a uint32,
// Contour's default 0), set as the connection manager's xff_num_trusted_hops on every HTTP
// listener (internal/xdscache/v3/listener.go): kgateway's xffNumTrustedHops, in Contour.
func contourClientAddress(v *view, c *core.Cluster) (clientAddress, bool, error) {
	rt, ok := contourRuntimeOf(v, c)
	if !ok {
		return clientAddress{}, false, nil
	}
	val, path, set := rt.field("envoy", "network", "numTrustedHops")
	if !set {
		return clientAddress{}, false, nil
	}
	n, err := trustedHops(val)
	if err != nil {
		return clientAddress{}, false, inputError(v.gw, rt.kind, rt.obj.GetNamespace(), rt.obj.GetName(), field.Invalid(field.NewPath(path), val, err.Error()))
	}
	if n == 0 {
		return clientAddress{}, false, nil
	}
	return clientAddress{why: fmt.Sprintf("%s sets %s: %d: Contour's Envoy takes the client address from X-Forwarded-For set by that many proxies in front (Contour apis/projectcontour/v1alpha1/contourconfig.go NetworkParameters, v1.33.6).", rt, path, n)}, true, nil
}

// trustedHops reads a hop count, a uint32 in each implementation's API (Envoy's
// xff_num_trusted_hops).
func trustedHops(v any) (int64, error) {
	n, ok := intOf(v)
	if !ok || n < 0 || n > math.MaxUint32 {
		return 0, fmt.Errorf("must be a whole number from 0 to %d", uint32(math.MaxUint32))
	}
	return n, nil
}

// kgatewayNeeds: a ListenerPolicy (api/v1alpha1/kgateway/listener_policy_types.go) in the
// Gateway's namespace that targets it by targetRefs or targetSelectors sets proxyProtocol in
// spec.default or, replacing the default for one port, in spec.perPort[].listener: "When set,
// Envoy will expect connections to include the PROXY protocol header."
func kgatewayNeeds(v *view, c *core.Cluster) (need, bool, error) {
	gw := v.gw
	ps, err := kgatewayPolicies(gw, c)
	if err != nil {
		return need{}, false, err
	}
	for _, p := range ps {
		_, byDefault, _ := unstructured.NestedFieldNoCopy(p.Object, "spec", "default", "proxyProtocol")
		perPort := map[int64]bool{}
		list, _, _ := unstructured.NestedSlice(p.Object, "spec", "perPort")
		for _, item := range list {
			m, ok := item.(map[string]any)
			if !ok {
				continue
			}
			port, _ := intOf(m["port"])
			_, on, _ := unstructured.NestedFieldNoCopy(m, "listener", "proxyProtocol")
			perPort[port] = on
		}
		seen := map[int64]bool{}
		var ports []string
		for _, l := range gw.Spec.Listeners {
			port := int64(l.Port)
			if seen[port] {
				continue
			}
			seen[port] = true
			required := byDefault
			if on, ok := perPort[port]; ok {
				required = on
			}
			if required {
				ports = append(ports, fmt.Sprint(port))
			}
		}
		if len(ports) > 0 {
			return need{fact: core.Yes, msg: fmt.Sprintf("ListenerPolicy %s/%s sets proxyProtocol for port %s: kgateway's Envoy requires the header there.", p.GetNamespace(), p.GetName(), strings.Join(ports, ", "))}, true, nil
		}
	}
	return need{}, false, nil
}

// selects reports whether a policy's targetSelectors pick an object of kind (Gateway, or
// ListenerSet for Envoy Gateway) of the policy's namespace with these labels (matchLabels and
// matchExpressions: kgateway's LocalPolicyTargetSelector, Envoy Gateway's TargetSelector,
// api/v1alpha1/policy_helpers.go). A selector that reaches into other namespaces (Envoy
// Gateway's namespaces, with a ReferenceGrant) is not followed. A selector that does not parse
// (an unknown operator, a bad label) is bad input naming the policy and the selector: Envoy
// Gateway selects nothing with it (internal/gatewayapi/helpers.go selectorFromTargetSelector,
// v1.9.1), which is rarely what its author meant.
func selects(gw *gwv1.Gateway, p *unstructured.Unstructured, kind string, objLabels map[string]string) (bool, error) {
	sels, _, _ := unstructured.NestedSlice(p.Object, "spec", "targetSelectors")
	for i, s := range sels {
		m, ok := s.(map[string]any)
		if !ok || m["kind"] != kind || (m["group"] != nil && m["group"] != Group) {
			continue
		}
		bad := func(err error) error {
			return inputError(gw, p.GetKind(), p.GetNamespace(), p.GetName(), field.Invalid(field.NewPath("spec", "targetSelectors").Index(i), field.OmitValueType{}, err.Error()))
		}
		var ls metav1.LabelSelector
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"matchLabels": m["matchLabels"], "matchExpressions": m["matchExpressions"]}, &ls); err != nil {
			return false, bad(err)
		}
		if len(ls.MatchLabels) == 0 && len(ls.MatchExpressions) == 0 {
			continue // an empty selector is not read as "every Gateway"
		}
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			return false, bad(err)
		}
		if sel.Matches(labels.Set(objLabels)) {
			return true, nil
		}
	}
	return false, nil
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

// override is the implementation's own resource that sets a key of the Service's annotations
// or labels after the Gateway's spec.infrastructure, so that a value on the Gateway would
// never win: Envoy Gateway's EnvoyProxy envoyService (copied after the Gateway's), Contour's
// ContourDeployment serviceAnnotations (internal/provisioner/objects/service/service.go,
// DesiredEnvoyService copies them last). kgateway's Helm chart merges the Gateway's
// annotations over GatewayParameters' extraAnnotations (pkg/kgateway/helm/envoy/templates/
// service.yaml), so the Gateway wins there and nothing overrides it.
type override struct {
	key  core.ObjectKey
	path []core.PathElem
	// from → to rewrites the cloud driver's field text (metadata.annotations["k"]).
	from, to string
	// userOwned: the value sits where loopguard cannot write it as a field of its own (a
	// patch in a list): the change is the user's, on key's object.
	userOwned bool
	// also are edits the object needs for path to be valid there.
	also []core.Edit
}

func overrideOf(v *view, meta, key string) (override, bool) {
	switch {
	case v.envoyProxy != nil:
		// Merged Gateways share one Service whose metadata Envoy Gateway takes from whichever
		// Gateway it builds last (internal/gatewayapi/translator.go, InitIRs stores each
		// Gateway's infrastructure under the class's one key): only the class's EnvoyProxy
		// sets it for all of them.
		if _, set := stringMap(envoyServiceOf(v.envoyProxy), meta)[key]; set || v.merged {
			ep := v.envoyProxy
			o := override{key: core.ObjectKey{APIVersion: ep.GetAPIVersion(), Kind: kindEnvoyProxy, Namespace: ep.GetNamespace(), Name: ep.GetName()},
				path: []core.PathElem{{Field: "spec"}, {Field: "provider"}, {Field: "kubernetes"}, {Field: "envoyService"}, {Field: meta}, {Field: key}},
				from: "metadata.", to: "spec.provider.kubernetes.envoyService."}
			if t, _, _ := unstructured.NestedString(ep.Object, "spec", "provider", "type"); t == "" {
				// An EnvoyProxy with only mergeGateways (Envoy Gateway's own example) has no
				// spec.provider, whose type the CRD requires (api/v1alpha1/envoyproxy_types.go,
				// EnvoyProxyProvider): "Kubernetes" is the provider that renders the Service.
				o.also = []core.Edit{{Path: []core.PathElem{{Field: "spec"}, {Field: "provider"}, {Field: "type"}}, Value: "Kubernetes"}}
			}
			return o, true
		}
	case v.impl == NGINXGatewayFabric && meta == "annotations":
		for _, np := range v.nginxProxies {
			if _, set := nginxPatchAnnotations(np)[key]; set {
				// A patch entry is not a field loopguard can own: the user changes it.
				return override{userOwned: true, key: core.ObjectKey{APIVersion: np.GetAPIVersion(), Kind: kindNginxProxy, Namespace: np.GetNamespace(), Name: np.GetName()}}, true
			}
		}
	case v.istio != nil:
		if cm := v.istio.serviceMetaSetter(meta, key); cm != nil {
			// The overlay is YAML inside the ConfigMap's data: not a field loopguard can own.
			// Named is the ConfigMap whose overlay Istio applies last among those that set it.
			return override{userOwned: true, key: core.ObjectKey{APIVersion: "v1", Kind: "ConfigMap", Namespace: cm.Namespace, Name: cm.Name}}, true
		}
	case v.contourDeployment != nil && meta == "annotations":
		if _, set := stringMap(contourPublishing(v.contourDeployment), "serviceAnnotations")[key]; set {
			cd := v.contourDeployment
			return override{key: core.ObjectKey{APIVersion: cd.GetAPIVersion(), Kind: kindContourDeployment, Namespace: cd.GetNamespace(), Name: cd.GetName()},
				path: []core.PathElem{{Field: "spec"}, {Field: "envoy"}, {Field: "networkPublishing"}, {Field: "serviceAnnotations"}, {Field: key}},
				from: "metadata.annotations", to: "spec.envoy.networkPublishing.serviceAnnotations"}, true
		}
	}
	return override{}, false
}

// mergeUnder adds src's entries to dst where dst has none.
func mergeUnder(dst, src map[string]string) map[string]string {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = map[string]string{}
	}
	keys := make([]string, 0, len(src))
	for k := range src {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, ok := dst[k]; !ok {
			dst[k] = src[k]
		}
	}
	return dst
}
