package tencent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
	"github.com/loopguard/loopguard/providers/tencent"
)

// TestPlanInterceptVIP covers solution 1: the annotation by server-side apply, FAQ Q3's notes,
// and the kube-proxy precondition.
func TestPlanInterceptVIP(t *testing.T) {
	ann := tencent.AnnotationPreventLoopback
	tests := map[string]struct {
		reason  string
		svc     *corev1.Service
		profile core.ClusterProfile
		// force overrides Decide, as a host that lets the user pick the remedy does.
		force       bool
		wantChanges []core.Change
		wantBlocked error
		wantNeed    string
	}{
		"annotates": {
			reason:  "an IPVS cluster of regular nodes loops; the default policy intercepts the VIP",
			svc:     privateService("web", nil, "TCP/80"),
			profile: ipvsProfile(),
			wantChanges: []core.Change{{By: core.WriterCluster, Object: &core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "default", Name: "web"},
				Field: `metadata.annotations["` + ann + `"]`, To: "true", Strategy: core.StrategyApply,
				Edits:  []core.Edit{{Path: []core.PathElem{dialect.F("metadata"), dialect.F("annotations"), dialect.F(ann)}, Value: "true"}},
				Reason: ruleReason(tencent.CodeOfferPreventLoopback)}},
		},
		"turns an explicit false on": {
			reason:  "prevent-loopback: \"false\" is another value of the field loopguard owns for this remedy",
			svc:     privateService("web", map[string]string{ann: "false"}, "TCP/80"),
			profile: ipvsProfile(),
			wantChanges: []core.Change{{By: core.WriterCluster, Object: &core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "default", Name: "web"},
				Field: `metadata.annotations["` + ann + `"]`, From: "false", To: "true", Strategy: core.StrategyApply,
				Edits:  []core.Edit{{Path: []core.PathElem{dialect.F("metadata"), dialect.F("annotations"), dialect.F(ann)}, Value: "true"}},
				Reason: ruleReason(tencent.CodeOfferPreventLoopback)}},
		},
		"already set": {
			reason:  "idempotence: the annotation is there, so the plan is empty even when the remedy is asked for",
			svc:     privateService("web", map[string]string{ann: "true"}, "TCP/80"),
			profile: ipvsProfile(),
			force:   true,
		},
		"kube-proxy too old": {
			reason:  "v1.18.4-tke.19 is below the 1.18 minimum v1.18.4-tke.20 (intl doc 457/42976): refused, naming the minimum",
			svc:     privateService("web", nil, "TCP/80"),
			profile: core.ClusterProfile{Provider: tencent.Name, ProxyMode: core.ProxyModeIPVS, KubeProxyVersion: "v1.18.4-tke.19"},
			force:   true,
			wantChanges: []core.Change{{By: core.WriterCluster, Object: &core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "default", Name: "web"},
				Field: `metadata.annotations["` + ann + `"]`, To: "true", Strategy: core.StrategyApply,
				Edits:  []core.Edit{{Path: []core.PathElem{dialect.F("metadata"), dialect.F("annotations"), dialect.F(ann)}, Value: "true"}},
				Reason: ruleReason(tencent.CodeOfferPreventLoopback)}},
			wantBlocked: core.ErrPrecondition,
			wantNeed:    "v1.18.4-tke.20",
		},
		"proxy mode unknown": {
			reason:  "prevent-loopback needs IPVS, and the profile does not say the mode; forced, the plan is refused",
			svc:     privateService("web", nil, "TCP/80"),
			profile: core.ClusterProfile{Provider: tencent.Name},
			force:   true,
			wantChanges: []core.Change{{By: core.WriterCluster, Object: &core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "default", Name: "web"},
				Field: `metadata.annotations["` + ann + `"]`, To: "true", Strategy: core.StrategyApply,
				Edits:  []core.Edit{{Path: []core.PathElem{dialect.F("metadata"), dialect.F("annotations"), dialect.F(ann)}, Value: "true"}},
				Reason: ruleReason(tencent.CodeOfferPreventLoopback)}},
			wantBlocked: core.ErrPrecondition,
		},
		"iptables": {
			reason:  "prevent-loopback only matters in IPVS mode; forced, the plan says so",
			svc:     privateService("web", nil, "TCP/80"),
			profile: core.ClusterProfile{Provider: tencent.Name, ProxyMode: core.ProxyModeIPTables},
			force:   true,
			wantChanges: []core.Change{{By: core.WriterCluster, Object: &core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "default", Name: "web"},
				Field: `metadata.annotations["` + ann + `"]`, To: "true", Strategy: core.StrategyApply,
				Edits:  []core.Edit{{Path: []core.PathElem{dialect.F("metadata"), dialect.F("annotations"), dialect.F(ann)}, Value: "true"}},
				Reason: ruleReason(tencent.CodeOfferPreventLoopback)}},
			wantBlocked: core.ErrUnsupported,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, nil)
			c := cluster(t, tc.profile, tc.svc)
			res, err := core.Evaluate(d.Dialect(), tc.svc, c, core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.force {
				res.Decision = core.Decision{Remedy: core.InterceptVIP, Path: core.PathVIP}
			} else if res.Decision.Remedy != core.InterceptVIP {
				t.Fatalf("decision %s (%s), want intercept-vip", res.Decision.Remedy, res.Decision.Why)
			}
			live := newMemCluster(toUnstructured(t, tc.svc))
			p, err := d.Plan(context.Background(), &core.PlanRequest{Object: tc.svc, Cluster: c, Result: res, Reader: live})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantChanges, p.Changes, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nchanges (-want +got):\n%s", tc.reason, diff)
			}
			if !errors.Is(p.Blocked.Err(), tc.wantBlocked) || (tc.wantBlocked == nil) != (p.Blocked == nil) {
				t.Fatalf("%s\nBlocked = %v, want %v", tc.reason, p.Blocked, tc.wantBlocked)
			}
			if tc.wantNeed != "" {
				var pe *core.PreconditionError
				if !errors.As(p.Blocked.Err(), &pe) || pe.Component != "kube-proxy" || !strings.Contains(pe.Need, tc.wantNeed) || pe.Have != tc.profile.KubeProxyVersion {
					t.Errorf("Blocked = %#v, want a kube-proxy PreconditionError needing %s", p.Blocked, tc.wantNeed)
				}
			}
			// FAQ Q3's caveats travel with the plan.
			for _, code := range []core.Code{tencent.CodeHealthCheckSource, tencent.CodeLongConnections} {
				if !slices.Contains(noteCodes(p), code) {
					t.Errorf("plan notes %v lack %s", noteCodes(p), code)
				}
			}
		})
	}
}

