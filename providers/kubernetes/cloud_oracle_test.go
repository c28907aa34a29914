package kubernetes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// TestOracleParsers: each setting read as oci-cloud-controller-manager v1.35.0 reads it.
func TestOracleParsers(t *testing.T) {
	nlb := func(key, v string, etp corev1.ServiceExternalTrafficPolicy) *corev1.Service {
		s := annotated(key, v)
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[annOCILBType] = ociNLB
		s.Spec.ExternalTrafficPolicy = etp
		return s
	}
	// getPreserveSource@v1.35.0: strconv.ParseBool with Local, true when absent.
	checkSpellings(t, srcOCIPreserve, map[string]string{absent: "default", "true": "true", "True": "true", "TRUE": "true", "1": "true", "t": "true",
		"false": "false", "yes": "rejected", "": "rejected", "garbage": "rejected"},
		func(v string) string {
			return outcome(ociPreserve(nlb(annOCINLBPreserveSource, v, corev1.ServiceExternalTrafficPolicyLocal)))
		})
	// With Cluster the annotation is an error whatever its value.
	checkSpellings(t, srcOCIPreserve, map[string]string{absent: "default", "true": "rejected", "True": "rejected", "TRUE": "rejected", "1": "rejected",
		"t": "rejected", "false": "rejected", "yes": "rejected", "": "rejected", "garbage": "rejected"},
		func(v string) string {
			return outcome(ociPreserve(nlb(annOCINLBPreserveSource, v, corev1.ServiceExternalTrafficPolicyCluster)))
		})
	checkSpellings(t, srcOCIIPMode, map[string]string{absent: "default", "proxy": "Proxy", "Proxy": "Proxy", "VIP": "VIP", "vip": "VIP",
		"true": "rejected", "True": "rejected", "TRUE": "rejected", "1": "rejected", "t": "rejected", "yes": "rejected", "": "rejected", "garbage": "rejected"},
		func(v string) string { return outcome(ociIPMode(annotated(annOCIIngressIPMode, v))) })
	checkSpellings(t, srcOCIPPv2, map[string]string{absent: "default", "true": "true", "True": "true", "TRUE": "true", "false": "false",
		"1": "ignored", "t": "ignored", "yes": "ignored", "": "ignored", "garbage": "ignored"},
		func(v string) string { return outcome(ociPPv2(annotated(annOCINLBProxyV2, v))) })
	checkSpellings(t, srcOCIPPVersion, map[string]string{absent: "default", "1": "1", "2": "2", " 2": "rejected",
		"true": "rejected", "True": "rejected", "TRUE": "rejected", "t": "rejected", "yes": "rejected", "": "rejected", "garbage": "rejected"},
		func(v string) string { return outcome(ociPPVersion(annotated(annOCIProxyProtocolVersion, v))) })
	checkSpellings(t, srcOCIType, map[string]string{absent: "lb", "nlb": "nlb", "NLB": "nlb", "lb": "lb",
		"true": "lb", "True": "lb", "TRUE": "lb", "1": "lb", "t": "lb", "yes": "lb", "": "lb", "garbage": "lb"},
		func(v string) string { return ociType(annotated(annOCILBType, v)) })
}

