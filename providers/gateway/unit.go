package gateway

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/loopguard/loopguard/core"
)

// A unit is everything loopguard knows about one Gateway API implementation, in one file of
// this package: how it is recognised (its GatewayClass controllerName, the marks on the Service
// it generates), how each of its settings is read, as the implementation reads it, what its
// proxy then expects from the load balancer, where a fix goes, and the upstream source of each
// fact (file and release). The shared code of the Gateway layer asks the units and names no
// implementation (TestSharedCodeNamesNoImplementation); adding an implementation is one file,
// its tests, and one line in units. A unit embeds base, whose methods say "nothing known", and
// writes only what differs.
type unit interface {
	// id is the implementation's name in loopguard's API.
	id() Implementation
	// name is the implementation's name as people write it.
	name() string
	// controllerNames are the GatewayClass spec.controllerName values the implementation
	// claims; a controllerName under the same domain counts too (ImplementationOf).
	controllerNames() []string
	// defaults fills the options the unit reads with their defaults.
	defaults(o *Options)

	// ownerByMarks attributes a Service by the implementation's own labels or annotations,
	// tried in units' order before the standard marks (an ownerReference to a Gateway, the
	// label gateway.networking.k8s.io/gateway-name).
	ownerByMarks(svc *corev1.Service) (Owner, bool)
	// claims tells, of a Service attributed to Gateway gateway by the standard marks, whether
	// this implementation generated it.
	claims(svc *corev1.Service, gateway string) bool
	// classService reports whether svc is one Service the implementation generates for every
	// Gateway of a GatewayClass, names the class, and says by what (for the report).
	classService(svc *corev1.Service) (class, by string, ok bool)

	// resources are the namespaced API resources of the implementation that a host reads.
	resources() []schema.GroupVersionResource
	// namespaces are the namespaces, besides the Gateways' own, whose objects the unit reads
	// for the Gateways of class.
	namespaces(class *unstructured.Unstructured, o Options) []string
	// configMaps are the ConfigMaps the unit reads for gw besides kube-system's.
	configMaps(gw *gwv1.Gateway, o Options) []ConfigMapRef
	// containerArgs are the arguments of a container the unit reads (an implementation's static
	// configuration), normalized so that the unit reads them alone as it reads the container;
	// nil when the unit reads nothing of it.
	containerArgs(c corev1.Container) []string

	// read finds the implementation's own objects that configure the Gateway and keeps them in
	// v.cfg for the hooks below. It runs once per view, after the Service is known.
	read(v *view, c *core.Cluster, o Options)
	// sharedByClass reports whether, from what read found, the Gateway's Service is the one
	// the implementation generates for every Gateway of its class.
	sharedByClass(v *view) bool
	// service adds to svc, the Service the implementation would generate for the Gateway (the
	// listeners' ports, spec.infrastructure's annotations and labels), the implementation's
	// own name, namespace, marks and settings.
	service(v *view, svc *corev1.Service, o Options)
	// published finds the Service the implementation serves the Gateway from when it generates
	// none per Gateway; by says how it is known.
	published(v *view, c *core.Cluster) (svc *corev1.Service, by string)
	// noService is why the Gateway is not judged when the implementation generates no Service
	// for it and published found none; "" when the implementation generates one.
	noService() string

	// proxyNeeds reads whether the implementation makes the Gateway's proxy expect a PROXY
	// protocol header; ok is false when nothing the unit reads says.
	proxyNeeds(v *view, c *core.Cluster) (n need, ok bool, err error)
	// clientAddress reads whether the implementation is told where the client's address is.
	clientAddress(v *view, c *core.Cluster) (ca clientAddress, ok bool, err error)
	// notes are what else the unit says about the Gateway (a Service shared by the class).
	notes(v *view, c *core.Cluster) []core.Reason

	// override is the implementation's own object that sets a key of the Service's
	// annotations or labels after spec.infrastructure, where the fix then goes.
	override(v *view, meta, key string) (override, bool)
	// ownResource names the implementation's own resource that sets the Service's other fields.
	ownResource(v *view) string
	// expectProxy is how the implementation's proxy is told to expect a PROXY protocol
	// header: the edit the user makes when the load balancer sends one.
	expectProxy() remedy

	// rules are the unit's own rules.
	rules() []core.Rule
	// doc is the unit's row of the users' table (docs/gateway.md#implementations).
	doc() unitDoc
	// readsUnknown: the unit also reads the policies of a Gateway whose implementation is not
	// known (its GatewayClass is not among the inputs), since a policy names its Gateway.
	readsUnknown() bool
}

