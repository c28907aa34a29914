package gateway

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loopguard/loopguard/core"
)

// Contour's gateway provisioner (github.com/projectcontour/contour), read at v1.33.6: it runs a
// Contour and an Envoy per Gateway, generates the Envoy Service envoy-<gateway> from the
// Gateway and its class's ContourDeployment, and the provisioned Contour runs with the
// ContourConfiguration contourconfig-<gateway>, made from the ContourDeployment's
// runtimeSettings.

// Contour is Contour's gateway provisioner.
const Contour Implementation = "contour"

const (
	// cmd/contour/gatewayprovisioner.go gatewayControllerName.
	contourController        = "projectcontour.io/gateway-controller"
	contourGroup             = "projectcontour.io"
	kindContourDeployment    = "ContourDeployment"
	kindContourConfiguration = "ContourConfiguration"
	// internal/provisioner/model/model.go ContourOwningGatewayNameLabel.
	labelContourOwning = "projectcontour.io/owning-gateway-name"
	// contourConfigPrefix starts the name of the ContourConfiguration the provisioner makes for
	// a Gateway (internal/provisioner/model/names.go ContourConfigurationName).
	contourConfigPrefix = "contourconfig-"
)

type contourUnit struct{ base }

// contourConfig is what the unit read for a Gateway: its class's ContourDeployment, when known.
type contourConfig struct {
	deployment *unstructured.Unstructured
}

func (contourUnit) id() Implementation        { return Contour }
func (contourUnit) name() string              { return "Contour" }
func (contourUnit) controllerNames() []string { return []string{contourController} }

func (contourUnit) ownerByMarks(svc *corev1.Service) (Owner, bool) {
	if n := svc.Labels[labelContourOwning]; n != "" {
		return Owner{Namespace: svc.Namespace, Name: n, By: "label " + labelContourOwning}, true
	}
	return Owner{}, false
}

func (contourUnit) resources() []schema.GroupVersionResource {
	return []schema.GroupVersionResource{
		{Group: contourGroup, Version: "v1alpha1", Resource: "contourdeployments"},
		// The ContourConfiguration the provisioner made for each Gateway (contourRuntimeOf).
		{Group: contourGroup, Version: "v1alpha1", Resource: "contourconfigurations"},
	}
}

func (contourUnit) read(v *view, c *core.Cluster, _ Options) {
	v.cfg = contourConfig{deployment: contourDeploymentOf(v, c)}
}

func contourDeployment(v *view) *unstructured.Unstructured {
	cfg, _ := v.cfg.(contourConfig)
	return cfg.deployment
}

// service: internal/provisioner/model/model.go: Default publishes Envoy with a LoadBalancer
// Service, externalTrafficPolicy Local; the class's ContourDeployment
// spec.envoy.networkPublishing sets type, externalTrafficPolicy and serviceAnnotations, copied
// over the Gateway's (internal/provisioner/controller/gateway.go,
// internal/provisioner/objects/service/service.go DesiredEnvoyService).
func (contourUnit) service(v *view, svc *corev1.Service, _ Options) {
	svc.Name = "envoy-" + v.gw.Name
	svc.Labels[labelContourOwning] = v.gw.Name
	svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	if cd := contourDeployment(v); cd != nil {
		np := contourPublishing(cd)
		if t, ok := contourServiceTypes[fmt.Sprint(np["type"])]; ok {
			svc.Spec.Type = t
		}
		if p, ok, _ := unstructured.NestedString(np, "externalTrafficPolicy"); ok && p != "" {
			svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicy(p)
		}
		for k, val := range stringMap(np, "serviceAnnotations") {
			if svc.Annotations == nil {
				svc.Annotations = map[string]string{}
			}
			svc.Annotations[k] = val
		}
	}
}

// override: the ContourDeployment's serviceAnnotations are copied last
// (internal/provisioner/objects/service/service.go, DesiredEnvoyService).
func (contourUnit) override(v *view, meta, key string) (override, bool) {
	cd := contourDeployment(v)
	if cd == nil || meta != "annotations" {
		return override{}, false
	}
	if _, set := stringMap(contourPublishing(cd), "serviceAnnotations")[key]; !set {
		return override{}, false
	}
	return override{key: core.ObjectKey{APIVersion: cd.GetAPIVersion(), Kind: kindContourDeployment, Namespace: cd.GetNamespace(), Name: cd.GetName()},
		path: []core.PathElem{{Field: "spec"}, {Field: "envoy"}, {Field: "networkPublishing"}, {Field: "serviceAnnotations"}, {Field: key}}}, true
}

func (contourUnit) ownResource(*view) string {
	return "the ContourDeployment the GatewayClass's spec.parametersRef names (spec.envoy.networkPublishing)"
}

func (contourUnit) expectProxy() remedy {
	return remedy{ID: "contour/use-proxy-protocol", Object: "the ContourDeployment the GatewayClass's spec.parametersRef names (and the Gateway's ContourConfiguration contourconfig-<gateway>, which the provisioner made from it)", Field: "spec.runtimeSettings.envoy.listener.useProxyProtocol", Value: "true"}
}