// TestPlanInterceptVIPIngress: prevent-loopback is a layer-4 fix (seeds §4).
func TestPlanInterceptVIPIngress(t *testing.T) {
	d := newDriver(t, nil)
	ing := privateIngress("web", nil)
	c := cluster(t, ipvsProfile(), ing)
	res, err := core.Evaluate(d.Dialect(), ing, c, core.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	res.Decision = core.Decision{Remedy: core.InterceptVIP}
	p, err := d.Plan(context.Background(), &core.PlanRequest{Object: ing, Cluster: c, Result: res})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(p.Blocked.Err(), core.ErrUnsupported) || len(p.Changes) != 0 {
		t.Errorf("plan = %v, Blocked %v; want no change, blocked as unsupported", p, p.Blocked)
	}
}

// configYAML is a TkeServiceConfig full of fields loopguard does not own: other listeners,
// health checks, sessions, domains, an unknown spec field, labels and annotations.
const configYAML = `
apiVersion: cloud.tencent.com/v1alpha1
kind: TkeServiceConfig
metadata:
  name: web-cfg
  namespace: default
  labels: {team: a}
  annotations: {note: hand-written}
spec:
  futureField: {keep: me}
  loadBalancer:
    internetMaxBandwidthOut: 100
    l4Listeners:
    - protocol: TCP
      port: 443
      scheduler: WRR
    - protocol: tcp
      port: 80
      session: {enable: true, sessionExpireTime: 3600}
      healthCheck: {enable: true, intervalTime: 10, sourceIpType: 1}
      snatEnable: false
    - protocol: UDP
      port: 5353
      snatEnable: true
    l7Listeners:
    - protocol: HTTP
      port: 8080
      keepaliveEnable: 0
      domains:
      - domain: a.example.com
        rules: [{url: /, scheduler: WRR}]
`

// TestPlanL4SNAT covers solution 2 through a TkeServiceConfig: the merge into a referenced
// config, creating one (config first, then the reference), -auto configs, and refusals.
func TestPlanL4SNAT(t *testing.T) {
	svcKey := core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "default", Name: "web"}
	cfgKey := func(name string) *core.ObjectKey {
		return &core.ObjectKey{APIVersion: "cloud.tencent.com/v1alpha1", Kind: "TkeServiceConfig", Namespace: "default", Name: name}
	}
	snat := func(proto string, port int64) core.Edit {
		return core.Edit{Path: []core.PathElem{dialect.F("spec"), dialect.F("loadBalancer"), dialect.F("l4Listeners"),
			dialect.K(map[string]any{"protocol": proto, "port": port}), dialect.F("snatEnable")}, Value: true}
	}
	tests := map[string]struct {
		reason  string
		svc     *corev1.Service
		objects []*unstructured.Unstructured
		// force plans lb-snat whatever Decide says (a host may keep deciding from a stale
		// cluster while the live config already has SNAT on).
		force bool
		// fields of the changes (Reason and Template are checked separately)
		want        []core.Change
		wantBlocked error
	}{
		"referenced config": {
			reason:  "only the Service's listeners TCP:80 (spelled tcp in the config) and UDP:53 are edited; TCP:443 and UDP:5353 are not the Service's",
			svc:     privateService("web", map[string]string{tencent.AnnotationServiceConfig: "web-cfg"}, "TCP/80", "UDP/53"),
			objects: []*unstructured.Unstructured{fromYAML(t, configYAML)},
			want: []core.Change{{By: core.WriterCluster, Object: cfgKey("web-cfg"), Strategy: core.StrategyUpdate,
				Field: "spec.loadBalancer.l4Listeners[TCP:80,UDP:53].snatEnable", From: "TCP:80 false, UDP:53 (unset)", To: "true",
				Edits: []core.Edit{snat("tcp", 80), snat("UDP", 53)}}},
		},
		"referenced config already on": {
			reason:  "UDP:5353 already has snatEnable: true: nothing to write",
			svc:     privateService("web", map[string]string{tencent.AnnotationServiceConfig: "web-cfg"}, "UDP/5353"),
			force:   true,
			objects: []*unstructured.Unstructured{fromYAML(t, configYAML)},
		},
		"no config": {
			reason: "the Service references none: create web-loopguard, then reference it",
			svc:    privateService("web", nil, "TCP/80"),
			want: []core.Change{
				{By: core.WriterCluster, Object: cfgKey("web-loopguard"), Strategy: core.StrategyUpdate, Create: true,
					Field: "spec.loadBalancer.l4Listeners[TCP:80].snatEnable", From: "TCP:80 (unset)", To: "true", Edits: []core.Edit{snat("TCP", 80)}},
				{By: core.WriterCluster, Object: &svcKey, Strategy: core.StrategyApply,
					Field: `metadata.annotations["` + tencent.AnnotationServiceConfig + `"]`, To: "web-loopguard",
					Edits: []core.Edit{{Path: []core.PathElem{dialect.F("metadata"), dialect.F("annotations"), dialect.F(tencent.AnnotationServiceConfig)}, Value: "web-loopguard"}}},
			},
		},
		"loopguard's config not yet referenced": {
			reason: "a previous run created web-loopguard and stopped before the reference: merge and reference",
			svc:    privateService("web", nil, "TCP/80"),
			objects: []*unstructured.Unstructured{fromYAML(t, `
apiVersion: cloud.tencent.com/v1alpha1
kind: TkeServiceConfig
metadata: {name: web-loopguard, namespace: default, annotations: {loopguard.io/created-for: Service/web}}
spec: {loadBalancer: {l4Listeners: [{protocol: TCP, port: 80, snatEnable: true}]}}`)},
			want: []core.Change{{By: core.WriterCluster, Object: &svcKey, Strategy: core.StrategyApply,
				Field: `metadata.annotations["` + tencent.AnnotationServiceConfig + `"]`, To: "web-loopguard",
				Edits: []core.Edit{{Path: []core.PathElem{dialect.F("metadata"), dialect.F("annotations"), dialect.F(tencent.AnnotationServiceConfig)}, Value: "web-loopguard"}}}},
		},
		"someone else's config by loopguard's name": {
			reason: "web-loopguard exists without loopguard's mark: never taken over",
			svc:    privateService("web", nil, "TCP/80"),
			objects: []*unstructured.Unstructured{fromYAML(t, `
apiVersion: cloud.tencent.com/v1alpha1
kind: TkeServiceConfig
metadata: {name: web-loopguard, namespace: default}
spec: {loadBalancer: {l4Listeners: [{protocol: TCP, port: 80}]}}`)},
			wantBlocked: core.ErrConflict,
		},
		"auto config": {
			reason: "-auto: merge into web-auto-service-config, which TKE's controller created",
			svc:    privateService("web", map[string]string{tencent.AnnotationServiceConfigAuto: "true"}, "TCP/80"),
			objects: []*unstructured.Unstructured{fromYAML(t, `
apiVersion: cloud.tencent.com/v1alpha1
kind: TkeServiceConfig
metadata: {name: web-auto-service-config, namespace: default}
spec: {loadBalancer: {l4Listeners: [{protocol: TCP, port: 80, scheduler: WRR}]}}`)},
			want: []core.Change{{By: core.WriterCluster, Object: cfgKey("web-auto-service-config"), Strategy: core.StrategyUpdate,
				Field: "spec.loadBalancer.l4Listeners[TCP:80].snatEnable", From: "TCP:80 (unset)", To: "true", Edits: []core.Edit{snat("TCP", 80)}}},
		},
		"auto config not created yet": {
			reason:      "loopguard does not create the controller's -auto config in its place: retry later",
			svc:         privateService("web", map[string]string{tencent.AnnotationServiceConfigAuto: "true"}, "TCP/80"),
			wantBlocked: core.ErrRetryLater,
		},
		"referenced config missing": {
			reason: "the Service names web-cfg, which does not exist: create it under that name; the reference is there already",
			svc:    privateService("web", map[string]string{tencent.AnnotationServiceConfig: "web-cfg"}, "TCP/80"),
			want: []core.Change{{By: core.WriterCluster, Object: cfgKey("web-cfg"), Strategy: core.StrategyUpdate, Create: true,
				Field: "spec.loadBalancer.l4Listeners[TCP:80].snatEnable", From: "TCP:80 (unset)", To: "true", Edits: []core.Edit{snat("TCP", 80)}}},
		},
		"sctp": {
			reason:      "CLB layer-4 listeners are TCP or UDP",
			svc:         privateService("web", nil, "SCTP/9000"),
			wantBlocked: core.ErrUnsupported,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, nil)
			objs := []runtime.Object{tc.svc}
			live := newMemCluster(toUnstructured(t, tc.svc))
			for _, o := range tc.objects {
				objs = append(objs, o)
				live.Put(o)
			}
			c := cluster(t, ipvsProfile(tencent.CapL4SNAT), objs...)
			p, res := planFor(t, d, tc.svc, c, snatPolicy, live)
			if tc.force {
				res.Decision = core.Decision{Remedy: core.LBSourceNAT}
				var err error
				if p, err = d.Plan(context.Background(), &core.PlanRequest{Object: tc.svc, Cluster: c, Result: res, Reader: live}); err != nil {
					t.Fatal(err)
				}
			}
			if res.Decision.Remedy != core.LBSourceNAT {
				t.Fatalf("decision %s (%s)", res.Decision.Remedy, res.Decision.Why)
			}
			ignore := cmpopts.IgnoreFields(core.Change{}, "Reason", "Template")
			if diff := cmp.Diff(tc.want, p.Changes, ignore, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nchanges (-want +got):\n%s", tc.reason, diff)
			}
			if !errors.Is(p.Blocked.Err(), tc.wantBlocked) || (tc.wantBlocked == nil) != (p.Blocked == nil) {
				t.Errorf("%s\nBlocked = %v, want %v", tc.reason, p.Blocked, tc.wantBlocked)
			}
			for _, ch := range p.Changes {
				if ch.Create && (ch.Template == nil || ch.Template.GetAnnotations()[tencent.AnnotationConfigOwner] != "Service/web") {
					t.Errorf("created config carries no %s mark: %v", tencent.AnnotationConfigOwner, ch.Template)
				}
			}
			if len(p.Changes) > 0 && !slices.Contains(noteCodes(p), core.CodeSourceLBLostTCP) && !slices.Contains(noteCodes(p), core.CodeSourceLBLostUDP) {
				t.Errorf("plan notes %v do not say what the backend sees", noteCodes(p))
			}
		})
	}
}

