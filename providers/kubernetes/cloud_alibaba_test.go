package kubernetes

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// TestAlibabaParsers: each setting read as cloud-provider-alibaba-cloud v2.14.0 reads it.
func TestAlibabaParsers(t *testing.T) {
	nlb := func(s *corev1.Service) *corev1.Service { s.Spec.LoadBalancerClass = ptr(alibabaNLBClass); return s }
	// clbv1/listeners.go@v2.14.0: exactly "on"; nlbv2/listeners.go: "on" in any case.
	checkSpellings(t, srcAlibabaProxy, map[string]string{absent: "default", "on": "true", "On": "false", "ON": "false", "off": "false",
		"true": "false", "True": "false", "TRUE": "false", "1": "false", "t": "false", "yes": "false", "": "default", "garbage": "false"},
		func(v string) string { return outcome(alibabaProxy(annotated(annAlibabaProxyProto, v))) })
	checkSpellings(t, srcAlibabaProxy, map[string]string{absent: "default", "on": "true", "On": "true", "ON": "true", "off": "false",
		"true": "false", "True": "false", "TRUE": "false", "1": "false", "t": "false", "yes": "false", "": "default", "garbage": "false"},
		func(v string) string { return outcome(alibabaProxy(nlb(annotated(annAlibabaProxyProto, v)))) })
	// nlbv2/server_groups.go@v2.14.0: "on" in any case; every other non-empty value is off.
	checkSpellings(t, srcAlibabaPreserve, map[string]string{absent: "default", "on": "true", "ON": "true", "off": "false",
		"true": "false", "True": "false", "TRUE": "false", "1": "false", "t": "false", "yes": "false", "": "default", "garbage": "false"},
		func(v string) string { return outcome(alibabaPreserveIP(nlb(annotated(annAlibabaPreserveClient, v)))) })
	// The legacy prefix, and the new key winning over it even when empty.
	legacy := annotated(alibabaLegacyPrefix+alibabaPreserve, "on")
	if on, st := alibabaPreserveIP(legacy); !on || st != valueTaken {
		t.Errorf("legacy key: %v %v", on, st)
	}
	legacy.Annotations[annAlibabaPreserveClient] = ""
	if _, st := alibabaPreserveIP(legacy); st != valueAbsent {
		t.Errorf("an empty new key must win over the legacy one: %v", st)
	}
	// clbv1/listeners.go@v2.14.0: protocol:port, the protocol exactly http, https, tcp or udp.
	checkSpellings(t, srcAlibabaL7, map[string]string{absent: "default", "http:80": "[80] [] true", "https:80": "[] [80] true", "tcp:80": "[] [] false",
		"HTTP:80": "rejected", "true": "rejected", "True": "rejected", "TRUE": "rejected", "1": "rejected", "t": "rejected", "yes": "rejected",
		"": "default", "garbage": "rejected"},
		func(v string) string {
			h, hs, all, st := alibabaL7Ports(annotated(alibabaPrefix+alibabaProtocolPort, v))
			if st != valueTaken {
				return outcome(nil, st)
			}
			return fmt.Sprint(h, " ", hs, " ", all)
		})
}

// TestAlibaba: which reconciler takes the Service, and what each does to the client address.
func TestAlibaba(t *testing.T) {
	for name, tc := range map[string]struct {
		ann    map[string]string
		nlb    bool
		status corev1.LoadBalancerIngress
		snat   core.Fact
		header string
		note   core.Code
	}{
		"CLB: layer 4 passes the client":    {ann: map[string]string{alibabaPrefix + alibabaAddressType: "intranet"}, status: ipVIP, snat: core.No},
		"CLB, legacy prefix, PROXY on":      {ann: map[string]string{alibabaLegacyPrefix + alibabaProxyProtocol: "on"}, status: ipVIP, snat: core.No, header: "v2"},
		"CLB, On is off":                    {ann: map[string]string{annAlibabaProxyProto: "On"}, status: ipVIP, snat: core.No, note: codeValueIgnored},
		"CLB, HTTP listeners on every port": {ann: map[string]string{alibabaPrefix + alibabaProtocolPort: "http:80"}, status: ipVIP, snat: core.Yes},
		// The type annotation needs an alpha gate that is off by default: a CLB.
		"type nlb without the class: a CLB": {ann: map[string]string{annAlibabaLBType: "nlb", annAlibabaPreserveClient: "on"}, status: ipVIP, snat: core.No, note: codeValueIgnored},
		"NLB, preservation true is off":     {ann: map[string]string{annAlibabaPreserveClient: "true"}, nlb: true, status: corev1.LoadBalancerIngress{Hostname: "nlb-x.nlb.aliyuncsslb.com"}, snat: core.Yes},
	} {
		t.Run(name, func(t *testing.T) {
			svc := cloudService("web", tc.ann, "TCP", tc.status)
			if tc.nlb {
				svc.Spec.LoadBalancerClass = ptr(alibabaNLBClass)
			}
			res, err := core.Evaluate(NewDialect(nil), svc, cloudCluster(t, ""), core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			e := &res.Exposure
			if e.LBSourceNAT != tc.snat || (e.Needs.ProxyHeader == core.Yes) != (tc.header != "") || e.Needs.ProxyVersion != tc.header {
				t.Errorf("snat %s header %s %q, want %s %q; reasons %v; notes %v", e.LBSourceNAT, e.Needs.ProxyHeader, e.Needs.ProxyVersion, tc.snat, tc.header, e.Reasons, e.Notes)
			}
			if tc.note != "" && !hasNote(e.Notes, tc.note, "") {
				t.Errorf("no %s note: %v", tc.note, e.Notes)
			}
		})
	}
}

// TestAlibabaAddressType: lower case as written on a CLB, any case on an NLB (v2.14.0).
func TestAlibabaAddressType(t *testing.T) {
	for cls, want := range map[string]map[string]string{
		"": {absent: "unknown", "intranet": "private", "internet": "public", "Intranet": "unknown",
			"true": "unknown", "True": "unknown", "TRUE": "unknown", "1": "unknown", "t": "unknown", "yes": "unknown", "": "unknown", "garbage": "unknown"},
		alibabaNLBClass: {absent: "unknown", "intranet": "private", "internet": "public", "Intranet": "private", "INTERNET": "public",
			"true": "unknown", "True": "unknown", "TRUE": "unknown", "1": "unknown", "t": "unknown", "yes": "unknown", "": "unknown", "garbage": "unknown"},
	} {
		checkSpellings(t, srcAlibabaScope, want, func(v string) string {
			ann := map[string]string{}
			if v != absent {
				ann[alibabaLegacyPrefix+alibabaAddressType] = v
			}
			return scopeOfService(t, ann, cls)
		})
	}
}
