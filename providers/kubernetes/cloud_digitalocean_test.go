package kubernetes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// TestDigitalOceanParsers: each setting read as digitalocean-cloud-controller-manager v0.1.68
// reads it.
func TestDigitalOceanParsers(t *testing.T) {
	// loadbalancers.go getType@v0.1.68: exact; empty is the default.
	checkSpellings(t, srcDOType, map[string]string{absent: "default", "REGIONAL": "REGIONAL", "REGIONAL_NETWORK": "REGIONAL_NETWORK",
		"regional": "rejected", "GLOBAL": "rejected", "true": "rejected", "True": "rejected", "TRUE": "rejected", "1": "rejected", "t": "rejected",
		"yes": "rejected", "": "default", "garbage": "rejected"},
		func(v string) string { return outcome(doType(annotated(annDOType, v))) })
	// annotations.go getBool@v0.1.68: strconv.ParseBool, an error fails the request.
	checkSpellings(t, srcDOProxy, map[string]string{absent: "default", "true": "true", "True": "true", "TRUE": "true", "1": "true", "t": "true",
		"false": "false", "0": "false", "yes": "rejected", "": "rejected", "garbage": "rejected"},
		func(v string) string {
			return outcome(strictBool(annotated(annDOProxyProtocol, v), annDOProxyProtocol))
		})
	checkSpellings(t, srcDOProtocol, map[string]string{absent: "default", "tcp": "tcp", "http": "http", "https": "https", "http2": "http2", "HTTP": "rejected",
		"true": "rejected", "True": "rejected", "TRUE": "rejected", "1": "rejected", "t": "rejected", "yes": "rejected", "": "rejected", "garbage": "rejected"},
		func(v string) string { return outcome(doProtocol(annotated(annDOProtocol, v))) })
	// cloud.go@v0.1.68: DEFAULT_LB_TYPE is taken only as one of the two, exactly.
	checkSpellings(t, srcDOType, map[string]string{absent: "REGIONAL_NETWORK", "REGIONAL": "REGIONAL", "REGIONAL_NETWORK": "REGIONAL_NETWORK", "regional": "REGIONAL_NETWORK",
		"true": "REGIONAL_NETWORK", "True": "REGIONAL_NETWORK", "TRUE": "REGIONAL_NETWORK", "1": "REGIONAL_NETWORK", "t": "REGIONAL_NETWORK", "yes": "REGIONAL_NETWORK",
		"": "REGIONAL_NETWORK", "garbage": "REGIONAL_NETWORK"},
		func(val string) string {
			p := core.ClusterProfile{CCMVersion: "v0.1.68"}
			if val != absent {
				p.ControllerSettings = map[string]string{envDODefaultLBType: val}
			}
			c, _ := core.NewCluster(p)
			typ, _ := doDefaultType(&cloudView{svc: annotated("x", absent), c: c, f: &digitalOceanFacts})
			return typ
		})
	// getNetwork@v0.1.68: EXTERNAL or INTERNAL exactly, EXTERNAL when empty.
	scope := func(v string) string {
		for _, a := range digitalOceanFacts.scope {
			if s, ok := a.match(v); ok && v != absent {
				return string(s)
			}
		}
		return "unknown"
	}
	checkSpellings(t, srcDONetwork, map[string]string{absent: "unknown", "INTERNAL": "private", "EXTERNAL": "public", "internal": "unknown",
		"true": "unknown", "True": "unknown", "TRUE": "unknown", "1": "unknown", "t": "unknown", "yes": "unknown", "": "public", "garbage": "unknown"}, scope)
}

