package volcengine

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// Name is the provider name used in ClusterProfiles and output.
const Name = "volcengine"

// The VKE cloud-controller-manager's Service annotations that this dialect reads. Keys and
// values come from seed 003 (ip-mode), Volcengine docs 6460/100304 and the annotation table of
// volcengine/volcengine-cloud-controller-manager docs/usage.md (the rest). Values are
// case-sensitive: the controller compares them literally.
const (
	// AnnotationPrefix starts every VKE CLB Service annotation.
	AnnotationPrefix = "service.beta.kubernetes.io/volcengine-"

	// AnnotationIPMode selects how in-cluster traffic to the CLB address is served:
	// IPModeVIP (the default when absent) or IPModeProxy. It cannot be changed after the
	// Service is created (seed 003, annotation table: 是否支持修改 = 否).
	AnnotationIPMode = "service.beta.kubernetes.io/volcengine-loadbalancer-ip-mode"
	// AnnotationAddressType is AddressTypePublic (the default) or AddressTypePrivate for a CLB
	// the controller creates. Not modifiable.
	AnnotationAddressType = "service.beta.kubernetes.io/volcengine-loadbalancer-address-type"
	// AnnotationLoadBalancerID reuses an existing CLB instead of creating one. Not modifiable.
	AnnotationLoadBalancerID = "service.beta.kubernetes.io/volcengine-loadbalancer-id"
	// AnnotationPassThrough "true" makes the CLB's backends the Pods' ENIs (direct to Pod);
	// "false" (the default) makes them NodePorts.
	AnnotationPassThrough = "service.beta.kubernetes.io/volcengine-loadbalancer-pass-through"
	// AnnotationProxyProtocol is ProxyProtocolStandard or ProxyProtocolOff (the default): the
	// CLB passes the client address to backends in a PROXY protocol header.
	AnnotationProxyProtocol = "service.beta.kubernetes.io/volcengine-loadbalancer-proxy-protocol"
	// AnnotationSubnetID is the subnet a created CLB takes its address from (read only to
	// recognise VKE Services).
	AnnotationSubnetID = "service.beta.kubernetes.io/volcengine-loadbalancer-subnet-id"
)

// Values of the annotations above.
const (
	// IPModeVIP: kube-proxy (or the eBPF dataplane) redirects traffic for the CLB IP:port
	// straight to backend Pods; it never reaches the CLB (seed 003).
	IPModeVIP = "VIP"
	// IPModeProxy: nothing on the node intercepts the CLB address; all traffic goes through
	// the CLB, which forwards it to backend Pods (seed 003).
	IPModeProxy = "Proxy"

	AddressTypePublic  = "PUBLIC"
	AddressTypePrivate = "PRIVATE"

	ProxyProtocolStandard = "standard"
	ProxyProtocolOff      = "off"
)

// LoadBalancerClass is the spec.loadBalancerClass the Volcengine controller serves
// (volcengine/volcengine-cloud-controller-manager docs/usage.md examples). A Service with
// another class belongs to another load-balancer controller.
const LoadBalancerClass = "volcengine.com/clb"

// ipModes are the accepted ip-mode values, in the order error messages list them.
var ipModes = []string{IPModeVIP, IPModeProxy}

// Options tune the dialect. A nil *Options, and the zero value, give the documented behaviour.
type Options struct {
	// CLBs holds what cloud reads said about CLB instances, for facts a manifest does not
	// carry (the address type of a reused CLB, PROXY protocol). Nil means no cloud read.
	CLBs CLBLookup
	// Assumptions changes the inferences that no public source confirms; see unconfirmed.go.
	Assumptions Assumptions
}

// Dialect translates VKE Services into the portable model. It only reads: it never calls a
// cloud API, and it never changes the objects it is given. It is safe for concurrent use.
type Dialect struct {
	opts Options
}

var _ core.Dialect = (*Dialect)(nil)

// NewDialect returns the VKE dialect; opts may be nil.
func NewDialect(opts *Options) *Dialect {
	d := &Dialect{}
	if opts != nil {
		d.opts = *opts
	}
	return d
}

// Name returns "volcengine".
func (d *Dialect) Name() string { return Name }

// ParseIPMode checks an ip-mode annotation value. Only "VIP" and "Proxy" are accepted, with
// that exact case: the controller compares the string literally, so "vip" or "proxy" would not
// select the mode the user meant. The error matches core.ErrInvalid and wraps a *field.Error
// naming the annotation.
func ParseIPMode(s string) (core.Path, error) {
	switch s {
	case IPModeVIP:
		return core.PathVIP, nil
	case IPModeProxy:
		return core.PathProxy, nil
	}
	return core.PathUnknown, &valueError{fe: notSupported(AnnotationIPMode, s, ipModes)}
}

// notSupported is field.NotSupported for an annotation, with a hint when only the case is wrong.
func notSupported(key, value string, valid []string) *field.Error {
	fe := field.NotSupported(dialect.AnnotationPath(key), value, valid)
	t := strings.TrimSpace(value)
	for _, v := range valid {
		if t != v && strings.EqualFold(t, v) {
			fe.Detail += " (values are case-sensitive)"
			break
		}
	}
	return fe
}

// valueError is a bad annotation value outside an object's context.
type valueError struct{ fe *field.Error }

func (e *valueError) Error() string { return e.fe.Error() }

// Is makes errors.Is(err, core.ErrInvalid) true.
func (e *valueError) Is(target error) bool { return target == core.ErrInvalid }

// Unwrap exposes the *field.Error.
func (e *valueError) Unwrap() error { return e.fe }

// Recognizes reports whether an object carries Volcengine's marks: a Service or Ingress with a
// service.beta.kubernetes.io/volcengine- annotation, a Service of the Volcengine
// loadBalancerClass, or a Node with a VKE label (see vkeNodeLabelDomain). Hosts use it to pick a
// dialect when the profile names none.
func Recognizes(obj runtime.Object) bool {
	m, ok := obj.(metav1.Object)
	if !ok {
		return false
	}
	for k := range m.GetAnnotations() {
		if strings.HasPrefix(k, AnnotationPrefix) {
			return true
		}
	}
	switch o := obj.(type) {
	case *corev1.Service:
		return o.Spec.LoadBalancerClass != nil && *o.Spec.LoadBalancerClass == LoadBalancerClass
	case *corev1.Node:
		for k := range o.Labels {
			if isVKENodeLabel(k) {
				return true
			}
		}
	}
	return false
}