// TestPlanL7SNAT covers solution 3: the field follows the ingress controller version, and an
// unknown version is refused rather than guessed.
func TestPlanL7SNAT(t *testing.T) {
	cfg := `
apiVersion: cloud.tencent.com/v1alpha1
kind: TkeServiceConfig
metadata: {name: web-auto-ingress-config, namespace: default}
spec:
  loadBalancer:
    l7Listeners:
    - protocol: HTTP
      port: 80
      domains: [{domain: web.example.com, rules: [{url: /, healthCheck: {enable: true}}]}]
`
	path := func(field string) []core.PathElem {
		return []core.PathElem{dialect.F("spec"), dialect.F("loadBalancer"), dialect.F("l7Listeners"),
			dialect.K(map[string]any{"protocol": "HTTP", "port": int64(80)}), dialect.F(field)}
	}
	tests := map[string]struct {
		version     string
		want        []core.Edit
		wantBlocked error
	}{
		"v2.9.0: snatEnable":        {version: "v2.9.0", want: []core.Edit{{Path: path("snatEnable"), Value: true}}},
		"v2.8.3: keepaliveEnable 1": {version: "v2.8.3", want: []core.Edit{{Path: path("keepaliveEnable"), Value: int64(1)}}},
		"unknown version":           {wantBlocked: core.ErrPrecondition},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, nil)
			ing := privateIngress("web", map[string]string{tencent.AnnotationIngressServiceConfigAuto: "true"})
			u := fromYAML(t, cfg)
			prof := ipvsProfile(tencent.CapL7SNAT, tencent.CapKeepalive)
			prof.IngressControllerVersion = tc.version
			c := cluster(t, prof, ing, u)
			p, res := planFor(t, d, ing, c, core.Policy{AllowTickets: true}, newMemCluster(toUnstructured(t, ing), u))
			if tc.version == "" {
				// Decide does not choose lb-snat with the version unknown; a host may force it.
				res.Decision = core.Decision{Remedy: core.LBSourceNAT}
				var err error
				p, err = d.Plan(context.Background(), &core.PlanRequest{Object: ing, Cluster: c, Result: res})
				if err != nil {
					t.Fatal(err)
				}
			} else if res.Decision.Remedy != core.LBSourceNAT {
				t.Fatalf("decision %s (%s)", res.Decision.Remedy, res.Decision.Why)
			}
			var got []core.Edit
			for _, ch := range p.Changes {
				got = append(got, ch.Edits...)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("edits (-want +got):\n%s", diff)
			}
			if !errors.Is(p.Blocked.Err(), tc.wantBlocked) || (tc.wantBlocked == nil) != (p.Blocked == nil) {
				t.Fatalf("Blocked = %v, want %v", p.Blocked, tc.wantBlocked)
			}
			if tc.wantBlocked != nil {
				var pe *core.PreconditionError
				if !errors.As(p.Blocked.Err(), &pe) || pe.Component != "tke-ingress-controller" || !strings.Contains(pe.Need, "v2.9.0") {
					t.Errorf("Blocked = %v, want a tke-ingress-controller precondition naming v2.9.0", p.Blocked)
				}
				return
			}
			for _, code := range []core.Code{core.CodeSourceLBXFF, tencent.CodeL7SNATSecurityGroup} {
				if !slices.Contains(noteCodes(p), code) {
					t.Errorf("notes %v lack %s", noteCodes(p), code)
				}
			}
			// Idempotence: with the edits made, the same decision plans nothing.
			for _, e := range got {
				if _, err := e.ApplyTo(u.Object); err != nil {
					t.Fatal(err)
				}
			}
			again, err := d.Plan(context.Background(), &core.PlanRequest{Object: ing, Cluster: c, Result: res, Reader: newMemCluster(toUnstructured(t, ing), u)})
			if err != nil || len(again.Changes) != 0 || again.Blocked != nil {
				t.Errorf("second plan %v (blocked %v, err %v), want empty", again, again.Blocked, err)
			}
		})
	}
}

