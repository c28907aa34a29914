package kubernetes

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
)

// TestHetznerParsers: each Hetzner setting read as hcloud-cloud-controller-manager v1.35.0
// reads it.
func TestHetznerParsers(t *testing.T) {
	// internal/annotation/name.go BoolFromService@v1.35.0: strconv.ParseBool, any error fails
	// EnsureLoadBalancer (nothing applied).
	bools := map[string]string{absent: "default", "true": "true", "True": "true", "TRUE": "true", "1": "true", "t": "true", "T": "true",
		"false": "false", "False": "false", "0": "false", "f": "false", "yes": "rejected", "on": "rejected", "": "rejected", "garbage": "rejected"}
	for _, key := range []string{annHetznerProxyProtocol, annHetznerDisablePublic} {
		checkSpellings(t, srcHetznerBool, bools, func(v string) string { return outcome(strictBool(annotated(key, v), key)) })
	}
	// internal/annotation/name.go LBSvcProtocol@v1.35.0: lower-cased, then tcp, http or https.
	checkSpellings(t, srcHetznerProtocol, map[string]string{absent: "default", "tcp": "tcp", "TCP": "tcp", "http": "http", "HTTPS": "https",
		"true": "rejected", "True": "rejected", "TRUE": "rejected", "1": "rejected", "t": "rejected", "yes": "rejected", "": "rejected", "garbage": "rejected", "udp": "rejected"},
		func(v string) string { return outcome(hetznerProtocol(annotated(annHetznerProtocol, v))) })
	// config.go getEnvBoolPtr@v1.35.0: strconv.ParseBool; an unparsable value stops the
	// controller at start.
	checkSpellings(t, srcHetznerDefaults, map[string]string{absent: "default", "true": "true", "True": "true", "TRUE": "true", "1": "true", "t": "true",
		"false": "false", "yes": "rejected", "": "rejected", "garbage": "rejected"},
		func(val string) string {
			p := core.ClusterProfile{}
			if val != absent {
				p.ControllerSettings = map[string]string{envHetznerUsesProxyProtocol: val}
			}
			c, err := core.NewCluster(p)
			if err != nil {
				t.Fatal(err)
			}
			on, _, st := hetznerDefault(&cloudView{svc: annotated("x", absent), c: c, f: &hetznerFacts})
			return outcome(on, st)
		})
}

