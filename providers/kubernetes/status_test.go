package kubernetes

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func mode(m string) *corev1.LoadBalancerIPMode {
	v := corev1.LoadBalancerIPMode(m)
	return &v
}

// fieldErr is the part of a field.Error a real API server reports in a 422's causes (type,
// field) plus the detail, which is the message without the value.
type fieldErr struct {
	Type   field.ErrorType
	Field  string
	Detail string
}

func simplify(errs field.ErrorList) []fieldErr {
	var out []fieldErr
	for _, e := range errs {
		out = append(out, fieldErr{e.Type, e.Field, e.Detail})
	}
	return out
}

// The cases of kube-apiserver v1.37.2's TestValidateLoadBalancerStatus, as the server sees
// them after defaulting, plus hostname checks.
func TestValidateIngressStatus(t *testing.T) {
	const p = "status.loadBalancer.ingress"
	cases := map[string]struct {
		reason string
		ing    []corev1.LoadBalancerIngress
		old    []corev1.LoadBalancerIngress
		want   []fieldErr
	}{
		"ValidVIP": {
			reason: "ip with ipMode VIP is accepted.",
			ing:    []corev1.LoadBalancerIngress{{IP: "1.2.3.4", IPMode: mode("VIP")}},
		},
		"ValidProxy": {
			reason: "ip with ipMode Proxy is accepted.",
			ing:    []corev1.LoadBalancerIngress{{IP: "1.2.3.4", IPMode: mode("Proxy")}},
		},
		"IPWithoutIPModeIsDefaulted": {
			reason: "The server defaults ipMode to VIP before validating, so the internal Required error never reaches a client.",
			ing:    []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}},
		},
		"HostnameOnly": {
			reason: "A DNS name without ip or ipMode is accepted.",
			ing:    []corev1.LoadBalancerIngress{{Hostname: "a1b2.elb.us-east-1.amazonaws.com"}},
		},
		"IPv6": {
			reason: "A canonical IPv6 address is accepted.",
			ing:    []corev1.LoadBalancerIngress{{IP: "2001:db8::1", IPMode: mode("Proxy")}},
		},
		"IPModeWithoutIP": {
			reason: "ipMode without ip is Forbidden.",
			ing:    []corev1.LoadBalancerIngress{{IPMode: mode("Proxy")}},
			want:   []fieldErr{{field.ErrorTypeForbidden, p + "[0].ipMode", "may not be specified when `ip` is not set"}},
		},
		"IPModeWithHostnameOnly": {
			reason: "ipMode with a hostname and no ip is still Forbidden.",
			ing:    []corev1.LoadBalancerIngress{{Hostname: "lb.example.com", IPMode: mode("VIP")}},
			want:   []fieldErr{{field.ErrorTypeForbidden, p + "[0].ipMode", "may not be specified when `ip` is not set"}},
		},
		"UnknownIPMode": {
			reason: "Only VIP and Proxy are supported, case-sensitively.",
			ing:    []corev1.LoadBalancerIngress{{IP: "1.2.3.4", IPMode: mode("vip")}},
			want:   []fieldErr{{field.ErrorTypeNotSupported, p + "[0].ipMode", `supported values: "Proxy", "VIP"`}},
		},
		"EmptyIPMode": {
			reason: "An empty ipMode is not defaulted (only a missing one is) and is not supported.",
			ing:    []corev1.LoadBalancerIngress{{IP: "1.2.3.4", IPMode: mode("")}},
			want:   []fieldErr{{field.ErrorTypeNotSupported, p + "[0].ipMode", `supported values: "Proxy", "VIP"`}},
		},
		"NotAnIP": {
			reason: "ip must parse as an IP.",
			ing:    []corev1.LoadBalancerIngress{{IP: "lb.example.com", IPMode: mode("VIP")}},
			want:   []fieldErr{{field.ErrorTypeInvalid, p + "[0].ip", "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"}},
		},
		"LeadingZeros": {
			reason: "StrictIPCIDRValidation (on since 1.36) rejects leading zeros.",
			ing:    []corev1.LoadBalancerIngress{{IP: "001.002.003.004", IPMode: mode("VIP")}},
			want:   []fieldErr{{field.ErrorTypeInvalid, p + "[0].ip", "must not have leading 0s"}},
		},
		"IPv4MappedIPv6": {
			reason: "StrictIPCIDRValidation rejects IPv4-mapped IPv6 addresses.",
			ing:    []corev1.LoadBalancerIngress{{IP: "::ffff:1.2.3.4", IPMode: mode("VIP")}},
			want:   []fieldErr{{field.ErrorTypeInvalid, p + "[0].ip", "must not be an IPv4-mapped IPv6 address"}},
		},
		"InvalidIPIgnoredOnUpdate": {
			reason: "An ip already in the old status is accepted even if strict validation rejects it.",
			old:    []corev1.LoadBalancerIngress{{IP: "1.2.3.04", IPMode: mode("VIP")}},
			ing:    []corev1.LoadBalancerIngress{{IP: "1.2.3.04", IPMode: mode("VIP")}, {IP: "5.6.7.8", IPMode: mode("VIP")}},
		},
		"InvalidIPNotInOldStatus": {
			reason: "Only the old status's own IPs are grandfathered.",
			old:    []corev1.LoadBalancerIngress{{IP: "1.2.3.04", IPMode: mode("VIP")}},
			ing:    []corev1.LoadBalancerIngress{{IP: "5.6.7.08", IPMode: mode("VIP")}},
			want:   []fieldErr{{field.ErrorTypeInvalid, p + "[0].ip", "must not have leading 0s"}},
		},
		"HostnameIsAnIP": {
			reason: "hostname must be a DNS name, not an IP address.",
			ing:    []corev1.LoadBalancerIngress{{Hostname: "10.0.0.8"}},
			want:   []fieldErr{{field.ErrorTypeInvalid, p + "[0].hostname", "must be a DNS name, not an IP address"}},
		},
		"HostnameIsASloppyIP": {
			reason: "The server parses hostnames with ParseIPSloppy, so leading zeros still make an IP.",
			ing:    []corev1.LoadBalancerIngress{{Hostname: "010.000.000.008"}},
			want:   []fieldErr{{field.ErrorTypeInvalid, p + "[0].hostname", "must be a DNS name, not an IP address"}},
		},
		"HostnameNotDNS1123": {
			reason: "hostname must be a lower-case RFC 1123 subdomain.",
			ing:    []corev1.LoadBalancerIngress{{Hostname: "LB_1.example.com"}},
			want: []fieldErr{{field.ErrorTypeInvalid, p + "[0].hostname",
				"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"}},
		},
		"HostnameTooLong": {
			reason: "hostname is at most 253 characters.",
			ing:    []corev1.LoadBalancerIngress{{Hostname: strings.Repeat("a.", 127)}},
			want: []fieldErr{
				{field.ErrorTypeInvalid, p + "[0].hostname", "must be no more than 253 characters"},
				{field.ErrorTypeInvalid, p + "[0].hostname", "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"},
			},
		},
		"EveryFieldOfEveryEntry": {
			reason: "Errors come in entry order, ip then ipMode then hostname, each under its index.",
			ing: []corev1.LoadBalancerIngress{
				{IP: "1.2.3.4", IPMode: mode("VIP")},
				{IP: "x", IPMode: mode("Direct"), Hostname: "1.2.3.4"},
			},
			want: []fieldErr{
				{field.ErrorTypeInvalid, p + "[1].ip", "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"},
				{field.ErrorTypeNotSupported, p + "[1].ipMode", `supported values: "Proxy", "VIP"`},
				{field.ErrorTypeInvalid, p + "[1].hostname", "must be a DNS name, not an IP address"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := append([]corev1.LoadBalancerIngress(nil), tc.ing...)
			var got field.ErrorList
			if tc.old != nil {
				got = ValidateIngressStatusUpdate(IngressStatusPath(), tc.ing, tc.old)
			} else {
				got = ValidateIngressStatus(IngressStatusPath(), tc.ing)
			}
			if diff := cmp.Diff(tc.want, simplify(got)); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
			if tc.old == nil && len(tc.want) > 0 && obviouslyValid(tc.ing) {
				t.Error("the fast check passes a status the validator rejects")
			}
			if !cmp.Equal(before, tc.ing) {
				t.Error("validation modified its input")
			}
			for _, fe := range got {
				if strings.HasSuffix(fe.Field, ".ip") && fe.Origin != "format=ip-sloppy" {
					t.Errorf("%s: origin %q, want the server's format=ip-sloppy", fe.Field, fe.Origin)
				}
			}
		})
	}
}

