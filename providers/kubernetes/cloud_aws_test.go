package kubernetes

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
)

// awsSvc is an AWS Service with a hostname status, the given annotations and class.
func awsSvc(ann map[string]string, class string, proto corev1.Protocol) *corev1.Service {
	s := cloudService("web", ann, proto, awsHost)
	if class != "" {
		s.Spec.LoadBalancerClass = ptr(class)
	}
	return s
}

func awsFlavourName(f awsFlavour) string {
	switch {
	case f.nobody:
		return "nobody"
	case f.autoMode && f.ipTargets:
		return "auto-ip"
	case f.autoMode:
		return "auto-instance"
	case f.lbc && f.ipTargets:
		return "lbc-ip"
	case f.lbc:
		return "lbc-instance"
	case f.nlb:
		return "ccm-nlb"
	}
	return "ccm-clb"
}

// TestAWSParsers: who claims the Service and each setting, read as cloud-provider-aws v1.36.1
// and aws-load-balancer-controller v3.5.0 read them.
func TestAWSParsers(t *testing.T) {
	// aws_loadbalancer.go isNLB, isLBExternal@v1.36.1: exact, case-sensitive.
	checkSpellings(t, srcAWSCCMType, map[string]string{absent: "ccm-clb", "nlb": "ccm-nlb", "NLB": "ccm-clb", "nlb-ip": "lbc-ip", "external": "nobody",
		"true": "ccm-clb", "True": "ccm-clb", "TRUE": "ccm-clb", "1": "ccm-clb", "t": "ccm-clb", "yes": "ccm-clb", "": "ccm-clb", "garbage": "ccm-clb"},
		func(v string) string { return awsFlavourName(awsFlavourOf(annotated(annAWSType, v))) })
	// service_utils.go@v3.5.0: "external" is the LBC's only with nlb-target-type exactly ip or
	// instance; claimed through the class, every target type but "ip" is instance.
	external := func(v string) *corev1.Service {
		s := annotated(annAWSNLBTargetType, v)
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[annAWSType] = "external"
		return s
	}
	checkSpellings(t, srcAWSLBCClaims, map[string]string{absent: "nobody", "ip": "lbc-ip", "instance": "lbc-instance", "IP": "nobody",
		"true": "nobody", "True": "nobody", "TRUE": "nobody", "1": "nobody", "t": "nobody", "yes": "nobody", "": "nobody", "garbage": "nobody"},
		func(v string) string { return awsFlavourName(awsFlavourOf(external(v))) })
	classed := func(class string) func(string) string {
		return func(v string) string {
			s := annotated(annAWSNLBTargetType, v)
			s.Spec.LoadBalancerClass = ptr(class)
			return awsFlavourName(awsFlavourOf(s))
		}
	}
	checkSpellings(t, srcAWSLBCTarget, map[string]string{absent: "lbc-instance", "ip": "lbc-ip", "instance": "lbc-instance", "IP": "lbc-instance",
		"true": "lbc-instance", "True": "lbc-instance", "TRUE": "lbc-instance", "1": "lbc-instance", "t": "lbc-instance", "yes": "lbc-instance", "": "lbc-instance", "garbage": "lbc-instance"},
		classed(awsLBCClass))
	// EKS Auto Mode targets IP unless told instance [docs].
	checkSpellings(t, srcAWSAutoMode, map[string]string{absent: "auto-ip", "ip": "auto-ip", "instance": "auto-instance",
		"true": "auto-ip", "True": "auto-ip", "TRUE": "auto-ip", "1": "auto-ip", "t": "auto-ip", "yes": "auto-ip", "": "auto-ip", "garbage": "auto-ip"},
		classed(awsAutoModeClass))

	// preserve_client_ip.enabled=<v> in target-group-attributes: the CCM compares exactly
	// (aws_validations.go@v1.36.1), the LBC parses a Go bool (model_build_target_group.go@v3.5.0).
	attrs := func(v string) *corev1.Service {
		if v == absent {
			return annotated(annAWSTargetGroupAttrs, absent)
		}
		return annotated(annAWSTargetGroupAttrs, tgPreserveClientIP+"="+v)
	}
	preserve := func(a awsAttrs) string {
		switch {
		case !a.set:
			return "default"
		case a.rejected != "":
			return "rejected"
		}
		return a.pairs[tgPreserveClientIP]
	}
	checkSpellings(t, srcAWSCCMAttrs, map[string]string{absent: "default", "true": "true", "false": "false", "True": "rejected", "TRUE": "rejected",
		"1": "rejected", "t": "rejected", "yes": "rejected", "": "rejected", "garbage": "rejected"},
		func(v string) string { return preserve(awsCCMAttrs(attrs(v), true)) })
	checkSpellings(t, srcAWSLBCTarget, map[string]string{absent: "default", "true": "true", "false": "false", "True": "true", "TRUE": "true",
		"1": "true", "t": "true", "0": "false", "yes": "rejected", "": "rejected", "garbage": "rejected"},
		func(v string) string { return preserve(awsLBCAttrs(attrs(v))) })
	// The CCM trims pairs but not around "=", takes only its two attributes, refuses the
	// annotation on a Classic ELB and preservation off with a UDP port; the LBC trims both.
	for raw, want := range map[string][2]string{
		"preserve_client_ip.enabled = false":                                       {"rejected", "false"},
		" preserve_client_ip.enabled=false , proxy_protocol_v2.enabled=true":       {"false", "false"},
		"deregistration_delay.timeout_seconds=30,preserve_client_ip.enabled=false": {"rejected", "false"},
		"preserve_client_ip.enabled":                                               {"rejected", "rejected"},
	} {
		s := annotated(annAWSTargetGroupAttrs, raw)
		if got := [2]string{preserve(awsCCMAttrs(s, true)), preserve(awsLBCAttrs(s))}; got != want {
			t.Errorf("%q: CCM, LBC %v, want %v", raw, got, want)
		}
	}
	if a := awsCCMAttrs(annotated(annAWSTargetGroupAttrs, "preserve_client_ip.enabled=true"), false); a.rejected == "" {
		t.Error("the CCM must refuse target-group-attributes on a Classic ELB")
	}
	udp := annotated(annAWSTargetGroupAttrs, "preserve_client_ip.enabled=false")
	udp.Spec.Ports[0].Protocol = corev1.ProtocolUDP
	if a := awsCCMAttrs(udp, true); a.rejected == "" {
		t.Error("the CCM must refuse preservation off with a UDP port")
	}
}

