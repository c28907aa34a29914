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

// Implementation names a Gateway API implementation loopguard knows; each is declared in its
// unit's file.
type Implementation string

// ImplementationUnknown is an implementation loopguard does not know.
const ImplementationUnknown Implementation = ""

// LabelGatewayName is Gateway API's own label for resources generated for a Gateway (GEP-1762);
// several implementations set it on the Service, which lives in the Gateway's namespace.
const LabelGatewayName = "gateway.networking.k8s.io/gateway-name"

// ImplementationOf names the implementation behind a GatewayClass controllerName. A
// controllerName under the domain of one an implementation claims counts as that
// implementation.
func ImplementationOf(controllerName string) Implementation {
	if u := unitOfController(controllerName); u != nil {
		return u.id()
	}
	return ImplementationUnknown
}

// unitOfController is the unit that claims a GatewayClass controllerName, exactly or by domain.
func unitOfController(controllerName string) unit {
	if u, ok := controllers.exact[controllerName]; ok {
		return u
	}
	for _, d := range controllers.domains {
		if strings.HasPrefix(controllerName, d.prefix) {
			return d.u
		}
	}
	return nil
}

// controllers indexes the units' controllerNames once: every Gateway's evaluation looks its
// class up.
var controllers = func() (ix struct {
	exact   map[string]unit
	domains []struct {
		prefix string
		u      unit
	}
}) {
	ix.exact = map[string]unit{}
	for _, u := range units {
		for _, name := range u.controllerNames() {
			ix.exact[name] = u
			if domain, _, ok := strings.Cut(name, "/"); ok {
				ix.domains = append(ix.domains, struct {
					prefix string
					u      unit
				}{domain + "/", u})
			}
		}
	}
	return ix
}()

// unitOfClass is the unit of a GatewayClass, nil when its controllerName is not known.
func unitOfClass(class *unstructured.Unstructured) unit {
	if class == nil {
		return nil
	}
	name, _, _ := unstructured.NestedString(class.Object, "spec", "controllerName")
	return unitOfController(name)
}

