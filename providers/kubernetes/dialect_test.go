package kubernetes

import (
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

var (
	none        []core.PreconditionKind
	unknown     = []core.PreconditionKind{core.PreconditionUnknown}
	unsupported = []core.PreconditionKind{core.PreconditionUnsupported}
)

// Every rule of DOMAIN.md §5 this dialect applies, as a case read from real YAML.
func TestInterceptionCases(t *testing.T) {
	type want struct {
		intercept core.Fact
		scope     core.Scope
		snat      core.Fact
		risk      core.Risk
		remedy    core.Remedy
		codes     []core.Code
		vipUnmet  []core.PreconditionKind
		// sepUnmet is a precondition kind node separation must list besides clients-undeclared.
		sepUnmet core.PreconditionKind
	}
	cases := map[string]struct {
		reason     string
		file       string
		want       want
		cloudFixes int
	}{
		"VIPIP": {
			reason: "An ip with ipMode VIP is intercepted by kube-proxy iptables; externalTrafficPolicy Cluster masquerades it.",
			file:   "intercept-vip-iptables.yaml",
			// Azure's load balancer passes the client address through (docs/clouds.md).
			want: want{intercept: core.Yes, scope: core.Private, snat: core.No, risk: core.RiskNone, remedy: core.RemedyNone,
				codes:    []core.Code{"k8s-ipmode-vip", "k8s-kube-proxy-programs-vip", "k8s-intercept-masquerade", "k8s-scope-annotation", "node-intercepts-vip", "k8s-cloud-lb-default"},
				vipUnmet: none},
		},
		"IPWithoutIPMode": {
			reason: "An ip without ipMode is defaulted to VIP and intercepted (nftables, externalTrafficPolicy Local: no masquerade claimed).",
			file:   "intercept-defaulted-nftables.yaml",
			want: want{intercept: core.Yes, scope: core.Private, snat: core.No, risk: core.RiskNone, remedy: core.RemedyNone,
				codes: []core.Code{"k8s-ipmode-defaulted", "k8s-kube-proxy-programs-vip"}, vipUnmet: none},
		},
		"VIPIPVS": {
			reason: "ipvs intercepts VIP-mode IPs (bound to kube-ipvs0) and warns about LB health probes.",
			file:   "intercept-vip-ipvs.yaml",
			want: want{intercept: core.Yes, scope: core.Private, snat: core.No, risk: core.RiskNone, remedy: core.RemedyNone,
				codes: []core.Code{"k8s-ipmode-vip", "k8s-kube-proxy-programs-vip", "k8s-ipvs-lb-probe"}, vipUnmet: none},
		},
		"ProxyKubeProxy1.30": {
			reason: "kube-proxy 1.30 skips Proxy-mode IPs: traffic reaches a private LB without source NAT.",
			file:   "proxy-kube-proxy-1.30.yaml",
			want: want{intercept: core.No, scope: core.Private, snat: core.No, risk: core.RiskAtRisk, remedy: core.InterceptVIP,
				codes: []core.Code{"k8s-ipmode-proxy", "k8s-kube-proxy-honours-proxy", "through-lb", "same-node-loop"}, vipUnmet: none},
		},
		"ProxyKubeProxy1.29": {
			reason: "kube-proxy 1.29 (gate alpha, off) ignores Proxy and intercepts.",
			file:   "proxy-kube-proxy-1.29.yaml",
			want: want{intercept: core.Yes, scope: core.Private, snat: core.No, risk: core.RiskNone, remedy: core.RemedyNone,
				codes: []core.Code{"k8s-ipmode-proxy", "k8s-kube-proxy-1.29-ignores-proxy"}, vipUnmet: none, sepUnmet: core.PreconditionVersion},
		},
		"ProxyKubeProxy1.27Skew": {
			reason: "kube-proxy 1.27, three minors behind a 1.30 API server, predates ipMode and intercepts.",
			file:   "proxy-kube-proxy-1.27-skew.yaml",
			want: want{intercept: core.Yes, scope: core.Private, snat: core.No, risk: core.RiskNone, remedy: core.RemedyNone,
				codes: []core.Code{"k8s-kube-proxy-predates-ipmode"}, vipUnmet: none, sepUnmet: core.PreconditionVersion},
		},
		"ProxySkewUnknown": {
			reason: "No kube-proxy version and a 1.31 control plane: kube-proxy may be 1.28, which ignores Proxy.",
			file:   "proxy-skew-unknown.yaml",
			want: want{intercept: core.Unknown, scope: core.Private, snat: core.No, risk: core.RiskUnknown, remedy: core.InterceptVIP,
				codes: []core.Code{"k8s-kube-proxy-skew-unknown", "intercept-unknown"}, vipUnmet: none, sepUnmet: core.PreconditionUnknown},
		},
		"ProxySkewHonours": {
			reason: "No kube-proxy version but a 1.34 control plane: the oldest kube-proxy allowed (1.31) honours Proxy.",
			file:   "proxy-skew-honours.yaml",
			want: want{intercept: core.No, scope: core.Private, snat: core.No, risk: core.RiskAtRisk, remedy: core.InterceptVIP,
				codes: []core.Code{"k8s-kube-proxy-skew-honours"}, vipUnmet: none},
		},
		"ProxySkewIgnores": {
			reason: "No kube-proxy version and a 1.29 control plane: kube-proxy is 1.29 or older and intercepts.",
			file:   "proxy-skew-ignores.yaml",
			want: want{intercept: core.Yes, scope: core.Private, snat: core.No, risk: core.RiskNone, remedy: core.RemedyNone,
				codes: []core.Code{"k8s-kube-proxy-skew-ignores"}, vipUnmet: none, sepUnmet: core.PreconditionVersion},
		},
		"ProxyVersionUnknown": {
			reason: "No version at all: whether kube-proxy honours Proxy is unknown.",
			file:   "proxy-version-unknown.yaml",
			want: want{intercept: core.Unknown, scope: core.Private, snat: core.No, risk: core.RiskUnknown, remedy: core.InterceptVIP,
				codes: []core.Code{"k8s-kube-proxy-version-unknown"}, vipUnmet: none, sepUnmet: core.PreconditionUnknown},
		},
		"ProxyCilium1.16": {
			reason: "Cilium 1.16 predates ipMode and intercepts.",
			file:   "proxy-cilium-1.16.yaml",
			want: want{intercept: core.Yes, scope: core.Private, snat: core.No, risk: core.RiskNone, remedy: core.RemedyNone,
				codes: []core.Code{"k8s-cilium-predates-ipmode"}, vipUnmet: none, sepUnmet: core.PreconditionVersion},
		},
		"ProxyCilium1.17": {
			reason: "Cilium 1.17 skips Proxy-mode IPs.",
			file:   "proxy-cilium-1.17.yaml",
			want: want{intercept: core.No, scope: core.Private, snat: core.No, risk: core.RiskAtRisk, remedy: core.InterceptVIP,
				codes: []core.Code{"k8s-cilium-honours-proxy"}, vipUnmet: none},
		},
		"ProxyCilium1.18.0": {
			reason: "Cilium 1.18.0 regressed and intercepts Proxy-mode IPs.",
			file:   "proxy-cilium-1.18.0.yaml",
			want: want{intercept: core.Yes, scope: core.Private, snat: core.No, risk: core.RiskNone, remedy: core.RemedyNone,
				codes: []core.Code{"k8s-cilium-1.18.0-ignores-proxy"}, vipUnmet: none, sepUnmet: core.PreconditionVersion},
		},
		"ProxyCilium1.18.1": {
			reason: "Cilium 1.18.1 fixed the regression.",
			file:   "proxy-cilium-1.18.1.yaml",
			want: want{intercept: core.No, scope: core.Private, snat: core.No, risk: core.RiskAtRisk, remedy: core.InterceptVIP,
				codes: []core.Code{"k8s-cilium-honours-proxy"}, vipUnmet: none},
		},
		"ProxyCilium1.18NoPatch": {
			reason: "Cilium 1.18 without a patch version could be 1.18.0: unknown.",
			file:   "proxy-cilium-1.18-no-patch.yaml",
			want: want{intercept: core.Unknown, scope: core.Private, snat: core.No, risk: core.RiskUnknown, remedy: core.InterceptVIP,
				codes: []core.Code{"k8s-cilium-1.18.0-ignores-proxy"}, vipUnmet: none, sepUnmet: core.PreconditionUnknown},
		},
		"ProxyCiliumVersionUnknown": {
			reason: "Cilium without a version: unknown.",
			file:   "proxy-cilium-unknown.yaml",
			want: want{intercept: core.Unknown, scope: core.Private, snat: core.No, risk: core.RiskUnknown, remedy: core.InterceptVIP,
				codes: []core.Code{"k8s-cilium-version-unknown"}, vipUnmet: none, sepUnmet: core.PreconditionUnknown},
		},
		"ProxyOtherEBPF": {
			reason: "An eBPF dataplane other than Cilium: unknown.",
			file:   "proxy-ebpf-other.yaml",
			want: want{intercept: core.Unknown, scope: core.Private, snat: core.No, risk: core.RiskUnknown, remedy: core.InterceptVIP,
				codes: []core.Code{"k8s-ebpf-ipmode-unknown"}, vipUnmet: none, sepUnmet: core.PreconditionUnknown},
		},
		"ProxyModeUnknown": {
			reason: "Without a proxy mode even a VIP-mode IP is not known to be intercepted; only DNS steering is ready.",
			file:   "proxy-mode-unknown.yaml",
			want: want{intercept: core.Unknown, scope: core.Private, snat: core.No, risk: core.RiskUnknown, remedy: core.DNSSteering,
				codes: []core.Code{"k8s-proxy-mode-unknown"}, vipUnmet: unknown},
		},
		"HostnameOnly": {
			reason: "AWS internal NLB (cloud-provider-aws#1160): hostname status, client IP kept: at risk; VIP is unsupported; the controller turns preservation off in place (v1.34.0+).",
			file:   "hostname-only-aws-nlb.yaml",
			want: want{intercept: core.No, scope: core.Private, snat: core.No, risk: core.RiskAtRisk, remedy: core.LBSourceNAT,
				codes:    []core.Code{"k8s-hostname-only", "k8s-aws-nlb-preserves-client-ip", "k8s-scope-annotation", "same-node-loop"},
				vipUnmet: unsupported},
			// preserve_client_ip.enabled=false, which the cloud-controller-manager applies in
			// place from v1.34.0 (v1.33.3, v1.32.6; its release is not known here).
			cloudFixes: 1,
		},
		"NotProvisioned": {
			reason: "No status yet: interception unknown, VIP not yet possible.",
			file:   "not-provisioned.yaml",
			want: want{intercept: core.Unknown, scope: core.Private, snat: core.No, risk: core.RiskUnknown, remedy: core.DNSSteering,
				codes: []core.Code{"k8s-not-provisioned"}, vipUnmet: unknown, sepUnmet: core.PreconditionUnknown},
		},
		"MixedEntries": {
			reason: "A VIP IPv4 address and a Proxy IPv6 address: clients of the IPv6 one can loop.",
			file:   "mixed-entries.yaml",
			want: want{intercept: core.No, scope: core.Private, snat: core.No, risk: core.RiskAtRisk, remedy: core.InterceptVIP,
				codes: []core.Code{"k8s-mixed-entries", "k8s-ipmode-vip", "k8s-ipmode-proxy"}, vipUnmet: none},
		},
	}
	// What the backend sees for intercepted traffic comes from dialect.ServiceBase; the dialect
	// only explains it and prices the intercept-vip offer with it.
	masquerades := map[string]core.Fact{
		"VIPIP":           core.Yes, // iptables, externalTrafficPolicy Cluster
		"IPWithoutIPMode": core.No,  // nftables, externalTrafficPolicy Local
		"ProxyCilium1.16": core.Unknown,
	}
	d := NewDialect(nil)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			set, c := loadCase(t, tc.file)
			svc := find(t, set, "Service", "web")
			r, err := core.Evaluate(d, svc, c, c.Profile.Policy)
			if err != nil {
				t.Fatalf("%s\nEvaluate: %v", tc.reason, err)
			}
			recordResult(r)
			e := &r.Exposure
			got := want{intercept: e.Intercept, scope: e.Scope, snat: e.LBSourceNAT,
				risk: r.Assessment.Risk, remedy: r.Decision.Remedy, vipUnmet: unmetKinds(offer(r, core.InterceptVIP))}
			seen := codes(e.Reasons, e.Notes, r.Assessment.Reasons)
			for _, c := range tc.want.codes {
				if seen[c] {
					got.codes = append(got.codes, c)
				}
			}
			got.sepUnmet = tc.want.sepUnmet
			if tc.want.sepUnmet != "" && !containsKind(unmetKinds(offer(r, core.NodeSeparation)), tc.want.sepUnmet) {
				got.sepUnmet = ""
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\n-want +got:\n%s\nreasons: %v\nnotes: %v", tc.reason, diff, e.Reasons, e.Notes)
			}
			if m, ok := masquerades[name]; ok && e.InterceptMasquerades != m {
				t.Errorf("interceptMasquerades = %v, want %v (dialect.KubeProxyMasquerades)", e.InterceptMasquerades, m)
			}
			if e.Intercept == core.Yes && e.InterceptMasquerades == core.Yes && !codes(e.Reasons)["k8s-intercept-masquerade"] {
				t.Error("masquerading interception without k8s-intercept-masquerade")
			}
			if e.Provider != Name {
				t.Errorf("provider = %q, want %q", e.Provider, Name)
			}
			// The generic three, then any fix of the cloud's own (clouds.go) that applies.
			if len(r.Offers) != 3+tc.cloudFixes {
				t.Errorf("offers = %d, want intercept-vip, node-separation, dns-steering and %d cloud fixes", len(r.Offers), tc.cloudFixes)
			}
		})
	}
}

