package gateway

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the Gateway API's API group.
const Group = "gateway.networking.k8s.io"

// Implementation names a Gateway API implementation loopguard knows.
type Implementation string

// The implementations whose generated Services loopguard attributes, each read from its
// public source (docs/sources.md#gateway-api).
const (
	ImplementationUnknown Implementation = ""
	EnvoyGateway          Implementation = "envoy-gateway"
	Istio                 Implementation = "istio"
	Cilium                Implementation = "cilium"
	NGINXGatewayFabric    Implementation = "nginx-gateway-fabric"
	Contour               Implementation = "contour"
	KGateway              Implementation = "kgateway"
	Traefik               Implementation = "traefik"
)

// Labels the implementations put on the Services they generate for a Gateway.
const (
	// LabelGatewayName is Gateway API's own label for resources generated for a Gateway
	// (GEP-1762); Istio, NGINX Gateway Fabric, Contour's provisioner and kgateway set it on
	// the Service, which lives in the Gateway's namespace.
	LabelGatewayName = "gateway.networking.k8s.io/gateway-name"
	// Envoy Gateway (internal/gatewayapi/translator.go, OwningGateway*Label): the Service lives
	// in Envoy Gateway's own namespace, so the Gateway's namespace is a label too.
	labelEGOwningName      = "gateway.envoyproxy.io/owning-gateway-name"
	labelEGOwningNamespace = "gateway.envoyproxy.io/owning-gateway-namespace"
	labelEGOwningClass     = "gateway.envoyproxy.io/owning-gatewayclass"
	// Cilium (operator/pkg/gateway-api/gateway_reconcile.go, owningGatewayLabel).
	labelCiliumOwning = "io.cilium.gateway/owning-gateway"
	// Contour's gateway provisioner (internal/provisioner/model/model.go,
	// ContourOwningGatewayNameLabel).
	labelContourOwning = "projectcontour.io/owning-gateway-name"
	// Istio's deployment controller also labels istio.io/gateway-name
	// (manifests/charts/istio-control/istio-discovery/files/kube-gateway.yaml).
	labelIstioGatewayName = "istio.io/gateway-name"
	// kgateway's deployer renders the Service from its Helm chart with the constant label
	// kgateway: kube-gateway (pkg/kgateway/helm/envoy/templates/_helpers.tpl,
	// "kgateway.gateway.constLabels") beside the Gateway's ownerReference and
	// gateway.networking.k8s.io/gateway-name (pkg/deployer/deployer.go,
	// SetNamespaceAndOwnerWithGVK).
	labelKGateway      = "kgateway"
	labelKGatewayValue = "kube-gateway"
)

// controllerNames maps a GatewayClass's spec.controllerName to the implementation.
var controllerNames = map[string]Implementation{
	"gateway.envoyproxy.io/gatewayclass-controller": EnvoyGateway,
	"istio.io/gateway-controller":                   Istio,
	"io.cilium/gateway-controller":                  Cilium,
	"gateway.nginx.org/nginx-gateway-controller":    NGINXGatewayFabric,
	"projectcontour.io/gateway-controller":          Contour,
	"kgateway.dev/kgateway":                         KGateway,
	"traefik.io/gateway-controller":                 Traefik,
}

// ImplementationOf names the implementation behind a GatewayClass controllerName.
// Contour's provisioner names its controller projectcontour.io/gateway-controller; a
// controllerName under a known domain counts as that implementation.
func ImplementationOf(controllerName string) Implementation {
	if impl, ok := controllerNames[controllerName]; ok {
		return impl
	}
	for name, impl := range controllerNames {
		if domain, _, ok := strings.Cut(name, "/"); ok && strings.HasPrefix(controllerName, domain+"/") {
			return impl
		}
	}
	return ImplementationUnknown
}