// TestDigitalOcean: the load balancer's type decides what it does to the client's address,
// and whether the hostname fix suits it; the release decides the default since v0.1.61.
func TestDigitalOcean(t *testing.T) {
	pp := map[string]string{annDOProxyProtocol: "true", annExternalDNS: "web.example.com"}
	with := func(ann map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for x, y := range ann {
			out[x] = y
		}
		return out
	}
	for name, tc := range map[string]struct {
		ann       map[string]string
		profile   core.ClusterProfile
		snat      core.Fact
		remedy    core.Remedy
		tentative bool
		note      core.Code
	}{
		"REGIONAL_NETWORK passes the client through": {ann: map[string]string{annDOType: doRegionalNetwork}, snat: core.No, remedy: core.RemedyNone},
		"REGIONAL is a proxy":                        {ann: map[string]string{annDOType: doRegional}, snat: core.Yes, remedy: core.RemedyNone},
		// The default changed in v0.1.61: a Service without the type gets its release's.
		"no type, v0.1.61": {profile: core.ClusterProfile{CCMVersion: "v0.1.61"}, snat: core.No, remedy: core.RemedyNone},
		"no type, v0.1.60": {profile: core.ClusterProfile{CCMVersion: "v0.1.60"}, snat: core.Yes, remedy: core.RemedyNone},
		"no type, DEFAULT_LB_TYPE REGIONAL": {profile: core.ClusterProfile{CCMVersion: "v0.1.62", ControllerSettings: map[string]string{envDODefaultLBType: doRegional}},
			snat: core.Yes, remedy: core.RemedyNone},
		"no type, release unknown: tentative": {snat: core.Unknown, note: CodeCloudDefaultUnseen},
		"a type the controller refuses":       {ann: map[string]string{annDOType: "regional"}, snat: core.Unknown, note: codeValueRejected},
		// PROXY protocol behind a REGIONAL load balancer: the hostname fix.
		"REGIONAL, PROXY on": {ann: with(pp, annDOType, doRegional), snat: core.Yes, remedy: core.ThroughLB},
		// Behind a REGIONAL_NETWORK one the hostname would cut off the traffic from outside.
		"REGIONAL_NETWORK, PROXY on: no hostname fix":       {ann: with(pp, annDOType, doRegionalNetwork), snat: core.No, remedy: core.RemedyNone, note: codeDONetworkLB},
		"PROXY on, type unknown: the hostname, tentatively": {ann: pp, snat: core.Unknown, remedy: core.ThroughLB, tentative: true},
	} {
		t.Run(name, func(t *testing.T) {
			tc.profile.ProxyMode, tc.profile.KubeProxyVersion, tc.profile.KubernetesVersion = core.ProxyModeIPTables, "v1.33.1", "v1.33.1"
			c, err := core.NewCluster(tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			svc := cloudService("web", with(tc.ann, "service.beta.kubernetes.io/do-loadbalancer-name", "web"), corev1.ProtocolTCP, ipVIP)
			res, err := core.Evaluate(NewDialect(nil), svc, c, core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			e := &res.Exposure
			if e.LBSourceNAT != tc.snat || tc.remedy != "" && (res.Decision.Remedy != tc.remedy || res.Decision.Tentative != tc.tentative) {
				t.Errorf("snat %s remedy %s tentative %v, want %s %s %v; reasons %v; notes %v", e.LBSourceNAT, res.Decision.Remedy, res.Decision.Tentative,
					tc.snat, tc.remedy, tc.tentative, e.Reasons, e.Notes)
			}
			if tc.note != "" && !hasNote(e.Notes, tc.note, "") {
				t.Errorf("no %s note: %v", tc.note, e.Notes)
			}
			if res.Decision.Remedy == core.ThroughLB && !tc.tentative && res.Decision.Offer != "digitalocean/"+fixHostname {
				t.Errorf("through-lb by offer %q, want the hostname annotation", res.Decision.Offer)
			}
		})
	}
	// A CCM fork publishes the status itself, but not ipMode Proxy for a network LB.
	res, err := core.Evaluate(NewDialect(&Options{OwnsStatus: true}), cloudService("web", with(pp, annDOType, doRegionalNetwork), "TCP", ipVIP),
		func() *core.Cluster { c, _ := core.NewCluster(proxyProfile); return c }(), core.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision.Remedy == core.ThroughLB {
		t.Errorf("a fork would publish ipMode Proxy for a REGIONAL_NETWORK load balancer: %s", res.Decision.Why)
	}
	p := core.ClusterProfile{}
	DigitalOceanController{Version: "v0.1.62", DefaultLBType: doRegional}.Overlay(&p)
	if p.CCMVersion != "v0.1.62" || p.ControllerSettings[envDODefaultLBType] != doRegional {
		t.Errorf("profile after Overlay: %+v", p)
	}
}