// TestOracle: the NLB keeps the client address only with Local and exactly "nlb"; its fix.
func TestOracle(t *testing.T) {
	proxy := corev1.LoadBalancerIPModeProxy
	for name, tc := range map[string]struct {
		ann    map[string]string
		etp    corev1.ServiceExternalTrafficPolicy
		snat   core.Fact
		remedy core.Remedy
		note   core.Code
	}{
		// Loops through the NLB: ingress-ip-mode VIP ranks first, preservation off is offered.
		"NLB, Local, preservation by default": {ann: map[string]string{annOCILBType: "nlb", annOCIIngressIPMode: "proxy"},
			etp: corev1.ServiceExternalTrafficPolicyLocal, snat: core.No, remedy: core.InterceptVIP},
		"NLB, Cluster: the NLB's address": {ann: map[string]string{annOCILBType: "nlb", annOCIIngressIPMode: "proxy"}, snat: core.Yes, remedy: core.RemedyNone},
		// getPreserveSource compares the raw type: "NLB" makes an NLB without preservation.
		"NLB in capitals, Local: no preservation": {ann: map[string]string{annOCILBType: "NLB", annOCIIngressIPMode: "proxy"},
			etp: corev1.ServiceExternalTrafficPolicyLocal, snat: core.Yes, remedy: core.RemedyNone},
		"NLB, Cluster, is-preserve-source set: refused": {ann: map[string]string{annOCILBType: "nlb", annOCINLBPreserveSource: "true", annOCIIngressIPMode: "proxy"},
			snat: core.Unknown, note: codeValueRejected},
		"LB: a proxy":                      {ann: map[string]string{annOCIIngressIPMode: "Proxy"}, snat: core.Yes, remedy: core.RemedyNone},
		"an ipMode the controller refuses": {ann: map[string]string{annOCIIngressIPMode: "garbage"}, snat: core.Yes, note: codeValueRejected},
	} {
		t.Run(name, func(t *testing.T) {
			svc := cloudService("web", tc.ann, "TCP", corev1.LoadBalancerIngress{IP: "10.0.0.20", IPMode: &proxy})
			svc.Spec.ExternalTrafficPolicy = tc.etp
			res, err := core.Evaluate(NewDialect(nil), svc, cloudCluster(t, "oci://"), core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			e := &res.Exposure
			if e.LBSourceNAT != tc.snat || tc.remedy != "" && res.Decision.Remedy != tc.remedy {
				t.Errorf("snat %s remedy %s, want %s %s; reasons %v; notes %v", e.LBSourceNAT, res.Decision.Remedy, tc.snat, tc.remedy, e.Reasons, e.Notes)
			}
			if tc.note != "" && !hasNote(e.Notes, tc.note, "") {
				t.Errorf("no %s note: %v", tc.note, e.Notes)
			}
			want, st := ociIPMode(svc)
			if mode, _, ok := UserIPMode(svc, nil); ok != (st == valueTaken) || mode != want {
				t.Errorf("UserIPMode = %q %v, want %q", mode, ok, want)
			}
			fix := false
			for _, o := range res.Offers {
				fix = fix || o.ID == "oracle/nlb-preserve-off" && len(o.Changes) == 1 && o.Changes[0].To == "false"
			}
			if fix != (tc.snat == core.No) {
				t.Errorf("is-preserve-source fix offered: %v, want %v", fix, tc.snat == core.No)
			}
		})
	}
}

// TestOracleMoreParsers: backend-protocol and the internal keys, as v1.35.0 reads them.
func TestOracleMoreParsers(t *testing.T) {
	checkSpellings(t, srcOCIBackend, map[string]string{absent: "default", "HTTP": "HTTP", "http": "HTTP", "GRPC": "GRPC", "tcp": "TCP", "": "TCP",
		"true": "rejected", "True": "rejected", "TRUE": "rejected", "1": "rejected", "t": "rejected", "yes": "rejected", "garbage": "rejected"},
		func(v string) string { return outcome(ociBackendProtocol(annotated(annOCIBackendProtocol, v))) })
	// isInternalLB@v1.35.0: the key of the Service's type, strconv.ParseBool.
	internal := map[string]string{absent: "unknown", "true": "private", "True": "private", "TRUE": "private", "1": "private", "t": "private",
		"false": "public", "0": "public", "yes": "unknown", "": "unknown", "garbage": "unknown"}
	for key, typ := range map[string]string{annOCILBInternal: "", annOCINLBInternal: ociNLB} {
		checkSpellings(t, srcOCIInternal, internal, func(v string) string {
			ann := map[string]string{}
			if typ != "" {
				ann[annOCILBType] = typ
			}
			if v != absent {
				ann[key] = v
			}
			return scopeOfService(t, ann, "")
		})
	}
	// The other type's key is not read.
	if got := scopeOfService(t, map[string]string{annOCINLBInternal: "true"}, ""); got != "unknown" {
		t.Errorf("the NLB's key on a load balancer: %s, want unknown", got)
	}
}
