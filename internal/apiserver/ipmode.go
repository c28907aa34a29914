package apiserver

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// IPModeServerVersion is the kube-apiserver whose answers [IPModeCases] records. The test that
// checks the cases against a live server fails on any other version, so that a version bump
// in hack/envtest-assets.sh makes someone look at the cases again instead of trusting them.
const IPModeServerVersion = "v1.37.2"

// IPModeCase is one write of status.loadBalancer.ingress through the status subresource of a
// Service, and what a real kube-apiserver answered.
//
// The cases exist so that loopguard's own validation of ipMode (providers/kubernetes) can be
// tested for agreement with the server without starting one: for every case, the project's
// validator must reject exactly when Want.Causes is not empty, on the same fields with the
// same error types, and its defaulting must produce Want.Stored. This package's tests check
// every case against a live server, so the table is evidence, not belief. A case that
// loopguard's validator answers differently is either a bug there or a case to re-measure
// here; it is never fixed by editing the table alone.
type IPModeCase struct {
	// Name is a short title, usable as a subtest name.
	Name string
	// Why says what the case teaches about ipMode, for someone reading a failure.
	Why string
	// ServiceType is the spec.type of the Service; empty means LoadBalancer.
	ServiceType corev1.ServiceType
	// Ingress is written as status.loadBalancer.ingress. Treat it as read-only: the table is
	// shared by every test that uses it.
	Ingress []corev1.LoadBalancerIngress
	// Want is the server's verdict.
	Want IPModeVerdict
}

// IPModeVerdict is how the server answered a write.
type IPModeVerdict struct {
	// Causes are the field errors of the server's 422 Invalid response, as sorted by
	// [SortCauses]; empty means the write was accepted. The order the server lists them in is
	// not part of the verdict, and neither are the messages, which change between releases.
	Causes []Cause
	// Stored is status.loadBalancer.ingress as the server returned it after an accepted write,
	// with defaults applied; nil when the write was rejected.
	Stored []corev1.LoadBalancerIngress
}

// Accepted reports whether the server accepted the write.
func (v IPModeVerdict) Accepted() bool { return len(v.Causes) == 0 }

// Cause is one field error. Type is a field.ErrorType, whose values are the same strings as
// the metav1.CauseType the server puts in a StatusCause ("FieldValueForbidden", ...), so both
// a field.ErrorList from a validator and a server error compare to it directly. Field is the
// path as the server prints it, e.g. "status.loadBalancer.ingress[0].ipMode".
type Cause struct {
	Type  field.ErrorType
	Field string
}

// CausesOf turns a validator's field.ErrorList into causes, sorted like [IPModeVerdict.Causes].
func CausesOf(errs field.ErrorList) []Cause {
	var cs []Cause
	for _, e := range errs {
		cs = append(cs, Cause{Type: e.Type, Field: e.Field})
	}
	SortCauses(cs)
	return cs
}

// SortCauses sorts causes by field, then type, so that lists from different sources compare
// equal whatever order they were produced in.
func SortCauses(cs []Cause) {
	slices.SortFunc(cs, func(a, b Cause) int {
		return cmp.Or(cmp.Compare(a.Field, b.Field), cmp.Compare(a.Type, b.Type))
	})
}

func ipMode(m corev1.LoadBalancerIPMode) *corev1.LoadBalancerIPMode { return &m }

// Addresses from the documentation ranges (RFC 5737, RFC 3849).
const (
	ipv4A = "203.0.113.10"
	ipv4B = "203.0.113.11"
	ipv4C = "203.0.113.12"
	ipv6A = "2001:db8::10"
	lbDNS = "lb-0123.example.com"
)

func ingressField(i int, child string) string {
	f := field.NewPath("status", "loadBalancer", "ingress").Index(i)
	if child != "" {
		f = f.Child(child)
	}
	return f.String()
}