// String is the implementation's name as people write it.
func (i Implementation) String() string {
	switch i {
	case EnvoyGateway:
		return "Envoy Gateway"
	case Istio:
		return "Istio"
	case Cilium:
		return "Cilium"
	case NGINXGatewayFabric:
		return "NGINX Gateway Fabric"
	case Contour:
		return "Contour"
	case KGateway:
		return "kgateway"
	case Traefik:
		return "Traefik"
	}
	return "an unknown implementation"
}

// Owner is the Gateway a generated Service belongs to, and how that is known.
type Owner struct {
	Namespace, Name string
	// Implementation is known when the marks are that implementation's own.
	Implementation Implementation
	// By says which label or ownerReference attributed the Service.
	By string
}

// OwnerOf attributes a Service to the Gateway whose implementation generated it, from the
// implementation's labels or an ownerReference to a Gateway. ok is false for a Service no
// Gateway generated (a Traefik or a Helm-installed proxy's Service is the chart's, not a
// Gateway's).
func OwnerOf(svc *corev1.Service) (Owner, bool) {
	l := svc.Labels
	if n, ns := l[labelEGOwningName], l[labelEGOwningNamespace]; n != "" && ns != "" {
		return Owner{Namespace: ns, Name: n, Implementation: EnvoyGateway, By: "labels " + labelEGOwningName + ", " + labelEGOwningNamespace}, true
	}
	if n := l[labelCiliumOwning]; n != "" {
		return Owner{Namespace: svc.Namespace, Name: n, Implementation: Cilium, By: "label " + labelCiliumOwning}, true
	}
	if n := l[labelContourOwning]; n != "" {
		return Owner{Namespace: svc.Namespace, Name: n, Implementation: Contour, By: "label " + labelContourOwning}, true
	}
	for _, ref := range svc.OwnerReferences {
		if ref.Kind == "Gateway" && groupOf(ref) == Group {
			o := Owner{Namespace: svc.Namespace, Name: ref.Name, By: "ownerReference Gateway " + ref.Name}
			o.Implementation = implementationByLabels(l, ref.Name)
			return o, true
		}
	}
	if n := l[LabelGatewayName]; n != "" {
		o := Owner{Namespace: svc.Namespace, Name: n, By: "label " + LabelGatewayName}
		o.Implementation = implementationByLabels(l, n)
		return o, true
	}
	// NGINX Gateway Fabric puts the Gateway's name in an annotation of the same key when it is
	// too long for a label value (internal/controller/provisioner/objects.go).
	if n := svc.Annotations[LabelGatewayName]; n != "" {
		return Owner{Namespace: svc.Namespace, Name: n, By: "annotation " + LabelGatewayName}, true
	}
	return Owner{}, false
}

// MergedClassOf reports whether svc is the one Service Envoy Gateway generates for every
// Gateway of a GatewayClass whose EnvoyProxy sets spec.mergeGateways, and names that class:
// such a Service carries the label gateway.envoyproxy.io/owning-gatewayclass instead of the
// owning-gateway labels (internal/gatewayapi/translator.go, buildIR, GatewayClassOwnerLabel,
// v1.9.0).
func MergedClassOf(svc *corev1.Service) (string, bool) {
	class := svc.Labels[labelEGOwningClass]
	if class == "" || svc.Labels[labelEGOwningName] != "" {
		return "", false
	}
	return class, true
}

// implementationByLabels tells Istio and kgateway apart among the implementations that mark
// their Service with an ownerReference or the standard label.
func implementationByLabels(l map[string]string, gateway string) Implementation {
	switch {
	case l[labelIstioGatewayName] == gateway:
		return Istio
	case l[labelKGateway] == labelKGatewayValue:
		return KGateway
	}
	return ImplementationUnknown
}

func groupOf(ref metav1.OwnerReference) string {
	g, _, ok := strings.Cut(ref.APIVersion, "/")
	if !ok {
		return ""
	}
	return g
}