// String is the implementation's name as people write it.
func (i Implementation) String() string {
	if u := unitOf(i); u != nil {
		return u.name()
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
// implementation's own marks, an ownerReference to a Gateway or the standard label. ok is false
// for a Service no Gateway generated (a Traefik or a Helm-installed proxy's Service is the
// chart's, not a Gateway's).
func OwnerOf(svc *corev1.Service) (Owner, bool) {
	for _, u := range units {
		if o, ok := u.ownerByMarks(svc); ok {
			o.Implementation = u.id()
			return o, true
		}
	}
	for _, ref := range svc.OwnerReferences {
		if ref.Kind == "Gateway" && groupOf(ref) == Group {
			o := Owner{Namespace: svc.Namespace, Name: ref.Name, By: "ownerReference Gateway " + ref.Name}
			o.Implementation = claimant(svc, ref.Name)
			return o, true
		}
	}
	if n := svc.Labels[LabelGatewayName]; n != "" {
		o := Owner{Namespace: svc.Namespace, Name: n, By: "label " + LabelGatewayName}
		o.Implementation = claimant(svc, n)
		return o, true
	}
	// The standard key as an annotation: an implementation puts the Gateway's name there when
	// it is too long for a label value.
	if n := svc.Annotations[LabelGatewayName]; n != "" {
		return Owner{Namespace: svc.Namespace, Name: n, By: "annotation " + LabelGatewayName}, true
	}
	return Owner{}, false
}

// claimant tells apart the implementations that mark their Service with an ownerReference or
// the standard label only.
func claimant(svc *corev1.Service, gateway string) Implementation {
	for _, u := range units {
		if u.claims(svc, gateway) {
			return u.id()
		}
	}
	return ImplementationUnknown
}

// classServiceOf reports whether svc is the one Service an implementation generates for every
// Gateway of a GatewayClass (Envoy Gateway's merged Gateways), with the class and the unit.
func classServiceOf(svc *corev1.Service) (class, by string, u unit, ok bool) {
	for _, u := range units {
		if class, by, ok := u.classService(svc); ok {
			return class, by, u, true
		}
	}
	return "", "", nil, false
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
	namespaced = []schema.GroupVersionResource{
		{Group: Group, Version: "v1", Resource: "gateways"},
		// Standard since Gateway API v1.5 (listenerset.go); not served at v1 before.
		{Group: Group, Version: "v1", Resource: "listenersets"},
	}
	for _, u := range units {
		namespaced = append(namespaced, u.resources()...)
	}
	return namespaced, []schema.GroupVersionResource{
		{Group: Group, Version: "v1", Resource: "gatewayclasses"},
	}
}

// ContainerArgs are the arguments of a Pod's container that the Gateway layer reads (an
// implementation's static configuration given as arguments: Traefik's), normalized as
// "--key=value": a host that caches Pods with only what loopguard reads (adapters/controller)
// keeps these as the container's Args and drops its Command. Read alone they say what the
// container's own command and arguments say. nil when nothing of the container is read.
func ContainerArgs(c corev1.Container) []string {
	for _, u := range units {
		if args := u.containerArgs(c); args != nil {
			return args
		}
	}
	return nil
}

// ConfigMapRef names ConfigMaps a host reads for the Gateway layer: the one called Name in
// Namespace, or, when Name is empty, those of Namespace that LabelSelector selects.
type ConfigMapRef struct {
	Namespace, Name, LabelSelector string
}

// ConfigMaps lists the ConfigMaps the Gateway layer reads for the Gateways among objs besides
// the cloud controllers' in kube-system, which a host reads anyway: those each Gateway's unit
// names (the Gateway's class must be among objs; Istio's class defaults and parameters). A
// host reads the named ones that exist and the selected ones, and gives them to the dialect
// with the rest; objs read from one namespace (scan -n) are enough, since a Gateway's own
// ConfigMap is beside it. opts may be nil.
func ConfigMaps(objs []runtime.Object, opts *Options) []ConfigMapRef {
	var o Options
	if opts != nil {
		o = *opts
	}
	o = o.withDefaults()
	classes := map[string]unit{}
	for _, obj := range objs {
		if u, ok := obj.(*unstructured.Unstructured); ok && u.GroupVersionKind().Group == Group && u.GetKind() == "GatewayClass" {
			if un := unitOfClass(u); un != nil {
				classes[u.GetName()] = un
			}
		}
	}
	if len(classes) == 0 {
		return nil
	}
	var out []ConfigMapRef
	seen := map[ConfigMapRef]bool{}
	for _, obj := range objs {
		if !IsGateway(obj) {
			continue
		}
		gw, err := AsGateway(obj)
		if err != nil {
			continue
		}
		un := classes[string(gw.Spec.GatewayClassName)]
		if un == nil {
			continue
		}
		for _, r := range un.configMaps(gw, o) {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
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
// layer reads for the Gateways among objs: those the GatewayClasses' units name (Envoy
// Gateway's own namespace, where it generates the Services), and every namespace a
// GatewayClass's spec.parametersRef names (an implementation's own configuration). A host that reads one namespace at a time (a Terraform resource's facts)
// reads these too. Traefik's Service and Pods are wherever its chart installed them, which no
// Gateway object says. opts may be nil.
func Namespaces(objs []runtime.Object, opts *Options) []string {
	var o Options
	if opts != nil {
		o = *opts
	}
	o = o.withDefaults()
	own := map[string]bool{}
	seen := map[string]bool{}
	var out []string
	add := func(ns string) {
		if ns != "" && !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	for _, obj := range objs {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || u.GroupVersionKind().Group != Group {
			continue
		}
		switch u.GetKind() {
		case "Gateway":
			own[u.GetNamespace()] = true
		case "GatewayClass":
			if un := unitOfClass(u); un != nil {
				for _, ns := range un.namespaces(u, o) {
					add(ns)
				}
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
// also keeps the one Service an implementation generates for every Gateway of a GatewayClass
// one of gatewayNS's Gateways uses (Envoy Gateway's merged Gateways, MergedClassOf), which
// serves those Gateways too.
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
			if class, _, _, ok := classServiceOf(svc); ok && classes[class] {
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
