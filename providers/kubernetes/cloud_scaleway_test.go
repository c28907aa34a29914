package kubernetes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// TestScalewayParsers: the PROXY annotations, ip-mode and private read as
// scaleway-cloud-controller-manager v0.36.2 reads them, for a Service on port 80.
func TestScalewayParsers(t *testing.T) {
	port := func(key string) func(string) string {
		return func(v string) string {
			pp, st, _ := scalewayProxy(annotated(key, v), 80)
			return outcome(pp, st)
		}
	}
	// isPortInRange@v0.36.2: a Go bool but "1" and "0"; "*"; ports, base prefixes taken, read
	// up to the first match (so "80,abc" is on for port 80 and refused for port 443).
	v1 := map[string]string{absent: "none", "true": "v1", "True": "v1", "TRUE": "v1", "t": "v1", "false": "none", "*": "v1", "80": "v1", " 8 0": "v1",
		"0x50": "v1", "443": "none", "1": "none", "0": "rejected", "yes": "rejected", "": "none", "garbage": "rejected", "80,abc": "v1", "443,abc": "rejected", "70000": "rejected"}
	checkSpellings(t, srcScalewayPorts, v1, port(annScalewayProxyV1))
	// getSendProxyV2@v0.36.2: a Go bool first ("1" is every port), "*" and empty are errors.
	checkSpellings(t, srcScalewaySendV2, map[string]string{absent: "none", "true": "v2", "True": "v2", "TRUE": "v2", "1": "v2", "t": "v2", "0": "none",
		"80": "v2", "443": "none", "*": "rejected", "yes": "rejected", "": "rejected", "garbage": "rejected"}, port(annScalewaySendProxyV2))
	both := cloudService("web", map[string]string{annScalewayProxyV1: "80", annScalewayProxyV2: "*"}, "TCP", ipVIP)
	if _, st, _ := scalewayProxy(both, 80); st != valueRejected {
		t.Error("a port in both v1 and v2 must be refused")
	}
	checkSpellings(t, srcScalewayIPMode, map[string]string{absent: "default", "Proxy": "Proxy", "VIP": "VIP", "proxy": "rejected",
		"true": "rejected", "True": "rejected", "TRUE": "rejected", "1": "rejected", "t": "rejected", "yes": "rejected", "": "rejected", "garbage": "rejected"},
		func(v string) string { return outcome(scalewayIPMode(annotated(annScalewayIPMode, v))) })
	checkSpellings(t, srcScalewayPrivate, map[string]string{absent: "unknown", "true": "private", "True": "private", "TRUE": "private", "1": "private", "t": "private",
		"false": "public", "0": "public", "yes": "unknown", "": "unknown", "garbage": "unknown"},
		func(v string) string {
			ann := map[string]string{}
			if v != absent {
				ann[annScalewayPrivate] = v
			}
			return scopeOfService(t, ann, "")
		})
}

// TestScaleway: ipMode Proxy by itself when every port has the PROXY protocol; the user's
// ip-mode stands.
func TestScaleway(t *testing.T) {
	for name, tc := range map[string]struct {
		ann    map[string]string
		header core.Fact
		mode   corev1.LoadBalancerIPMode
		note   core.Code
	}{
		"True is every port":         {ann: map[string]string{annScalewayProxyV2: "True"}, header: core.Yes, mode: corev1.LoadBalancerIPModeProxy},
		"send-proxy-v2 1 every port": {ann: map[string]string{annScalewaySendProxyV2: "1"}, header: core.Yes, mode: corev1.LoadBalancerIPModeProxy},
		"v1 1 is port 1":             {ann: map[string]string{annScalewayProxyV1: "1"}, header: core.Unknown},
		"ip-mode VIP over PROXY":     {ann: map[string]string{annScalewayProxyV2: "*", annScalewayIPMode: "VIP"}, header: core.Yes, mode: corev1.LoadBalancerIPModeVIP},
		"ip-mode proxy is refused":   {ann: map[string]string{annScalewayIPMode: "proxy"}, header: core.Unknown, note: codeValueRejected},
		"yes is refused":             {ann: map[string]string{annScalewayProxyV1: "yes"}, header: core.Unknown, note: codeValueRejected},
	} {
		t.Run(name, func(t *testing.T) {
			svc := cloudService("web", tc.ann, "TCP", ipVIP)
			res, err := core.Evaluate(NewDialect(nil), svc, cloudCluster(t, ""), core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			if h := res.Exposure.Needs.ProxyHeader; h != tc.header {
				t.Errorf("header %s, want %s", h, tc.header)
			}
			if tc.note != "" && !hasNote(res.Exposure.Notes, tc.note, "") {
				t.Errorf("no %s note: %v", tc.note, res.Exposure.Notes)
			}
			if mode, _, _ := UserIPMode(svc, nil); mode != tc.mode {
				t.Errorf("UserIPMode %q, want %q", mode, tc.mode)
			}
		})
	}
}

// TestScalewayUseHostname: getUseHostname@v0.36.2: strconv.ParseBool, unparsable is false.
func TestScalewayUseHostname(t *testing.T) {
	on := scalewayFacts.hostnameOn
	checkSpellings(t, srcScalewayHostname, map[string]string{absent: "false", "true": "true", "True": "true", "TRUE": "true", "1": "true", "t": "true",
		"false": "false", "yes": "false", "": "false", "garbage": "false"},
		func(v string) string { return outcome(v != absent && on(v), valueTaken) })
}