// Resources are the API resources the Gateway layer reads from a live cluster, for a host's
// gatherer (adapters/kube GatherOptions): namespaced ones and cluster-scoped ones. A cluster
// that does not serve one simply has none.
func Resources() (namespaced, clusterScoped []schema.GroupVersionResource) {
	return []schema.GroupVersionResource{
			{Group: Group, Version: "v1", Resource: "gateways"},
			// Standard since Gateway API v1.5 (listenerset.go); not served at v1 before.
			{Group: Group, Version: "v1", Resource: "listenersets"},
			{Group: envoyGatewayGroup, Version: "v1alpha1", Resource: "envoyproxies"},
			{Group: envoyGatewayGroup, Version: "v1alpha1", Resource: "clienttrafficpolicies"},
			{Group: ngfGroup, Version: "v1alpha2", Resource: "nginxproxies"},
			{Group: contourGroup, Version: "v1alpha1", Resource: "contourdeployments"},
			// The ContourConfiguration Contour's provisioner made for each Gateway
			// (contourRuntimeOf).
			{Group: contourGroup, Version: "v1alpha1", Resource: "contourconfigurations"},
			{Group: kgatewayGroup, Version: "v1alpha1", Resource: "gatewayparameters"},
			{Group: kgatewayGroup, Version: "v1alpha1", Resource: "listenerpolicies"},
			// Cilium serves CiliumGatewayClassConfig at v2alpha1 only, namespaced
			// (pkg/k8s/apis/cilium.io/v2alpha1/gatewayclassconfig_types.go).
			{Group: ciliumGroup, Version: "v2alpha1", Resource: "ciliumgatewayclassconfigs"},
		}, []schema.GroupVersionResource{
			{Group: Group, Version: "v1", Resource: "gatewayclasses"},
		}
}

// ConfigMapRef names ConfigMaps a host reads for the Gateway layer: the one called Name in
// Namespace, or, when Name is empty, those of Namespace that LabelSelector selects.
type ConfigMapRef struct {
	Namespace, Name, LabelSelector string
}