func containsKind(list []core.PreconditionKind, k core.PreconditionKind) bool {
	for _, x := range list {
		if x == k {
			return true
		}
	}
	return false
}

// One Service per row of the internal-LB annotation table.
func TestScopeAnnotations(t *testing.T) {
	cases := map[string]struct {
		scope core.Scope
		codes []core.Code
		not   []core.Code
	}{
		"gke-internal":             {scope: core.Private, codes: []core.Code{"k8s-scope-annotation"}},
		"gke-deprecated-key":       {scope: core.Private},
		"gke-deprecated-lowercase": {scope: core.Private},
		"gke-new-key-wins":         {scope: core.Public, codes: []core.Code{"public-lb"}},
		"gke-class":                {scope: core.Private},
		"aws-internal-true":        {scope: core.Private},
		"aws-internal-legacy-cidr": {scope: core.Private},
		"aws-internal-false":       {scope: core.Public},
		"aws-lbc-internal":         {scope: core.Private},
		"aws-lbc-internet-facing":  {scope: core.Public},
		"azure-internal":           {scope: core.Private},
		"azure-not-true":           {scope: core.Public},
		"oci-lb-internal":          {scope: core.Private},
		"oci-nlb-internal":         {scope: core.Private},
		"openstack-internal":       {scope: core.Private},
		"ibm-private":              {scope: core.Private},
		"baidu-internal":           {scope: core.Private},
		"tencent-subnet":           {scope: core.Private},
		"alibaba-intranet":         {scope: core.Private},
		"digitalocean-internal":    {scope: core.Private},
		"hetzner-private":          {scope: core.Private},
		"volcengine-private":       {scope: core.Private},
		"helm-chart-all-internal":  {scope: core.Private},
		"conflict":                 {scope: core.ScopeUnknown, codes: []core.Code{"k8s-scope-conflict", "lb-scope-unknown"}, not: []core.Code{"k8s-scope-annotation"}},
		"unrecognised-value":       {scope: core.ScopeUnknown, codes: []core.Code{"k8s-scope-value-unrecognised", "k8s-scope-undeclared"}},
		"no-annotation":            {scope: core.ScopeUnknown, codes: []core.Code{"k8s-scope-undeclared", "k8s-private-addresses", "lb-scope-unknown"}},
		"no-annotation-public-ip":  {scope: core.ScopeUnknown, codes: []core.Code{"k8s-scope-undeclared"}, not: []core.Code{"k8s-private-addresses"}},
		"override-wins":            {scope: core.Public, codes: []core.Code{"loopguard-annotation"}, not: []core.Code{"k8s-scope-annotation"}},
	}
	set, c := loadCase(t, "scope-annotations.yaml")
	d := NewDialect(nil)
	names := map[string]bool{}
	for _, o := range set.Objects {
		if s, ok := o.Object.(*corev1.Service); ok {
			names[s.Name] = true
		}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			delete(names, name)
			r, err := core.Evaluate(d, find(t, set, "Service", name), c, core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			recordResult(r)
			e := &r.Exposure
			if e.Scope != tc.scope {
				t.Errorf("scope = %q, want %q\nreasons: %v\nnotes: %v", e.Scope, tc.scope, e.Reasons, e.Notes)
			}
			seen := codes(e.Reasons, e.Notes, r.Assessment.Reasons)
			for _, code := range tc.codes {
				if !seen[code] {
					t.Errorf("missing reason %s\nreasons: %v\nnotes: %v", code, e.Reasons, e.Notes)
				}
			}
			for _, code := range tc.not {
				if seen[code] {
					t.Errorf("unexpected reason %s", code)
				}
			}
		})
	}
	t.Run("every Service has a case", func(t *testing.T) {
		for n := range names {
			t.Errorf("Service %s in scope-annotations.yaml has no case", n)
		}
	})
}