// TestAWSScopeAndProxySpellings: aws-load-balancer-internal, -scheme and -proxy-protocol as
// each controller reads them, through the dialect.
func TestAWSScopeAndProxySpellings(t *testing.T) {
	d := NewDialect(nil)
	scope := func(ann map[string]string, class string) string {
		tr, err := d.Translate(awsSvc(ann, class, "TCP"), cloudCluster(t, ""))
		if err != nil {
			t.Fatal(err)
		}
		if tr.Exposure.Scope == core.ScopeUnknown {
			return "unknown"
		}
		return string(tr.Exposure.Scope)
	}
	with := func(key, v string, more map[string]string) map[string]string {
		ann := map[string]string{}
		for k, x := range more {
			ann[k] = x
		}
		if v != absent {
			ann[key] = v
		}
		return ann
	}
	// aws.go EnsureLoadBalancer@v1.36.1: "false" or empty is public, anything else internal.
	checkSpellings(t, srcAWSCCMInternal, map[string]string{absent: "unknown", "true": "private", "True": "private", "TRUE": "private", "1": "private",
		"t": "private", "yes": "private", "": "public", "garbage": "private", "false": "public", "False": "private", "0.0.0.0/0": "private"},
		func(v string) string { return scope(with(annAWSInternal, v, map[string]string{annAWSType: "nlb"}), "") })
	// model_build_load_balancer.go@v3.5.0: strconv.ParseBool; an error fails the build.
	checkSpellings(t, srcAWSLBCScheme, map[string]string{absent: "unknown", "true": "private", "True": "private", "TRUE": "private", "1": "private",
		"t": "private", "yes": "unknown", "": "unknown", "garbage": "unknown", "false": "public", "False": "public", "0.0.0.0/0": "unknown"},
		func(v string) string { return scope(with(annAWSInternal, v, nil), awsLBCClass) })
	// -scheme shadows -internal ("false" here), which decides only when -scheme is absent.
	checkSpellings(t, srcAWSLBCScheme, map[string]string{absent: "public", "internal": "private", "internet-facing": "public", "Internal": "unknown",
		"true": "unknown", "True": "unknown", "TRUE": "unknown", "1": "unknown", "t": "unknown", "yes": "unknown", "": "unknown", "garbage": "unknown"},
		func(v string) string {
			return scope(with(annAWSScheme, v, map[string]string{annAWSInternal: "false"}), awsLBCClass)
		})
	// The CCM ignores -scheme.
	if got := scope(map[string]string{annAWSType: "nlb", annAWSScheme: "internal"}, ""); got != "unknown" {
		t.Errorf("scheme on a CCM NLB: %s, want unknown", got)
	}

	header := func(ann map[string]string, class string) string {
		tr, err := d.Translate(awsSvc(ann, class, "TCP"), cloudCluster(t, ""))
		if err != nil {
			t.Fatal(err)
		}
		n := tr.Exposure.Needs
		out := "off"
		if n.ProxyHeader == core.Yes {
			out = "on" + n.ProxyVersion
		}
		if hasNote(tr.Exposure.Notes, codeValueRejected, annAWSProxyProtocol) {
			out = "rejected"
		}
		if hasNote(tr.Exposure.Notes, codeValueIgnored, annAWSProxyProtocol) {
			out = "ignored"
		}
		return out
	}
	// aws.go@v1.36.1: the Classic ELB takes only "*" (PROXY v1); empty is absent.
	checkSpellings(t, srcAWSCCMProxy, map[string]string{absent: "off", "*": "onv1", "true": "rejected", "True": "rejected", "TRUE": "rejected",
		"1": "rejected", "t": "rejected", "yes": "rejected", "": "off", "garbage": "rejected"},
		func(v string) string { return header(with(annAWSProxyProtocol, v, nil), "") })
	// The CCM's NLB does not read it.
	checkSpellings(t, srcAWSCCMProxy, map[string]string{absent: "off", "*": "ignored", "true": "ignored", "True": "ignored", "TRUE": "ignored",
		"1": "ignored", "t": "ignored", "yes": "ignored", "": "ignored", "garbage": "ignored"},
		func(v string) string {
			return header(with(annAWSProxyProtocol, v, map[string]string{annAWSType: "nlb"}), "")
		})
	// model_build_target_group.go@v3.5.0: "*" is PROXY v2 on every target group, anything
	// else (empty too) fails the build.
	checkSpellings(t, srcAWSLBCProxy, map[string]string{absent: "off", "*": "onv2", "true": "rejected", "True": "rejected", "TRUE": "rejected",
		"1": "rejected", "t": "rejected", "yes": "rejected", "": "rejected", "garbage": "rejected"},
		func(v string) string { return header(with(annAWSProxyProtocol, v, nil), awsLBCClass) })
}