// ConfigMaps lists the ConfigMaps the Gateway layer reads for the Gateways among objs besides
// the cloud controllers' in kube-system, which a host reads anyway: for each Gateway of an
// Istio GatewayClass (the class must be among objs), the ConfigMap its
// spec.infrastructure.parametersRef names, in its namespace, and, once, the class defaults in
// Istio's namespace (opts' IstioNamespace), selected by their label
// gateway.istio.io/defaults-for-class. A host reads the named ones that exist and the selected
// ones, and gives them to the dialect with the rest; objs read from one namespace (scan -n)
// are enough, since a Gateway's own ConfigMap is beside it. opts may be nil.
func ConfigMaps(objs []runtime.Object, opts *Options) []ConfigMapRef {
	var o Options
	if opts != nil {
		o = *opts
	}
	o = o.withDefaults()
	istio := map[string]bool{}
	for _, obj := range objs {
		if u, ok := obj.(*unstructured.Unstructured); ok && u.GroupVersionKind().Group == Group && u.GetKind() == "GatewayClass" {
			name, _, _ := unstructured.NestedString(u.Object, "spec", "controllerName")
			if ImplementationOf(name) == Istio {
				istio[u.GetName()] = true
			}
		}
	}
	if len(istio) == 0 {
		return nil
	}
	var out []ConfigMapRef
	seen := map[ConfigMapRef]bool{}
	add := func(r ConfigMapRef) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, obj := range objs {
		if !IsGateway(obj) {
			continue
		}
		gw, err := AsGateway(obj)
		if err != nil || !istio[string(gw.Spec.GatewayClassName)] {
			continue
		}
		add(ConfigMapRef{Namespace: o.IstioNamespace, LabelSelector: istioDefaultsForClass})
		if name, ok := istioParametersRef(gw); ok {
			add(ConfigMapRef{Namespace: gw.Namespace, Name: name})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out
}

// Namespaces lists the namespaces, other than the Gateways' own, whose objects the Gateway
// layer reads for the Gateways among objs: Envoy Gateway's own namespace (opts; it generates
// the Services there) when a GatewayClass is Envoy Gateway's, and every namespace a
// GatewayClass's spec.parametersRef names (an EnvoyProxy, ContourDeployment, NginxProxy or
// GatewayParameters). A host that reads one namespace at a time (a Terraform resource's facts)
// reads these too. Traefik's Service and Pods are wherever its chart installed them, which no
// Gateway object says. opts may be nil.
func Namespaces(objs []runtime.Object, opts *Options) []string {
	egNS := DefaultEnvoyGatewayNamespace
	if opts != nil && opts.EnvoyGatewayNamespace != "" {
		egNS = opts.EnvoyGatewayNamespace
	}
	own := map[string]bool{}
	seen := map[string]bool{}
	var out []string
	add := func(ns string) {
		if ns != "" && !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok || u.GroupVersionKind().Group != Group {
			continue
		}
		switch u.GetKind() {
		case "Gateway":
			own[u.GetNamespace()] = true
		case "GatewayClass":
			name, _, _ := unstructured.NestedString(u.Object, "spec", "controllerName")
			if ImplementationOf(name) == EnvoyGateway {
				add(egNS)
			}
			if ns, _, _ := unstructured.NestedString(u.Object, "spec", "parametersRef", "namespace"); ns != "" {
				add(ns)
			}
		}
	}
	kept := out[:0]
	for _, ns := range out {
		if !own[ns] {
			kept = append(kept, ns)
		}
	}
	sort.Strings(kept)
	return kept
}

// ForGateways keeps, of the objects a host read from one of the namespaces Namespaces named,
// what the Gateway layer reads for the Gateways of namespace gatewayNS: the Services their
// implementation generated for them, those Services' EndpointSlices, and the namespace's custom
// objects (an EnvoyProxy, a ContourDeployment, a TkeServiceConfig beside a generated Service).
// The namespace's other Services, Pods and cluster-wide objects are left out: a host asked
// about one namespace reports that namespace's exposures only, and has the rest already.
func ForGateways(objs []runtime.Object, namespace, gatewayNS string) []runtime.Object {
	return ForGatewaysOf(objs, namespace, gatewayNS, nil)
}

// ForGatewaysOf is ForGateways for a host that has read namespace gatewayNS already (read): it
// also keeps Envoy Gateway's merged Service of a GatewayClass one of gatewayNS's Gateways uses
// (labelled with the class, not with a Gateway; MergedClassOf), which serves those Gateways too.
func ForGatewaysOf(objs []runtime.Object, namespace, gatewayNS string, read []runtime.Object) []runtime.Object {
	classes := map[string]bool{}
	for _, o := range read {
		if u, ok := o.(*unstructured.Unstructured); ok && IsGateway(u) && u.GetNamespace() == gatewayNS {
			if class, _, _ := unstructured.NestedString(u.Object, "spec", "gatewayClassName"); class != "" {
				classes[class] = true
			}
		}
	}
	services := map[string]bool{}
	for _, o := range objs {
		if svc, ok := o.(*corev1.Service); ok && svc.Namespace == namespace {
			if owner, ok := OwnerOf(svc); ok && owner.Namespace == gatewayNS {
				services[svc.Name] = true
			}
			if class, ok := MergedClassOf(svc); ok && classes[class] {
				services[svc.Name] = true
			}
		}
	}
	var out []runtime.Object
	for _, o := range objs {
		switch x := o.(type) {
		case *corev1.Service:
			if x.Namespace == namespace && services[x.Name] {
				out = append(out, o)
			}
		case *discoveryv1.EndpointSlice:
			if x.Namespace == namespace && services[x.Labels[discoveryv1.LabelServiceName]] {
				out = append(out, o)
			}
		case *unstructured.Unstructured:
			if x.GetNamespace() == namespace {
				out = append(out, o)
			}
		}
	}
	return out
}