// units are the implementations loopguard knows, in the order their marks are tried.
var units = []unit{envoyGatewayUnit{}, ciliumUnit{}, contourUnit{}, istioUnit{}, kgatewayUnit{}, nginxGatewayFabricUnit{}, traefikUnit{}}

// unitOf is the unit of an implementation; nil for ImplementationUnknown.
func unitOf(impl Implementation) unit {
	for _, u := range units {
		if u.id() == impl {
			return u
		}
	}
	return nil
}

// base is a unit that knows nothing; units embed it and override what they know.
type base struct{}

func (base) defaults(*Options)                                        {}
func (base) ownerByMarks(*corev1.Service) (Owner, bool)               { return Owner{}, false }
func (base) claims(*corev1.Service, string) bool                      { return false }
func (base) classService(*corev1.Service) (string, string, bool)      { return "", "", false }
func (base) resources() []schema.GroupVersionResource                 { return nil }
func (base) namespaces(*unstructured.Unstructured, Options) []string  { return nil }
func (base) configMaps(*gwv1.Gateway, Options) []ConfigMapRef         { return nil }
func (base) containerArgs(corev1.Container) []string                  { return nil }
func (base) read(*view, *core.Cluster, Options)                       {}
func (base) sharedByClass(*view) bool                                 { return false }
func (base) service(*view, *corev1.Service, Options)                  {}
func (base) published(*view, *core.Cluster) (*corev1.Service, string) { return nil, "" }
func (base) noService() string                                        { return "" }
func (base) proxyNeeds(*view, *core.Cluster) (need, bool, error)      { return need{}, false, nil }
func (base) clientAddress(*view, *core.Cluster) (clientAddress, bool, error) {
	return clientAddress{}, false, nil
}
func (base) notes(*view, *core.Cluster) []core.Reason        { return nil }
func (base) override(*view, string, string) (override, bool) { return override{}, false }
func (base) ownResource(*view) string                        { return "the implementation's own configuration" }
func (base) expectProxy() remedy                             { return remedy{} }
func (base) rules() []core.Rule                              { return nil }
func (base) readsUnknown() bool                              { return false }

// remedy is one edit a unit knows fixes something about its implementation, as data: a stable
// ID, the object it goes on, the field (or annotation or argument) and the value. The report and
// the users' table render it; nothing matches it by its text.
type remedy struct {
	// ID is stable once released: "<implementation>/<what>".
	ID string
	// Object says which object: its kind, and how it relates to the Gateway.
	Object string
	// Field is the field path, annotation key or argument the edit sets.
	Field string
	// Value is what it is set to.
	Value string
}

// String is "set spec.proxyProtocol: {} on a ClientTrafficPolicy that targets the Gateway".
func (r remedy) String() string {
	if r.ID == "" {
		return ""
	}
	return "set " + r.Field + ": " + r.Value + " on " + r.Object
}

// unitDoc is what the users' table says about an implementation, each cell from the unit.
type unitDoc struct {
	// Service: where the generated Service is and what shapes it.
	Service string
	// Expects: in short, what the implementation's proxy then expects from the load balancer.
	Expects string
	// Marks: what names the Service's Gateway.
	Marks string
	// ProxyProtocol: what loopguard reads of the proxy's PROXY protocol.
	ProxyProtocol string
	// ClientAddress: what loopguard reads of where the proxy finds the client address.
	ClientAddress string
	// Fix: where a fix on the Service's annotations goes.
	Fix string
	// Sources: the upstream source of these facts.
	Sources []source
}

// source is where a unit's facts were read: the repository, the release (or commit) and the
// files.
type source struct {
	Repo, Version string
	Files         []string
}