// TestPlanAllowlists: an SNAT plan without the allowlist is blocked with a typed error naming
// the capability and what to ask support for; declared allowlists (profile or options) lift it.
func TestPlanAllowlists(t *testing.T) {
	tests := map[string]struct {
		profile  []core.Capability
		declared []core.Capability
		ingress  bool
		wantCap  core.Capability
	}{
		"layer 4, none":                    {wantCap: tencent.CapL4SNAT},
		"layer 4, profile":                 {profile: []core.Capability{tencent.CapL4SNAT}},
		"layer 4, options":                 {declared: []core.Capability{tencent.CapL4SNAT}},
		"layer 7, none":                    {ingress: true, wantCap: tencent.CapL7SNAT},
		"layer 7, SNAT without keep alive": {ingress: true, declared: []core.Capability{tencent.CapL7SNAT}, wantCap: tencent.CapKeepalive},
		"layer 7, both":                    {ingress: true, profile: []core.Capability{tencent.CapL7SNAT}, declared: []core.Capability{tencent.CapKeepalive}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, &tencent.DriverOptions{Allowlists: tc.declared})
			var obj runtime.Object = privateService("web", nil, "TCP/80")
			if tc.ingress {
				obj = privateIngress("web", nil)
			}
			c := cluster(t, ipvsProfile(tc.profile...), obj)
			mem := newMemCluster(toUnstructured(t, obj))
			r := core.NewReconciler(core.NewProvider(d.Dialect(), d), &core.ReconcilerOptions{ClusterWriter: mem, Policy: snatPolicy})
			out, err := r.Reconcile(context.Background(), obj, c)
			if tc.wantCap == "" {
				if err != nil {
					t.Fatalf("Reconcile: %v", err)
				}
				if len(out.Written) == 0 {
					t.Fatalf("nothing written: %v", out.Plan)
				}
				return
			}
			var ae *core.AllowlistError
			if !errors.As(err, &ae) || !errors.Is(err, core.ErrNotAllowlisted) {
				t.Fatalf("Reconcile error = %v, want a *core.AllowlistError", err)
			}
			if ae.Capability != tc.wantCap || ae.Ask != tencent.Ask(tc.wantCap) {
				t.Errorf("AllowlistError = %+v, want capability %s asking %q", ae, tc.wantCap, tencent.Ask(tc.wantCap))
			}
			if w := mem.Writes(); len(w) != 0 {
				t.Errorf("wrote %v before refusing", w)
			}
		})
	}
}