// Source NAT only from documented peer behaviour.
func TestSourceNATPeers(t *testing.T) {
	cases := map[string]struct {
		snat, proxyProtocol core.Fact
		scope               core.Scope
		risk                core.Risk
		code                core.Code
		vipUnmet            []core.PreconditionKind
	}{
		"hetzner-proxy-protocol":   {snat: core.Yes, proxyProtocol: core.Yes, scope: core.Private, risk: core.RiskNone, code: "k8s-proxy-protocol-lb-proxies", vipUnmet: unsupported},
		"openstack-proxy-protocol": {snat: core.Yes, proxyProtocol: core.Yes, scope: core.Private, risk: core.RiskNone, code: "k8s-proxy-protocol-lb-proxies", vipUnmet: []core.PreconditionKind{core.PreconditionUnsupported, core.PreconditionUnsupported}},
		"aws-ccm-nlb":              {snat: core.No, scope: core.Private, risk: core.RiskAtRisk, code: "k8s-aws-nlb-preserves-client-ip", vipUnmet: unsupported},
		"aws-lbc-preserve-on":      {snat: core.No, scope: core.Private, risk: core.RiskAtRisk, code: "k8s-aws-nlb-preserves-client-ip", vipUnmet: unsupported},
		"aws-lbc-preserve-off":     {snat: core.Yes, scope: core.Private, risk: core.RiskNone, code: "k8s-aws-nlb-client-ip-off", vipUnmet: unsupported},
		"aws-lbc-preserve-off-udp": {snat: core.No, scope: core.Private, risk: core.RiskAtRisk, code: "k8s-aws-nlb-preserves-client-ip", vipUnmet: unsupported},
		"oci-nlb-preserve-source":  {snat: core.No, scope: core.Private, risk: core.RiskAtRisk, code: "k8s-oci-nlb-preserve-source", vipUnmet: none},
		"conflict":                 {snat: core.Unknown, scope: core.ScopeUnknown, risk: core.RiskUnknown, code: "k8s-lb-source-nat-conflict", vipUnmet: none},
	}
	set, c := loadCase(t, "source-nat.yaml")
	d := NewDialect(nil)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := core.Evaluate(d, find(t, set, "Service", name), c, core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			recordResult(r)
			e := &r.Exposure
			if e.LBSourceNAT != tc.snat || e.ProxyProtocol != tc.proxyProtocol || e.Scope != tc.scope || r.Assessment.Risk != tc.risk {
				t.Errorf("snat=%v proxyProtocol=%v scope=%q risk=%s; want %v %v %q %s\nreasons: %v\nnotes: %v",
					e.LBSourceNAT, e.ProxyProtocol, e.Scope, r.Assessment.Risk, tc.snat, tc.proxyProtocol, tc.scope, tc.risk, e.Reasons, e.Notes)
			}
			if !codes(e.Reasons, e.Notes)[tc.code] {
				t.Errorf("missing reason %s: %v %v", tc.code, e.Reasons, e.Notes)
			}
			if diff := cmp.Diff(tc.vipUnmet, unmetKinds(offer(r, core.InterceptVIP))); diff != "" {
				t.Errorf("intercept-vip unmet -want +got:\n%s", diff)
			}
		})
	}
	t.Run("OKE action names the ingress-ip-mode annotation", func(t *testing.T) {
		tr, err := d.Translate(find(t, set, "Service", "oci-nlb-preserve-source"), c)
		if err != nil {
			t.Fatal(err)
		}
		if a := tr.Offers[0].Action; !strings.Contains(a, "oci.oraclecloud.com/ingress-ip-mode: VIP") || !strings.Contains(a, "from Proxy to VIP for 10.0.0.20") {
			t.Errorf("action = %q", a)
		}
	})
}