func TestValidateIngressStatusMessages(t *testing.T) {
	// The full messages a client sees in the 422's causes.
	got := ValidateIngressStatus(IngressStatusPath(), []corev1.LoadBalancerIngress{
		{IPMode: mode("Proxy")},
		{IP: "1.2.3.4", IPMode: mode("dummy")},
	})
	want := []string{
		"status.loadBalancer.ingress[0].ipMode: Forbidden: may not be specified when `ip` is not set",
		`status.loadBalancer.ingress[1].ipMode: Unsupported value: "dummy": supported values: "Proxy", "VIP"`,
	}
	var msgs []string
	for _, e := range got {
		msgs = append(msgs, e.Error())
	}
	if diff := cmp.Diff(want, msgs); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
	if got[1].BadValue != corev1.LoadBalancerIPMode("dummy") {
		t.Errorf("BadValue = %#v, want the dereferenced ipMode", got[1].BadValue)
	}
}

func TestValidateServiceStatus(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}
	want := []fieldErr{{field.ErrorTypeForbidden, "status.loadBalancer.ingress", "may only be used when `spec.type` is 'LoadBalancer'"}}
	if diff := cmp.Diff(want, simplify(ValidateServiceStatus(svc, nil))); diff != "" {
		t.Errorf("ClusterIP with ingress: -want +got:\n%s", diff)
	}
	svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	old := svc.DeepCopy()
	old.Status.LoadBalancer.Ingress[0].IP = "01.2.3.4"
	svc.Status.LoadBalancer.Ingress[0].IP = "01.2.3.4"
	if errs := ValidateServiceStatus(svc, old); len(errs) != 0 {
		t.Errorf("grandfathered ip: %v", errs)
	}
	if errs := ValidateServiceStatus(svc, nil); len(errs) != 1 {
		t.Errorf("new non-canonical ip: %v, want one error", errs)
	}
}