// TestAWS: the verdicts and the fixes of each controller, the cloud-controller-manager's
// release deciding whether target-group-attributes take effect.
func TestAWS(t *testing.T) {
	ccmPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "aws-cloud-controller-manager-x"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ccm", Image: "registry.k8s.io/provider-aws/cloud-controller-manager:v1.33.2"}}}}
	nlb := map[string]string{annAWSType: "nlb", annAWSInternal: "true"}
	nlbOff := map[string]string{annAWSType: "nlb", annAWSInternal: "true", annAWSTargetGroupAttrs: "preserve_client_ip.enabled=false"}
	for name, tc := range map[string]struct {
		ann     map[string]string
		class   string
		proto   corev1.Protocol
		version string
		extra   []runtime.Object
		snat    core.Fact
		remedy  core.Remedy
		// unmet: the kind of the client-IP fix's unmet precondition ("" none).
		unmet core.PreconditionKind
		note  core.Code
	}{
		// The case: a CCM NLB is fixed in place by one annotation since v1.34.0.
		"CCM NLB, current release": {ann: nlb, version: "v1.36.1", snat: core.No, remedy: core.LBSourceNAT},
		"CCM NLB, v1.33.3":         {ann: nlb, version: "v1.33.3", snat: core.No, remedy: core.LBSourceNAT},
		"CCM NLB, v1.34.1 lacks it": {ann: nlb, version: "v1.34.1", snat: core.No, remedy: core.DNSSteering,
			unmet: core.PreconditionVersion},
		"CCM NLB, v1.33.2 from the Pod's image": {ann: nlb, extra: []runtime.Object{ccmPod}, snat: core.No, remedy: core.DNSSteering,
			unmet: core.PreconditionVersion},
		// Release unknown: the fix is planned (an older controller ignores it) and says which
		// releases apply it.
		"CCM NLB, release unknown":           {ann: nlb, snat: core.No, remedy: core.LBSourceNAT, note: codeReleaseDecides},
		"CCM NLB, preservation off, v1.34.0": {ann: nlbOff, version: "v1.34.0", snat: core.Yes, remedy: core.RemedyNone},
		"CCM NLB, preservation off, v1.34.1 ignores it": {ann: nlbOff, version: "v1.34.1", snat: core.No, remedy: core.DNSSteering,
			note: codeValueIgnored},
		"CCM NLB, preservation off, release unknown": {ann: nlbOff, snat: core.Yes, remedy: core.RemedyNone, note: codeReleaseDecides},
		"CCM NLB, a UDP port: no fix": {ann: nlb, proto: corev1.ProtocolUDP, version: "v1.36.1", snat: core.No, remedy: core.DNSSteering,
			unmet: core.PreconditionUnsupported},
		"CCM NLB, an attribute the CCM refuses": {ann: map[string]string{annAWSType: "nlb", annAWSInternal: "true", annAWSTargetGroupAttrs: "deregistration_delay.timeout_seconds=30"},
			version: "v1.36.1", snat: core.Unknown, note: codeValueRejected},
		// Any type but nlb, nlb-ip and external is a Classic ELB, which refuses the attributes
		// (and so reconciles nothing) but is a proxy all the same.
		"Classic ELB with target-group-attributes": {ann: map[string]string{annAWSType: "clb", annAWSInternal: "true", annAWSTargetGroupAttrs: "preserve_client_ip.enabled=false"},
			snat: core.Yes, remedy: core.RemedyNone, note: codeValueRejected},
		"LBC instance targets": {ann: map[string]string{annAWSScheme: "internal"}, class: awsLBCClass, snat: core.No, remedy: core.LBSourceNAT},
		"LBC ip targets":       {ann: map[string]string{annAWSScheme: "internal", annAWSNLBTargetType: "ip"}, class: awsLBCClass, snat: core.Yes, remedy: core.RemedyNone},
		// The LBC's default target type is its --default-target-type.
		"LBC, default target type ip stated":       {ann: map[string]string{annAWSScheme: "internal"}, class: awsLBCClass, snat: core.Yes, remedy: core.RemedyNone},
		"EKS Auto Mode targets IP":                 {ann: map[string]string{annAWSScheme: "internal"}, class: awsAutoModeClass, snat: core.Yes, remedy: core.RemedyNone},
		"EKS Auto Mode, instance targets":          {ann: map[string]string{annAWSScheme: "internal", annAWSNLBTargetType: "instance"}, class: awsAutoModeClass, snat: core.No, remedy: core.LBSourceNAT},
		"external without a target type: nobody's": {ann: map[string]string{annAWSType: "external", annAWSInternal: "true"}, snat: core.Unknown, note: codeAWSNoController},
	} {
		t.Run(name, func(t *testing.T) {
			proto := tc.proto
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			p := core.ClusterProfile{ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: "v1.33.0", KubernetesVersion: "v1.33.0"}
			AWSController{Version: tc.version}.Overlay(&p)
			if strings.Contains(name, "default target type ip") {
				p.ControllerSettings = map[string]string{flagAWSDefaultTargetType: "ip"}
			}
			c, err := core.NewCluster(p, tc.extra...)
			if err != nil {
				t.Fatal(err)
			}
			svc := awsSvc(tc.ann, tc.class, proto)
			res, err := core.Evaluate(NewDialect(nil), svc, c, core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			e := &res.Exposure
			if e.LBSourceNAT != tc.snat || tc.remedy != "" && res.Decision.Remedy != tc.remedy {
				t.Errorf("snat %s remedy %s, want %s %s; reasons %v; notes %v; offers %+v", e.LBSourceNAT, res.Decision.Remedy, tc.snat, tc.remedy, e.Reasons, e.Notes, res.Offers)
			}
			var fix *core.Offer
			for i := range res.Offers {
				if res.Offers[i].ID == "aws/client-ip-off" {
					fix = &res.Offers[i]
				}
			}
			if tc.unmet != "" && (fix == nil || len(fix.Unmet) == 0 || fix.Unmet[0].Kind != tc.unmet) {
				t.Errorf("client-IP fix %+v, want unmet %s", fix, tc.unmet)
			}
			notes := append(append([]core.Reason(nil), e.Notes...), res.Offers[len(res.Offers)-1].Notes...)
			if fix != nil {
				notes = append(notes, fix.Notes...)
			}
			if tc.note != "" && !hasNote(notes, tc.note, "") {
				t.Errorf("no %s note: %v", tc.note, notes)
			}
			if res.Decision.Remedy == core.LBSourceNAT && (res.Decision.Offer != "aws/client-ip-off" || fix == nil || len(fix.Changes) != 1 ||
				!strings.Contains(fix.Changes[0].To, tgPreserveClientIP+"=false")) {
				t.Errorf("decision %s names offer %q; the fix's changes %+v", res.Decision.Remedy, res.Decision.Offer, fix)
			}
		})
	}
}