func TestIngressIsNotExposed(t *testing.T) {
	set, c := loadCase(t, "ingress.yaml")
	d := NewDialect(nil)
	_, err := core.Evaluate(d, find(t, set, "Ingress", "shop"), c, core.Policy{})
	if !errors.Is(err, core.ErrNotExposed) || !errors.Is(err, core.ErrNotExposed) {
		t.Fatalf("err = %v, want one matching core.ErrNotExposed", err)
	}
	if !strings.Contains(err.Error(), "ingress controller's LoadBalancer Service") || !strings.Contains(err.Error(), "Ingress shop/shop") {
		t.Errorf("message = %q", err)
	}
	if _, err := d.Translate(find(t, set, "Service", "internal-only"), c); !errors.Is(err, core.ErrNotExposed) {
		t.Errorf("ClusterIP Service: err = %v, want not exposed", err)
	}
	if _, err := d.Translate(&corev1.Pod{}, c); !errors.Is(err, core.ErrNotExposed) {
		t.Errorf("Pod: err = %v, want not exposed", err)
	}
	if _, err := d.Translate((*corev1.Service)(nil), c); !errors.Is(err, core.ErrNotExposed) {
		t.Errorf("nil Service: err = %v, want not exposed", err)
	}
	if !Recognizes(find(t, set, "Ingress", "shop")) {
		t.Error("Recognizes is false; the fallback dialect recognises everything")
	}
}

