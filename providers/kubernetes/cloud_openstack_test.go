package kubernetes

import (
	"testing"

	"github.com/loopguard/loopguard/core"
)

// TestOpenStackParsers: proxy-protocol and x-forwarded-for read as OCCM v1.36.0 reads them.
func TestOpenStackParsers(t *testing.T) {
	// getProxyProtocolFromServiceAnnotation@v1.36.0: an exact switch; anything else is off.
	checkSpellings(t, srcOpenStackProxy, map[string]string{absent: "default", "true": "v1", "v1": "v1", "v2": "v2", "false": "", "V2": "ignored",
		"True": "ignored", "TRUE": "ignored", "1": "ignored", "t": "ignored", "yes": "ignored", "": "ignored", "garbage": "ignored"},
		func(v string) string { return outcome(openStackProxy(annotated(annOpenStackProxyProtocol, v))) })
	// getBoolFromServiceAnnotation@v1.36.0: exactly "true" or "false", else the default.
	checkSpellings(t, srcOpenStackXFF, map[string]string{absent: "default", "true": "true", "false": "false",
		"True": "ignored", "TRUE": "ignored", "1": "ignored", "t": "ignored", "yes": "ignored", "": "ignored", "garbage": "ignored"},
		func(v string) string { return outcome(openStackBool(annotated(annOpenStackXFF, v), annOpenStackXFF)) })
}

// TestOpenStack: the PROXY protocol and X-Forwarded-For as OCCM acts on them, by release and
// cloud.conf.
func TestOpenStack(t *testing.T) {
	for name, tc := range map[string]struct {
		ann     map[string]string
		profile core.ClusterProfile
		snat    core.Fact
		header  core.Fact
		remedy  core.Remedy
		offer   string
		note    core.Code
	}{
		"v2, release unknown: the upgrade":  {ann: map[string]string{annOpenStackProxyProtocol: "v2"}, snat: core.Yes, header: core.Yes, remedy: core.ThroughLB, offer: "openstack/" + fixUpgradeCCM},
		"v2 before v1.31.0 is off":          {ann: map[string]string{annOpenStackProxyProtocol: "v2"}, profile: core.ClusterProfile{CCMVersion: "v1.30.2"}, snat: core.Unknown, header: core.Unknown, note: codeValueIgnored},
		"True is off, silently":             {ann: map[string]string{annOpenStackProxyProtocol: "True"}, snat: core.Unknown, header: core.Unknown, note: codeValueIgnored},
		"true on v1.29: the upgrade":        {ann: map[string]string{annOpenStackProxyProtocol: "true"}, profile: core.ClusterProfile{CCMVersion: "v1.29.1"}, snat: core.Yes, header: core.Yes, remedy: core.ThroughLB, offer: "openstack/" + fixUpgradeCCM},
		"enable-ingress-hostname: no Proxy": {ann: map[string]string{annOpenStackProxyProtocol: "true"}, profile: core.ClusterProfile{ControllerSettings: map[string]string{settingOpenStackIngressHostname: "True"}}, snat: core.Yes, header: core.Yes},
		// An HTTP listener: the client's address only in X-Forwarded-For, ipMode still VIP.
		"x-forwarded-for": {ann: map[string]string{annOpenStackXFF: "true"}, snat: core.Yes, header: core.Unknown, remedy: core.RemedyNone},
		"x-forwarded-for with the PROXY protocol is refused": {ann: map[string]string{annOpenStackXFF: "true", annOpenStackProxyProtocol: "v1"},
			snat: core.Unknown, header: core.Unknown, note: codeValueRejected},
		"lb-provider ovn passes through": {profile: core.ClusterProfile{ControllerSettings: map[string]string{settingOpenStackProvider: "ovn"}}, snat: core.No, header: core.Unknown, remedy: core.RemedyNone},
		"lb-provider amphora proxies":    {profile: core.ClusterProfile{ControllerSettings: map[string]string{settingOpenStackProvider: "amphora"}}, snat: core.Yes, header: core.Unknown, remedy: core.RemedyNone},
		"lb-provider unseen":             {snat: core.Unknown, header: core.Unknown, note: CodeCloudDefaultUnseen},
	} {
		t.Run(name, func(t *testing.T) {
			tc.profile.ProxyMode, tc.profile.KubeProxyVersion, tc.profile.KubernetesVersion = core.ProxyModeIPTables, "v1.33.1", "v1.33.1"
			c, err := core.NewCluster(tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			ann := map[string]string{"loadbalancer.openstack.org/keep-floatingip": "false"}
			for k, v := range tc.ann {
				ann[k] = v
			}
			res, err := core.Evaluate(NewDialect(nil), cloudService("web", ann, "TCP", ipVIP), c, core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			e := &res.Exposure
			if e.LBSourceNAT != tc.snat || e.Dependence().ProxyHeader != tc.header || tc.remedy != "" && res.Decision.Remedy != tc.remedy ||
				tc.offer != "" && res.Decision.Offer != tc.offer {
				t.Errorf("snat %s header %s remedy %s (%s), want %s %s %s (%s); reasons %v; notes %v", e.LBSourceNAT, e.Dependence().ProxyHeader,
					res.Decision.Remedy, res.Decision.Offer, tc.snat, tc.header, tc.remedy, tc.offer, e.Reasons, e.Notes)
			}
			if tc.note != "" && !hasNote(e.Notes, tc.note, "") {
				t.Errorf("no %s note: %v", tc.note, e.Notes)
			}
		})
	}
}

// TestOpenStackInternal: openstack-internal-load-balancer exactly "true" (checkService@v1.36.0);
// anything else leaves cloud.conf's internal-lb to decide.
func TestOpenStackInternal(t *testing.T) {
	checkSpellings(t, srcOpenStackInternal, map[string]string{absent: "unknown", "true": "private", "false": "unknown",
		"True": "unknown", "TRUE": "unknown", "1": "unknown", "t": "unknown", "yes": "unknown", "": "unknown", "garbage": "unknown"},
		func(v string) string {
			ann := map[string]string{}
			if v != absent {
				ann["service.beta.kubernetes.io/openstack-internal-load-balancer"] = v
			}
			return scopeOfService(t, ann, "")
		})
}