func TestDefaultIngressStatus(t *testing.T) {
	in := []corev1.LoadBalancerIngress{
		{IP: "10.0.0.1"},
		{IP: "10.0.0.2", IPMode: mode("Proxy")},
		{Hostname: "lb.example.com"},
		{IP: "10.0.0.3", Ports: []corev1.PortStatus{{Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	before := append([]corev1.LoadBalancerIngress(nil), in...)
	got := DefaultIngressStatus(in)
	want := []corev1.LoadBalancerIngress{
		{IP: "10.0.0.1", IPMode: mode("VIP")},
		{IP: "10.0.0.2", IPMode: mode("Proxy")},
		{Hostname: "lb.example.com"},
		{IP: "10.0.0.3", IPMode: mode("VIP"), Ports: []corev1.PortStatus{{Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
	if !cmp.Equal(before, in) || in[0].IPMode != nil {
		t.Error("DefaultIngressStatus modified its input")
	}
	got[1].Ports = append(got[1].Ports, corev1.PortStatus{Port: 1})
	*got[1].IPMode = "VIP"
	if *in[1].IPMode != "Proxy" {
		t.Error("the copy shares ipMode with the input")
	}
	if DefaultIngressStatus(nil) != nil {
		t.Error("nil in, non-nil out")
	}
}