func TestInvalidInput(t *testing.T) {
	cases := map[string][]string{
		"bad-status": {
			"FieldValueInvalid status.loadBalancer.ingress[0].ip",
			"FieldValueForbidden status.loadBalancer.ingress[1].ipMode",
			"FieldValueNotSupported status.loadBalancer.ingress[2].ipMode",
			"FieldValueInvalid status.loadBalancer.ingress[3].hostname",
		},
		"bad-both": {
			"FieldValueNotSupported metadata.annotations[loopguard.io/lb-scope]",
			"FieldValueInvalid status.loadBalancer.ingress[0].ip",
		},
		"bad-annotation": {
			"FieldValueNotSupported metadata.annotations[loopguard.io/lb-source-nat]",
		},
	}
	set, c := loadCase(t, "invalid.yaml")
	d := NewDialect(nil)
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			svc := find(t, set, "Service", name).(*corev1.Service)
			before := svc.DeepCopy()
			tr, err := d.Translate(svc, c)
			if tr != nil {
				t.Errorf("got a translation with an error: %+v", tr)
			}
			var ie *core.InvalidError
			if !errors.As(err, &ie) || !errors.Is(err, core.ErrInvalid) {
				t.Fatalf("err = %v, want *core.InvalidError", err)
			}
			var got []string
			for _, fe := range ie.Errs {
				got = append(got, string(fe.Type)+" "+fe.Field)
			}
			sort.Strings(got)
			sort.Strings(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("-want +got:\n%s\n%v", diff, err)
			}
			if ie.Object.Name != name || ie.Object.Kind != "Service" {
				t.Errorf("object = %v", ie.Object)
			}
			if !cmp.Equal(before, svc) {
				t.Error("Translate modified its input")
			}
		})
	}
}