// IPModeCases is what kube-apiserver [IPModeServerVersion] answered to each shape of
// status.loadBalancer.ingress that matters to ipMode (KEP-1860, docs/sources.md#kep-1860). Every entry
// was observed, not derived; see [IPModeCase] for how to use it.
var IPModeCases = []IPModeCase{
	{
		Name:    "VIP with ip",
		Why:     "the default behaviour written explicitly round-trips unchanged",
		Ingress: []corev1.LoadBalancerIngress{{IP: ipv4A, IPMode: ipMode(corev1.LoadBalancerIPModeVIP)}},
		Want:    IPModeVerdict{Stored: []corev1.LoadBalancerIngress{{IP: ipv4A, IPMode: ipMode(corev1.LoadBalancerIPModeVIP)}}},
	},
	{
		Name:    "Proxy with ip",
		Why:     "Proxy is the remedy that stops kube-proxy intercepting the LB address; the server keeps it",
		Ingress: []corev1.LoadBalancerIngress{{IP: ipv4A, IPMode: ipMode(corev1.LoadBalancerIPModeProxy)}},
		Want:    IPModeVerdict{Stored: []corev1.LoadBalancerIngress{{IP: ipv4A, IPMode: ipMode(corev1.LoadBalancerIPModeProxy)}}},
	},
	{
		Name:    "ip without ipMode is defaulted to VIP",
		Why:     "an unset ipMode is never stored for an ip: reading VIP back does not mean someone chose it",
		Ingress: []corev1.LoadBalancerIngress{{IP: ipv4A}},
		Want:    IPModeVerdict{Stored: []corev1.LoadBalancerIngress{{IP: ipv4A, IPMode: ipMode(corev1.LoadBalancerIPModeVIP)}}},
	},
	{
		Name:    "Proxy with ip and hostname",
		Why:     "an entry may carry both; ipMode applies because ip is set",
		Ingress: []corev1.LoadBalancerIngress{{IP: ipv4A, Hostname: lbDNS, IPMode: ipMode(corev1.LoadBalancerIPModeProxy)}},
		Want:    IPModeVerdict{Stored: []corev1.LoadBalancerIngress{{IP: ipv4A, Hostname: lbDNS, IPMode: ipMode(corev1.LoadBalancerIPModeProxy)}}},
	},
	{
		Name:    "Proxy with IPv6 ip",
		Why:     "ipMode is not IPv4-only",
		Ingress: []corev1.LoadBalancerIngress{{IP: ipv6A, IPMode: ipMode(corev1.LoadBalancerIPModeProxy)}},
		Want:    IPModeVerdict{Stored: []corev1.LoadBalancerIngress{{IP: ipv6A, IPMode: ipMode(corev1.LoadBalancerIPModeProxy)}}},
	},
	{
		Name:    "non-canonical IPv6 ip is stored as written",
		Why:     "the server keeps the spelling (it only warns), so addresses must be compared parsed, not as strings",
		Ingress: []corev1.LoadBalancerIngress{{IP: "2001:0DB8:0::10", IPMode: ipMode(corev1.LoadBalancerIPModeProxy)}},
		Want:    IPModeVerdict{Stored: []corev1.LoadBalancerIngress{{IP: "2001:0DB8:0::10", IPMode: ipMode(corev1.LoadBalancerIPModeProxy)}}},
	},
	{
		Name: "several entries, each defaulted on its own",
		Why:  "modes are per entry: one Service may have a VIP address and a Proxy address",
		Ingress: []corev1.LoadBalancerIngress{
			{IP: ipv4A, IPMode: ipMode(corev1.LoadBalancerIPModeVIP)},
			{IP: ipv4B, IPMode: ipMode(corev1.LoadBalancerIPModeProxy)},
			{IP: ipv4C},
		},
		Want: IPModeVerdict{Stored: []corev1.LoadBalancerIngress{
			{IP: ipv4A, IPMode: ipMode(corev1.LoadBalancerIPModeVIP)},
			{IP: ipv4B, IPMode: ipMode(corev1.LoadBalancerIPModeProxy)},
			{IP: ipv4C, IPMode: ipMode(corev1.LoadBalancerIPModeVIP)},
		}},
	},
	{
		Name:    "hostname only stays without ipMode",
		Why:     "a hostname is never intercepted by kube-proxy, and the server does not default ipMode for it",
		Ingress: []corev1.LoadBalancerIngress{{Hostname: lbDNS}},
		Want:    IPModeVerdict{Stored: []corev1.LoadBalancerIngress{{Hostname: lbDNS}}},
	},
	{
		Name:    "Proxy without ip is forbidden",
		Why:     "a hostname-only entry cannot carry ipMode: the remedy for a hostname LB is not ipMode",
		Ingress: []corev1.LoadBalancerIngress{{Hostname: lbDNS, IPMode: ipMode(corev1.LoadBalancerIPModeProxy)}},
		Want:    IPModeVerdict{Causes: []Cause{{Type: field.ErrorTypeForbidden, Field: ingressField(0, "ipMode")}}},
	},
	{
		Name:    "VIP without anything else is forbidden",
		Why:     "the rule is about ip being empty, not about the mode's value",
		Ingress: []corev1.LoadBalancerIngress{{IPMode: ipMode(corev1.LoadBalancerIPModeVIP)}},
		Want:    IPModeVerdict{Causes: []Cause{{Type: field.ErrorTypeForbidden, Field: ingressField(0, "ipMode")}}},
	},
	{
		Name: "error names the offending entry",
		Why:  "the field path carries the index, so a validator must report per entry",
		Ingress: []corev1.LoadBalancerIngress{
			{IP: ipv4A, IPMode: ipMode(corev1.LoadBalancerIPModeVIP)},
			{Hostname: lbDNS, IPMode: ipMode(corev1.LoadBalancerIPModeProxy)},
		},
		Want: IPModeVerdict{Causes: []Cause{{Type: field.ErrorTypeForbidden, Field: ingressField(1, "ipMode")}}},
	},
	{
		Name:    "unknown ipMode is not supported",
		Why:     "only VIP and Proxy exist",
		Ingress: []corev1.LoadBalancerIngress{{IP: ipv4A, IPMode: ipMode("Passthrough")}},
		Want:    IPModeVerdict{Causes: []Cause{{Type: field.ErrorTypeNotSupported, Field: ingressField(0, "ipMode")}}},
	},
	{
		Name:    "lower-case proxy is not supported",
		Why:     "values are case-sensitive; an annotation value copied in lower case must be mapped, not passed through",
		Ingress: []corev1.LoadBalancerIngress{{IP: ipv4A, IPMode: ipMode("proxy")}},
		Want:    IPModeVerdict{Causes: []Cause{{Type: field.ErrorTypeNotSupported, Field: ingressField(0, "ipMode")}}},
	},
	{
		Name:    "empty ipMode is not defaulted",
		Why:     "defaulting looks at a nil pointer only; a pointer to \"\" is an unsupported value",
		Ingress: []corev1.LoadBalancerIngress{{IP: ipv4A, IPMode: ipMode("")}},
		Want:    IPModeVerdict{Causes: []Cause{{Type: field.ErrorTypeNotSupported, Field: ingressField(0, "ipMode")}}},
	},
	{
		Name:    "hostname that is an IPv4 address is invalid",
		Why:     "an address belongs in ip, where it gets ipMode; a cloud that publishes one as hostname must be translated",
		Ingress: []corev1.LoadBalancerIngress{{Hostname: ipv4A}},
		Want:    IPModeVerdict{Causes: []Cause{{Type: field.ErrorTypeInvalid, Field: ingressField(0, "hostname")}}},
	},
	{
		Name:    "hostname that is an IPv6 address is invalid twice",
		Why:     "it fails both the DNS-name check and the not-an-IP check",
		Ingress: []corev1.LoadBalancerIngress{{Hostname: ipv6A}},
		Want: IPModeVerdict{Causes: []Cause{
			{Type: field.ErrorTypeInvalid, Field: ingressField(0, "hostname")},
			{Type: field.ErrorTypeInvalid, Field: ingressField(0, "hostname")},
		}},
	},
	{
		Name:    "ip that is not an address is invalid",
		Why:     "ip is checked before ipMode, and a bad ip does not also make ipMode forbidden",
		Ingress: []corev1.LoadBalancerIngress{{IP: lbDNS, IPMode: ipMode(corev1.LoadBalancerIPModeProxy)}},
		Want:    IPModeVerdict{Causes: []Cause{{Type: field.ErrorTypeInvalid, Field: ingressField(0, "ip")}}},
	},
	{
		Name:    "IPv4 ip with leading zeros is invalid",
		Why:     "StrictIPCIDRValidation (beta, on since 1.36) rejects new non-canonical IPv4 spellings",
		Ingress: []corev1.LoadBalancerIngress{{IP: "203.0.113.010", IPMode: ipMode(corev1.LoadBalancerIPModeVIP)}},
		Want:    IPModeVerdict{Causes: []Cause{{Type: field.ErrorTypeInvalid, Field: ingressField(0, "ip")}}},
	},
	{
		Name:        "ingress on a ClusterIP Service is forbidden",
		Why:         "only LoadBalancer Services have an LB address to set a mode for; the entries are not looked at",
		ServiceType: corev1.ServiceTypeClusterIP,
		Ingress:     []corev1.LoadBalancerIngress{{IP: ipv4A, IPMode: ipMode(corev1.LoadBalancerIPModeProxy)}},
		Want:        IPModeVerdict{Causes: []Cause{{Type: field.ErrorTypeForbidden, Field: field.NewPath("status", "loadBalancer", "ingress").String()}}},
	},
}