func (contourUnit) doc() unitDoc {
	return unitDoc{
		Expects:       "a PROXY protocol header on every listener with `useProxyProtocol`; the client address from X-Forwarded-For with `numTrustedHops`",
		Service:       "the Gateway's namespace, `envoy-<name>`, `externalTrafficPolicy: Local` by default; type, `externalTrafficPolicy` and annotations from the class's ContourDeployment `spec.envoy.networkPublishing`",
		Marks:         "label `projectcontour.io/owning-gateway-name`",
		ProxyProtocol: "`envoy.listener.useProxyProtocol: true` (Envoy's `proxy_protocol` filter on every listener, which refuses a connection without the header) in the ContourConfiguration the gateway provisioner made for the Gateway (`contourconfig-<gateway>` in its namespace), which is what the provisioned Contour reads, when it is among the inputs; else in the class's ContourDeployment `spec.runtimeSettings`, which the provisioner copies into that ContourConfiguration when it creates it and never again (`EnsureContourConfig`), so a change of the ContourDeployment afterwards is not what Contour runs with. A value that is not a bool is an error naming the object (the CRD's schema refuses it)",
		ClientAddress: "`envoy.network.numTrustedHops` above 0 (Envoy's `xff_num_trusted_hops` on every HTTP listener: the client address is taken from X-Forwarded-For set by that many proxies in front), a uint32, read where its `useProxyProtocol` is",
		Fix:           "`spec.infrastructure.annotations` / `labels` of the Gateway; an annotation the class's ContourDeployment `spec.envoy.networkPublishing.serviceAnnotations` also sets (copied last) goes there",
		Sources: []source{{Repo: "projectcontour/contour", Version: "v1.33.6", Files: []string{
			"internal/provisioner/model/model.go", "internal/provisioner/model/names.go",
			"internal/provisioner/objects/service/service.go", "internal/provisioner/objects/contourconfig/contourconfig.go",
			"apis/projectcontour/v1alpha1/contourconfig.go", "cmd/contour/serve.go", "internal/xdscache/v3/listener.go"}}},
	}
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

func contourRuntimeOf(v *view, c *core.Cluster) (contourRuntime, bool) {
	if c != nil {
		if cc := c.Custom(contourGroup, kindContourConfiguration, v.gw.Namespace, contourConfigPrefix+v.gw.Name); cc != nil {
			return contourRuntime{obj: cc, kind: kindContourConfiguration, at: []string{"spec"}}, true
		}
	}
	if cd := contourDeployment(v); cd != nil {
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

// proxyNeeds: envoy.listener.useProxyProtocol of the Gateway's Contour configuration
// (contourRuntime): "Use PROXY protocol for all listeners"
// (apis/projectcontour/v1alpha1/contourconfig.go); Contour then puts Envoy's proxy_protocol
// listener filter with its defaults on every listener (internal/xdscache/v3/listener.go,
// internal/envoy/v3/listener.go ProxyProtocol), which refuses a connection without the header.
//
// The ContourConfiguration, or the ContourDeployment it is made from, is the provisioner's only
// source of that setting, so when the class names none, or the one loopguard reads leaves it
// off, Envoy reads no header.
func (contourUnit) proxyNeeds(v *view, c *core.Cluster) (need, bool, error) {
	rt, ok := contourRuntimeOf(v, c)
	if !ok {
		if v.class != nil && parametersNamed(v.gw, v.class, contourGroup, kindContourDeployment) == 0 {
			return need{fact: core.No, msg: "The GatewayClass names no ContourDeployment: Contour's Envoy reads no PROXY header (useProxyProtocol is off by default)."}, true, nil
		}
		return need{}, false, nil
	}
	// A *bool (apis/projectcontour/v1alpha1/contourconfig.go): null is unset, Contour's default
	// false (OverlayOnDefaults); another type is refused by the CRD's schema.
	val, path, set := rt.field("envoy", "listener", "useProxyProtocol")
	on, isBool := val.(bool)
	if set && val != nil && !isBool {
		return need{}, false, inputError(v.gw, rt.kind, rt.obj.GetNamespace(), rt.obj.GetName(), field.Invalid(field.NewPath(path), val, "must be true or false"))
	}
	if on {
		return need{fact: core.Yes, msg: fmt.Sprintf("%s sets %s: true: Contour's Envoy requires the header on every listener.", rt, path)}, true, nil
	}
	return need{fact: core.No, msg: fmt.Sprintf("%s does not set %s: Contour's Envoy reads no PROXY header.", rt, path)}, true, nil
}

// clientAddress: envoy.network.numTrustedHops of the Gateway's Contour configuration
// (contourRuntime), NetworkParameters.XffNumTrustedHops, "the number of additional ingress
// proxy hops from the right side of the x-forwarded-for HTTP header to trust when determining
// the origin client's IP address" (apis/projectcontour/v1alpha1/contourconfig.go, a uint32,
// Contour's default 0), set as the connection manager's xff_num_trusted_hops on every HTTP
// listener (internal/xdscache/v3/listener.go): kgateway's xffNumTrustedHops, in Contour.
func (contourUnit) clientAddress(v *view, c *core.Cluster) (clientAddress, bool, error) {
	rt, ok := contourRuntimeOf(v, c)
	if !ok {
		return clientAddress{}, false, nil
	}
	val, path, set := rt.field("envoy", "network", "numTrustedHops")
	if !set || val == nil {
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

// ContourConfigurationGateway is the Gateway whose provisioned Contour reads a
// ContourConfiguration: Contour's gateway provisioner names it contourconfig-<gateway> in the
// Gateway's namespace (internal/provisioner/model/names.go ContourConfigurationName, v1.33.6).
func ContourConfigurationGateway(cc metav1.Object) (types.NamespacedName, bool) {
	name, ok := strings.CutPrefix(cc.GetName(), contourConfigPrefix)
	if !ok || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: cc.GetNamespace(), Name: name}, true
}