// TestHetzner: what the unit concludes from a Service, as the controller would act on it.
func TestHetzner(t *testing.T) {
	proxy := corev1.LoadBalancerIPModeProxy
	ccm := func(tag string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "hccm"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "hcloud-cloud-controller-manager",
				Image: "docker.io/hetznercloud/hcloud-cloud-controller-manager:" + tag}}}}
	}
	for name, tc := range map[string]struct {
		ann        map[string]string
		status     corev1.LoadBalancerIngress
		providerID string
		profile    core.ClusterProfile
		extra      []runtime.Object
		snat       core.Fact
		header     core.Fact
		tls        core.Fact
		// note: a code the exposure's notes must carry, with msg in its message.
		note core.Code
		msg  string
		// remedy and to: the decision and a substring of its action.
		remedy core.Remedy
		to     string
	}{
		// The case: the controller reads "True" with strconv.ParseBool: PROXY on.
		"True is on": {ann: map[string]string{annHetznerProxyProtocol: "True"}, status: ipVIP,
			snat: core.Yes, header: core.Yes, remedy: core.ThroughLB, to: "upgrade the hetzner cloud-controller-manager to v1.21.0"},
		"1 is on, status Proxy": {ann: map[string]string{annHetznerProxyProtocol: "1"}, status: corev1.LoadBalancerIngress{IP: "10.0.0.20", IPMode: &proxy},
			snat: core.Yes, header: core.Yes, remedy: core.RemedyNone},
		// "yes" fails EnsureLoadBalancer: nothing applied, nothing concluded, and the note says so.
		"yes is rejected": {ann: map[string]string{annHetznerProxyProtocol: "yes"}, status: ipVIP, providerID: "hcloud://",
			snat: core.Unknown, header: core.Unknown, note: codeValueRejected, msg: "Service shop/web: load-balancer.hetzner.cloud/uses-proxyprotocol: \"yes\""},
		"empty is rejected": {ann: map[string]string{annHetznerProxyProtocol: ""}, status: ipVIP,
			snat: core.Unknown, note: codeValueRejected, msg: "applies nothing"},
		// Robot servers: hrobot:// (v1.19.0); a cluster of both kinds is Hetzner.
		"Robot nodes, default on in the profile": {status: ipVIP, providerID: "hrobot://",
			profile: core.ClusterProfile{ControllerSettings: map[string]string{envHetznerUsesProxyProtocol: "t"}},
			snat:    core.Yes, header: core.Yes, remedy: core.ThroughLB, to: "to v1.29.1 or later"},
		// The environment default exists from v1.29.0: an older controller ignores it.
		"a default an older controller ignores": {status: ipVIP, providerID: "hcloud://",
			profile: core.ClusterProfile{CCMVersion: "v1.28.2", ControllerSettings: map[string]string{envHetznerUsesProxyProtocol: "true"}},
			snat:    core.Unknown, note: codeValueIgnored, msg: "reads from v1.29.0 on; it is v1.28.2"},
		"a profile value the controller refuses at start": {status: ipVIP, providerID: "hcloud://",
			profile: core.ClusterProfile{ControllerSettings: map[string]string{envHetznerUsesProxyProtocol: "yes"}},
			snat:    core.Unknown, note: codeValueRejected, msg: "refuses at start"},
		// The release from the controller's image: v1.29.1 already publishes Proxy for the
		// default, so a VIP status means the default is not on.
		"the controller's release from its image": {ann: map[string]string{annHetznerProxyProtocol: "true"}, status: ipVIP, extra: []runtime.Object{ccm("v1.20.0")},
			snat: core.Yes, header: core.Yes, remedy: core.ThroughLB, to: "to v1.21.0 or later (it is v1.20.0, from the image of Pod kube-system/hccm)"},
		"a release that publishes Proxy: no upgrade, the status lags": {ann: map[string]string{annHetznerProxyProtocol: "true"}, status: ipVIP,
			profile: core.ClusterProfile{CCMVersion: "v1.35.0"}, snat: core.Yes, header: core.Yes, note: codeCCMLagging, msg: "v1.35.0 (the profile's ccmVersion)"},
		"an HTTPS listener ends TLS": {ann: map[string]string{annHetznerProtocol: "HTTPS"}, status: ipVIP,
			snat: core.Yes, tls: core.Yes},
		"protocol udp is rejected": {ann: map[string]string{annHetznerProtocol: "udp"}, status: ipVIP,
			snat: core.Unknown, note: codeValueRejected, msg: "load-balancer.hetzner.cloud/protocol: \"udp\""},
	} {
		t.Run(name, func(t *testing.T) {
			svc := cloudService("web", tc.ann, "TCP", tc.status)
			tc.profile.ProxyMode, tc.profile.KubeProxyVersion, tc.profile.KubernetesVersion = core.ProxyModeIPTables, "v1.32.4", "v1.32.4"
			objs := append([]runtime.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{ProviderID: tc.providerID + "1"}}}, tc.extra...)
			c, err := core.NewCluster(tc.profile, objs...)
			if err != nil {
				t.Fatal(err)
			}
			res, err := core.Evaluate(NewDialect(nil), svc, c, core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			e := &res.Exposure
			if e.LBSourceNAT != tc.snat || e.Dependence().ProxyHeader != tc.header || e.Needs.TLS != tc.tls {
				t.Errorf("snat %s header %s tls %s, want %s %s %s; reasons %v; notes %v", e.LBSourceNAT, e.Dependence().ProxyHeader, e.Needs.TLS, tc.snat, tc.header, tc.tls, e.Reasons, e.Notes)
			}
			if tc.note != "" && !hasNote(e.Notes, tc.note, tc.msg) {
				t.Errorf("no %s note with %q: %v", tc.note, tc.msg, e.Notes)
			}
			if tc.remedy != "" && (res.Decision.Remedy != tc.remedy || !strings.Contains(res.Decision.Action, tc.to)) {
				t.Errorf("decision %s %q, want %s %q", res.Decision.Remedy, res.Decision.Action, tc.remedy, tc.to)
			}
		})
	}
}

func hasNote(notes []core.Reason, code core.Code, msg string) bool {
	for _, n := range notes {
		if n.Code == code && strings.Contains(n.Message, msg) {
			return true
		}
	}
	return false
}

// TestHetznerUserIPModeAndController: the ipMode the user's annotation makes the controller
// publish, and the controller's settings as a host states them.
func TestHetznerUserIPModeAndController(t *testing.T) {
	for value, want := range map[string]corev1.LoadBalancerIPMode{"True": corev1.LoadBalancerIPModeProxy, "0": corev1.LoadBalancerIPModeVIP, "yes": "", absent: ""} {
		mode, r, ok := UserIPMode(annotated(annHetznerProxyProtocol, value), nil)
		if mode != want || ok != (want != "") || ok && (r.Code != CodeUserIPMode || !strings.Contains(r.Message, annHetznerProxyProtocol+": "+quote(value))) {
			t.Errorf("%q: %q %v %+v, want %q", value, mode, ok, r, want)
		}
	}
	p := core.ClusterProfile{ControllerSettings: map[string]string{"OTHER": "x"}}
	HetznerController{Version: "v1.29.1", UsesProxyProtocol: "true"}.Overlay(&p)
	if p.CCMVersion != "v1.29.1" || p.ControllerSettings[envHetznerUsesProxyProtocol] != "true" || p.ControllerSettings["OTHER"] != "x" {
		t.Errorf("profile after Overlay: %+v", p)
	}
	got := SettingsFromEnv(func(n string) (string, bool) { return "1", n == envHetznerUsesProxyProtocol })
	want := map[string]string{envHetznerUsesProxyProtocol: "1", envLinodeHostnameOnly: "false"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SettingsFromEnv, a fork's environment (-want +got):\n%s", diff)
	}
	// Unset, HCCM behaves as "false"; DigitalOcean's default depends on its release: left out.
	if got := SettingsFromEnv(func(string) (string, bool) { return "", false }); got[envHetznerUsesProxyProtocol] != "false" || got[envDODefaultLBType] != "" {
		t.Errorf("SettingsFromEnv, nothing set = %v", got)
	}
}