// TestPlanForUser: node separation and DNS steering are changes loopguard shows, never makes.
func TestPlanForUser(t *testing.T) {
	d := newDriver(t, nil)
	svc := privateService("web", nil, "TCP/80")
	c := cluster(t, core.ClusterProfile{Provider: tencent.Name, ProxyMode: core.ProxyModeIPVS, KubeProxyVersion: "v1.18.4-tke.19"}, svc)
	p, res := planFor(t, d, svc, c, core.Policy{}, nil)
	if res.Decision.Remedy != core.DNSSteering {
		t.Fatalf("decision %s (%s)", res.Decision.Remedy, res.Decision.Why)
	}
	if !p.Empty() || len(p.Changes) != 1 || p.Changes[0].By != core.WriterUser || p.Changes[0].To != res.Decision.Action {
		t.Errorf("plan = %+v, want one change for the user", p.Changes)
	}
}

// TestPlanNone: nothing to fix, nothing planned.
func TestPlanNone(t *testing.T) {
	d := newDriver(t, nil)
	svc := privateService("web", map[string]string{tencent.AnnotationPreventLoopback: "true"}, "TCP/80")
	p, res := planFor(t, d, svc, cluster(t, ipvsProfile(), svc), core.Policy{}, nil)
	if res.Decision.Remedy != core.RemedyNone || len(p.Changes) != 0 || p.Blocked != nil {
		t.Errorf("decision %s, plan %v (blocked %v); want none", res.Decision.Remedy, p, p.Blocked)
	}
}

func TestNewDriverOptions(t *testing.T) {
	for name, o := range map[string]*tencent.DriverOptions{
		"unknown mode":       {Mode: "sideways"},
		"direct without CLB": {Mode: tencent.ModeDirect},
		"unknown allowlist":  {Allowlists: []core.Capability{"clb-l9-snat"}},
		"bad revision table": {Dialect: &tencent.Options{PreventLoopbackMinimums: map[string]string{"1.22": "latest"}}},
		"negative rate":      {Mode: tencent.ModeDirect, CLB: sdkClient(t, startCloud(t, nil).srv, "id", "key"), RateLimit: -1},
	} {
		if _, err := tencent.NewDriver(o); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("%s: NewDriver error = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := tencent.NewDriver(nil); err != nil {
		t.Errorf("NewDriver(nil) = %v", err)
	}
}