func TestNilClusterAndOptions(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	svc.Name, svc.Namespace = "web", "shop"
	svc.Annotations = map[string]string{"example.com/private": "yes"}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.1.2.3"}}
	opts := &Options{ScopeAnnotations: []ScopeAnnotation{{Cloud: "Example", Key: "example.com/private", Private: []string{"yes"}, Source: "test"}}}
	d := NewDialect(opts)
	opts.ScopeAnnotations[0].Private = []string{"no"} // the dialect keeps its own copy
	tr, err := d.Translate(svc, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := tr.Exposure
	if e.Scope != core.Private || e.Intercept != core.Unknown {
		t.Errorf("scope=%q intercept=%v, want private, unknown (nothing known about the cluster)", e.Scope, e.Intercept)
	}
	if d.Name() != Name || len(d.Rules()) == 0 {
		t.Error("Name or Rules")
	}
	if _, err := new(Dialect).Translate(svc, nil); err != nil {
		t.Errorf("zero Dialect: %v", err)
	}
}

func TestRules(t *testing.T) {
	seen := map[core.Code]bool{}
	for _, r := range NewDialect(nil).Rules() {
		if !strings.HasPrefix(string(r.Code), "k8s-") {
			t.Errorf("%s: code must start with k8s-", r.Code)
		}
		if seen[r.Code] {
			t.Errorf("%s: duplicate code", r.Code)
		}
		seen[r.Code] = true
		if r.Summary == "" || r.Source == "" {
			t.Errorf("%s: empty summary or source", r.Code)
		}
	}
	for _, r := range append(core.Rules(), dialect.Rules()...) {
		if seen[r.Code] {
			t.Errorf("%s: clashes with a core code", r.Code)
		}
	}
}

// TestMain-free check run last by name order is not guaranteed, so the documented-codes check
// walks the whole case set itself.
func TestEveryEmittedCodeIsDocumented(t *testing.T) {
	d := NewDialect(nil)
	for _, file := range []string{"scope-annotations.yaml", "source-nat.yaml", "mixed-entries.yaml", "proxy-mode-unknown.yaml",
		"not-provisioned.yaml", "hostname-only-aws-nlb.yaml", "intercept-vip-ipvs.yaml", "intercept-vip-iptables.yaml"} {
		set, c := loadCase(t, file)
		for _, o := range set.Objects {
			if _, ok := o.Object.(*corev1.Service); !ok {
				continue
			}
			r, err := core.Evaluate(d, o.Object, c, core.Policy{})
			if err != nil {
				continue
			}
			recordResult(r)
		}
	}
	known := map[core.Code]bool{}
	for _, r := range append(append(core.Rules(), dialect.Rules()...), d.Rules()...) {
		known[r.Code] = true
	}
	emitted.Lock()
	defer emitted.Unlock()
	for c := range emitted.codes {
		if !known[c] {
			t.Errorf("code %s is emitted but not in any Rules()", c)
		}
	}
}

// The dialect is shared by a controller's workers: translations race on its cache.
func TestConcurrentTranslate(t *testing.T) {
	d := NewDialect(nil)
	files := []string{"proxy-kube-proxy-1.30.yaml", "proxy-cilium-1.17.yaml", "proxy-skew-unknown.yaml", "hostname-only-aws-nlb.yaml"}
	type input struct {
		svc *corev1.Service
		c   *core.Cluster
	}
	var inputs []input
	for _, f := range files {
		set, c := loadCase(t, f)
		inputs = append(inputs, input{find(t, set, "Service", "web").(*corev1.Service), c})
	}
	want := make([]core.Fact, len(inputs))
	for i, in := range inputs {
		tr, err := d.Translate(in.svc, in.c)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = tr.Exposure.Intercept
	}
	done := make(chan error)
	for g := 0; g < 8; g++ {
		go func(g int) {
			var err error
			for n := 0; n < 50 && err == nil; n++ {
				i := (g + n) % len(inputs)
				tr, e := d.Translate(inputs[i].svc, inputs[i].c)
				switch {
				case e != nil:
					err = e
				case tr.Exposure.Intercept != want[i]:
					err = errors.New("verdict changed under concurrency")
				}
			}
			done <- err
		}(g)
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
