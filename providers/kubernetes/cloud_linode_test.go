package kubernetes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// TestLinodeParsers: the PROXY protocol per port, read as linode-cloud-controller-manager
// v0.9.8 reads it.
func TestLinodeParsers(t *testing.T) {
	port := func(svc *corev1.Service) string {
		_, pp, st, _ := linodePort(svc, svc.Spec.Ports[0])
		return outcome(pp, st)
	}
	// The default key, lower-cased: none, v1, v2; anything else (empty too) fails the Service.
	checkSpellings(t, srcLinodeProxy, map[string]string{absent: "none", "v1": "v1", "V2": "v2", "none": "none", "None": "none",
		"true": "rejected", "True": "rejected", "TRUE": "rejected", "1": "rejected", "t": "rejected", "yes": "rejected", "": "rejected", "garbage": "rejected"},
		func(v string) string { return port(annotated(annLinodeDefaultProxy, v)) })
	for name, tc := range map[string]struct {
		ann  map[string]string
		udp  bool
		want string
	}{
		// The first present key wins, whatever its value.
		"default none before deprecated v1": {ann: map[string]string{annLinodeDefaultProxy: "none", annLinodeProxyDeprecated: "v1"}, want: "none"},
		"deprecated alone":                  {ann: map[string]string{annLinodeProxyDeprecated: "v1"}, want: "v1"},
		"per port over the default":         {ann: map[string]string{annLinodeDefaultProxy: "v2", annLinodePortPrefix + "80": `{"proxy-protocol":"none"}`}, want: "none"},
		"per port, empty: the default":      {ann: map[string]string{annLinodeDefaultProxy: "v2", annLinodePortPrefix + "80": `{"proxy-protocol":""}`}, want: "v2"},
		"another port's config":             {ann: map[string]string{annLinodePortPrefix + "443": `{"proxy-protocol":"v2"}`}, want: "none"},
		"malformed JSON":                    {ann: map[string]string{annLinodePortPrefix + "80": `{proxy-protocol: v2}`}, want: "rejected"},
		"PROXY on UDP":                      {ann: map[string]string{annLinodeDefaultProxy: "v1"}, udp: true, want: "rejected"},
	} {
		svc := cloudService("web", tc.ann, "TCP", ipVIP)
		if tc.udp {
			svc.Spec.Ports[0].Protocol = corev1.ProtocolUDP
		}
		if got := port(svc); got != tc.want {
			t.Errorf("%s: %s, want %s", name, got, tc.want)
		}
	}
	// hostname-only-ingress: strconv.ParseBool, a set value that does not parse is false.
	on := linodeFacts.hostnameOn
	checkSpellings(t, srcLinodeHostname, map[string]string{absent: "false", "true": "true", "True": "true", "TRUE": "true", "1": "true", "t": "true",
		"false": "false", "yes": "false", "": "false", "garbage": "false"},
		func(v string) string {
			if v == absent {
				return "false"
			}
			if on(v) {
				return "true"
			}
			return "false"
		})
}

// TestLinode: the hostname fix, and the controller's cluster-wide hostname-only default.
func TestLinode(t *testing.T) {
	for name, tc := range map[string]struct {
		ann     map[string]string
		profile map[string]string
		remedy  core.Remedy
		note    core.Code
	}{
		"PROXY v2: hostname-only":            {ann: map[string]string{annLinodeDefaultProxy: "v2"}, remedy: core.ThroughLB},
		"hostname-only 1 is on: status lags": {ann: map[string]string{annLinodeDefaultProxy: "v2", annLinodeHostnameOnly: "1"}, remedy: core.RemedyNone},
		"the controller's default is on":     {ann: map[string]string{annLinodeDefaultProxy: "v2"}, profile: map[string]string{envLinodeHostnameOnly: "true"}, note: codeCCMLagging},
		"a value the controller refuses":     {ann: map[string]string{annLinodeDefaultProxy: "yes"}, note: codeValueRejected},
	} {
		t.Run(name, func(t *testing.T) {
			c, _ := core.NewCluster(core.ClusterProfile{ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: "v1.33.1", KubernetesVersion: "v1.33.1", ControllerSettings: tc.profile})
			res, err := core.Evaluate(NewDialect(nil), cloudService("web", tc.ann, "TCP", linodeStatus), c, core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.remedy != "" && res.Decision.Remedy != tc.remedy {
				t.Errorf("remedy %s, want %s: %s", res.Decision.Remedy, tc.remedy, res.Decision.Why)
			}
			if tc.note != "" && !hasNote(res.Exposure.Notes, tc.note, "") {
				t.Errorf("no %s note: %v", tc.note, res.Exposure.Notes)
			}
		})
	}
}

// TestLinodeProtocol: default-protocol (and the per-port JSON's protocol), lower-cased: tcp,
// udp, http or https, anything else fails the Service (v0.9.8).
func TestLinodeProtocol(t *testing.T) {
	checkSpellings(t, srcLinodeProtocol, map[string]string{absent: "tcp", "http": "http", "HTTPS": "https", "tcp": "tcp", "": "tcp",
		"true": "rejected", "True": "rejected", "TRUE": "rejected", "1": "rejected", "t": "rejected", "yes": "rejected", "garbage": "rejected"},
		func(v string) string {
			svc := annotated(annLinodeDefaultProtocol, v)
			proto, _, st, _ := linodePort(svc, svc.Spec.Ports[0])
			return outcome(proto, st)
		})
}
