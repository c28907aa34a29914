package volcengine_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
	"github.com/loopguard/loopguard/providers/volcengine"
)

func TestParseIPMode(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    core.Path
		wantErr string
	}{
		"VIP":               {in: "VIP", want: core.PathVIP},
		"Proxy":             {in: "Proxy", want: core.PathProxy},
		"lower-case vip":    {in: "vip", wantErr: `Unsupported value: "vip": supported values: "VIP", "Proxy" (values are case-sensitive)`},
		"lower-case proxy":  {in: "proxy", wantErr: `Unsupported value: "proxy": supported values: "VIP", "Proxy" (values are case-sensitive)`},
		"upper-case PROXY":  {in: "PROXY", wantErr: `Unsupported value: "PROXY": supported values: "VIP", "Proxy" (values are case-sensitive)`},
		"padded":            {in: " VIP", wantErr: `Unsupported value: " VIP": supported values: "VIP", "Proxy"`},
		"empty":             {in: "", wantErr: `Unsupported value: "": supported values: "VIP", "Proxy"`},
		"a kube-proxy mode": {in: "IPVS", wantErr: `Unsupported value: "IPVS": supported values: "VIP", "Proxy"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := volcengine.ParseIPMode(tc.in)
			if tc.wantErr == "" {
				if err != nil || got != tc.want {
					t.Fatalf("ParseIPMode(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseIPMode(%q) = %q, want an error", tc.in, got)
			}
			if got != core.PathUnknown {
				t.Errorf("path on error = %q, want none", got)
			}
			if !errors.Is(err, core.ErrInvalid) {
				t.Errorf("errors.Is(err, ErrInvalid) = false for %v", err)
			}
			var fe *field.Error
			if !errors.As(err, &fe) || fe.Field != "metadata.annotations["+volcengine.AnnotationIPMode+"]" {
				t.Errorf("want a *field.Error naming the annotation, got %#v", err)
			}
			wantContains(t, "error", err.Error(), tc.wantErr)
			if !strings.Contains(tc.wantErr, "case-sensitive") && strings.Contains(err.Error(), "case-sensitive") {
				t.Errorf("case hint on a value that is not a case slip: %v", err)
			}
		})
	}
}

// Bad values are refused with the field path and the accepted values; nothing is translated.
func TestTranslateRejectsBadAnnotationValues(t *testing.T) {
	d := volcengine.NewDialect(nil)
	w := load(t, "profiles/ready.yaml", "cluster/nodes.yaml", "invalid/wrong-case.yaml")
	ann := func(key string) string { return "metadata.annotations[" + key + "]: " }
	tests := map[string][]string{
		"lower-vip":     {ann(volcengine.AnnotationIPMode) + `Unsupported value: "vip": supported values: "VIP", "Proxy"`},
		"lower-proxy":   {ann(volcengine.AnnotationIPMode) + `Unsupported value: "proxy": supported values: "VIP", "Proxy"`},
		"upper-proxy":   {ann(volcengine.AnnotationIPMode) + `Unsupported value: "PROXY": supported values: "VIP", "Proxy"`},
		"unknown-mode":  {ann(volcengine.AnnotationIPMode) + `Unsupported value: "IPVS": supported values: "VIP", "Proxy"`},
		"lower-private": {ann(volcengine.AnnotationAddressType) + `Unsupported value: "private": supported values: "PUBLIC", "PRIVATE" (values are case-sensitive)`},
		"all-wrong": {
			ann(core.AnnotationLBScope) + `Unsupported value: "internal"`,
			ann(volcengine.AnnotationIPMode) + `Unsupported value: "proxy"`,
			ann(volcengine.AnnotationAddressType) + `Unsupported value: "INTERNAL": supported values: "PUBLIC", "PRIVATE"`,
			ann(volcengine.AnnotationPassThrough) + `Unsupported value: "True": supported values: "true", "false" (values are case-sensitive)`,
			ann(volcengine.AnnotationProxyProtocol) + `Unsupported value: "Standard": supported values: "standard", "off" (values are case-sensitive)`,
		},
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			tr, err := d.Translate(w.object(t, "Service", "", name), w.cluster)
			if tr != nil {
				t.Errorf("a partial translation was returned: %+v", tr.Exposure)
			}
			var inv *core.InvalidError
			if !errors.As(err, &inv) || !errors.Is(err, core.ErrInvalid) {
				t.Fatalf("want a *core.InvalidError, got %v", err)
			}
			if inv.Object != (core.ObjectRef{Kind: "Service", Namespace: "default", Name: name}) {
				t.Errorf("object = %v", inv.Object)
			}
			if len(inv.Errs) != len(want) {
				t.Errorf("%d field errors, want %d: %v", len(inv.Errs), len(want), err)
			}
			for _, s := range want {
				wantContains(t, "error", err.Error(), s)
			}
			// core.Evaluate passes the error through unchanged.
			if _, err := core.Evaluate(d, w.object(t, "Service", "", name), w.cluster, core.Policy{}); !errors.As(err, &inv) {
				t.Errorf("Evaluate: %v", err)
			}
		})
	}
}

func TestTranslateNotExposed(t *testing.T) {
	d := volcengine.NewDialect(nil)
	w := load(t, "profiles/ready.yaml", "notexposed/objects.yaml")
	tests := map[string]struct {
		obj     runtime.Object
		message string
	}{
		"an Ingress: the ingress controller's LoadBalancer Service is what is assessed": {
			obj: w.object(t, "Ingress", "", "shop"), message: "ingress controller's LoadBalancer Service"},
		"a ClusterIP Service": {obj: w.object(t, "Service", "", "internal"), message: "not LoadBalancer"},
		"another loadBalancerClass": {
			obj: w.object(t, "Service", "", "metallb"), message: `loadBalancerClass is "metallb.io/metallb"`},
		"a Node": {obj: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, message: "Services only"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tr, err := d.Translate(tc.obj, w.cluster)
			if tr != nil || !errors.Is(err, core.ErrNotExposed) {
				t.Fatalf("Translate = %v, %v; want ErrNotExposed", tr, err)
			}
			wantContains(t, "error", err.Error(), tc.message)
		})
	}
	t.Run("the Volcengine loadBalancerClass is served", func(t *testing.T) {
		if _, err := d.Translate(w.object(t, "Service", "", "volc-class"), w.cluster); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a nil cluster is an empty one", func(t *testing.T) {
		r, err := core.Evaluate(d, w.object(t, "Service", "", "volc-class"), nil, core.Policy{})
		if err != nil || r.Assessment.Path != core.PathVIP {
			t.Fatalf("Evaluate with nil cluster: %v, %v", r, err)
		}
	})
}

func TestScopeAndBinding(t *testing.T) {
	t.Run("a PRIVATE CLB sees the client Pod", func(t *testing.T) {
		w := load(t, "profiles/ready.yaml", "cluster/nodes.yaml", "samenode/services.yaml")
		r := w.evaluate(t, volcengine.NewDialect(nil), "shop", "web-nodeport")
		if r.Exposure.Scope != core.Private {
			t.Errorf("scope = %q", r.Exposure.Scope)
		}
		wantCodes(t, r.Assessment.Reasons, "vke-address-private")
	})

	t.Run("a PUBLIC CLB loops like a private one unless the options say clients reach it through NAT", func(t *testing.T) {
		w := load(t, "profiles/ready.yaml", "cluster/nodes.yaml", "modes/services.yaml")
		r := w.evaluate(t, volcengine.NewDialect(nil), "", "service-demo")
		if r.Exposure.Scope != core.Private || r.Assessment.Risk != core.RiskAtRisk {
			t.Errorf("default: scope %q risk %s, want private at-risk", r.Exposure.Scope, r.Assessment.Risk)
		}
		wantCodes(t, r.Assessment.Reasons, "vke-public-clb-keeps-source")
		d := volcengine.NewDialect(&volcengine.Options{Assumptions: volcengine.Assumptions{PublicCLBHidesPodSource: true}})
		r = w.evaluate(t, d, "", "service-demo")
		if r.Exposure.Scope != core.Public || r.Assessment.Risk != core.RiskNone {
			t.Errorf("PublicCLBHidesPodSource: scope %q risk %s, want public none", r.Exposure.Scope, r.Assessment.Risk)
		}
		wantCodes(t, r.Assessment.Reasons, "vke-address-public", "public-lb")
	})

	t.Run("loopguard.io annotations win", func(t *testing.T) {
		w := load(t, "profiles/ready.yaml", "cluster/nodes.yaml", "public/services.yaml")
		d := volcengine.NewDialect(nil)
		r := w.evaluate(t, d, "", "public-declared")
		if r.Assessment.Risk != core.RiskNone {
			t.Errorf("lb-scope public: risk %s, want none", r.Assessment.Risk)
		}
		wantCodes(t, r.Assessment.Reasons, dialect.CodeOverride, "public-lb")
		r = w.evaluate(t, d, "", "by-service-name")
		if r.Assessment.Risk != core.RiskNone {
			t.Errorf("client-access service-name: risk %s, want none", r.Assessment.Risk)
		}
	})

	t.Run("a reused CLB", func(t *testing.T) {
		w := load(t, "profiles/ready.yaml", "cluster/nodes.yaml", "reuse/services.yaml")
		r := w.evaluate(t, volcengine.NewDialect(nil), "", "clb-service")
		if r.Exposure.Scope != core.Private || r.Assessment.Risk != core.RiskAtRisk {
			t.Errorf("default: scope %q risk %s", r.Exposure.Scope, r.Assessment.Risk)
		}
		wantCodes(t, r.Assessment.Reasons, "vke-reused-clb")

		hides := volcengine.Assumptions{PublicCLBHidesPodSource: true}
		r = w.evaluate(t, volcengine.NewDialect(&volcengine.Options{Assumptions: hides}), "", "clb-service")
		if r.Exposure.Scope != core.ScopeUnknown || r.Assessment.Risk != core.RiskUnknown ||
			!slices.Contains(r.Assessment.Missing, core.MissingScope) {
			t.Errorf("type unknown: scope %q risk %s missing %v, want unknown scope", r.Exposure.Scope, r.Assessment.Risk, r.Assessment.Missing)
		}

		read := volcengine.CLBSnapshot{"clb-mim02n8g5kw05smt1b000001": {AddressType: volcengine.AddressTypePrivate}}
		r = w.evaluate(t, volcengine.NewDialect(&volcengine.Options{CLBs: read, Assumptions: hides}), "", "clb-service")
		if r.Exposure.Scope != core.Private || r.Assessment.Risk != core.RiskAtRisk {
			t.Errorf("cloud read PRIVATE: scope %q risk %s", r.Exposure.Scope, r.Assessment.Risk)
		}
		wantCodes(t, r.Assessment.Reasons, "vke-cloud-read")
	})

	t.Run("pass-through needs Pod ENIs, which Flannel does not give", func(t *testing.T) {
		w := load(t, "profiles/flannel.yaml", "cluster/nodes.yaml", "samenode/services.yaml", "status/services.yaml")
		// web asks for Proxy, which Flannel cannot carry: VIP stays, binding unknown.
		r := w.evaluate(t, volcengine.NewDialect(nil), "shop", "web")
		if r.Exposure.Binding != core.BindingUnknown {
			t.Errorf("binding = %q, want unknown", r.Exposure.Binding)
		}
	})

	t.Run("a hostname-only status is never intercepted", func(t *testing.T) {
		w := load(t, "profiles/ready.yaml", "cluster/nodes.yaml", "status/services.yaml")
		r := w.evaluate(t, volcengine.NewDialect(nil), "shop", "by-hostname")
		if r.Exposure.Intercept != core.No || r.Assessment.Risk != core.RiskAtRisk {
			t.Errorf("intercept %v risk %s, want no at-risk", r.Exposure.Intercept, r.Assessment.Risk)
		}
		wantCodes(t, r.Assessment.Reasons, "vke-status-hostname")
	})
}

func TestProxyProtocol(t *testing.T) {
	w := load(t, "profiles/ready.yaml", "cluster/nodes.yaml", "reuse/services.yaml")
	r := w.evaluate(t, volcengine.NewDialect(nil), "", "pp-vip")
	if r.Exposure.ProxyProtocol != core.Yes {
		t.Errorf("ProxyProtocol = %v", r.Exposure.ProxyProtocol)
	}
	wantCodes(t, r.Exposure.Notes, "vke-proxy-protocol-vip")

	read := volcengine.CLBSnapshot{"clb-mim02n8g5kw05smt1b000002": {ProxyProtocol: core.No}}
	r = w.evaluate(t, volcengine.NewDialect(&volcengine.Options{CLBs: read}), "", "pp-vip")
	if r.Exposure.ProxyProtocol != core.No {
		t.Errorf("cloud read wins: ProxyProtocol = %v", r.Exposure.ProxyProtocol)
	}
	wantNoCodes(t, r.Exposure.Notes, "vke-proxy-protocol-vip")
}

func TestTranslateDoesNotChangeItsInputs(t *testing.T) {
	d := volcengine.NewDialect(nil)
	w := load(t, "profiles/ready.yaml", "cluster/nodes.yaml", "samenode/services.yaml", "samenode/client-on-backend-node.yaml",
		"existing/services.yaml", "status/services.yaml")
	for _, o := range w.objects {
		svc, ok := o.(*corev1.Service)
		if !ok {
			continue
		}
		before := svc.DeepCopy()
		if _, err := d.Translate(svc, w.cluster); err != nil {
			t.Fatalf("%s: %v", svc.Name, err)
		}
		if diff := cmp.Diff(before, svc); diff != "" {
			t.Errorf("%s changed (-before +after):\n%s", svc.Name, diff)
		}
	}
}

func TestRecognizes(t *testing.T) {
	w := load(t, "", "cluster/nodes.yaml", "modes/services.yaml", "notexposed/objects.yaml")
	tests := map[string]struct {
		obj  runtime.Object
		want bool
	}{
		"a Service with a volcengine annotation":  {w.object(t, "Service", "", "service-demo"), true},
		"a Service with no annotation":            {w.object(t, "Service", "", "service-default"), false},
		"an Ingress with a volcengine annotation": {w.object(t, "Ingress", "", "shop"), true},
		"a Service of class volcengine.com/clb":   {w.object(t, "Service", "", "volc-class"), true},
		"a VKE node (machine pool label)":         {w.object(t, "Node", "", "node-a"), true},
		"a VKE GPU node": {&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu",
			Labels: map[string]string{"machine.cluster.vke.volcengine.com/gpu-name": "Tesla-V100"}}}, true},
		"a plain node": {&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n",
			Labels: map[string]string{"kubernetes.io/hostname": "n"}}}, false},
		"a look-alike label domain": {&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n",
			Labels: map[string]string{"cluster.vke.volcengine.com.example.org/x": "y", "xcluster.vke.volcengine.com/y": "z"}}}, false},
		"a TKE Service": {&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s",
			Annotations: map[string]string{"service.cloud.tencent.com/prevent-loopback": "true"}}}, false},
		"nil": {nil, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := volcengine.Recognizes(tc.obj); got != tc.want {
				t.Errorf("Recognizes = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPrerequisiteErrors(t *testing.T) {
	ref := core.ObjectRef{Kind: "Service", Namespace: "shop", Name: "web"}
	p := &core.ClusterProfile{KubernetesVersion: "v1.29.8", CCMVersion: "v1.43.2", ProxyMode: core.ProxyModeEBPF,
		Dataplane: core.DataplaneProfile{CNI: "cello", PodInterface: "ipvlan"}}
	pr := volcengine.Prerequisites(p)
	if len(pr) != 3 || pr[0].Name != volcengine.PrereqKubernetes || pr[1].Name != volcengine.PrereqNetwork || pr[2].Name != volcengine.PrereqCCM {
		t.Fatalf("prerequisites = %+v", pr)
	}
	if pr[1].Met != core.Yes || pr[2].Met != core.Yes || pr[1].Err(ref) != nil || pr[2].Err(ref) != nil {
		t.Errorf("network (cello) and CCM should be met: %+v %+v", pr[1], pr[2])
	}
	err := pr[0].Err(ref)
	var pe *core.PreconditionError
	if !errors.Is(err, core.ErrPrecondition) || !errors.As(err, &pe) {
		t.Fatalf("want a *core.PreconditionError, got %v", err)
	}
	wantContains(t, "error", err.Error(), "Service shop/web: Kubernetes is v1.29.8, need >= v1.30 (vke-prereq-kubernetes;")

	unknown := volcengine.Prerequisites(&core.ClusterProfile{})
	if err := unknown[2].Err(ref); !errors.Is(err, core.ErrPrecondition) || !strings.Contains(err.Error(), "cloud-controller-manager is unknown") {
		t.Errorf("unknown CCM: %v", err)
	}
}

// Every reason code a translation emits is documented by the dialect's or the core's rules,
// and the dialect's own codes carry the vke- prefix and a source.
func TestEveryEmittedCodeIsDocumented(t *testing.T) {
	d := volcengine.NewDialect(nil)
	documented := map[core.Code]bool{}
	for _, r := range append(core.Rules(), dialect.Rules()...) {
		documented[r.Code] = true
	}
	seen := map[core.Code]bool{}
	for _, r := range d.Rules() {
		if !strings.HasPrefix(string(r.Code), "vke-") || r.Source == "" || r.Summary == "" {
			t.Errorf("rule %+v: want a vke- code, a summary and a source", r)
		}
		if seen[r.Code] {
			t.Errorf("duplicate code %s", r.Code)
		}
		seen[r.Code] = true
		documented[r.Code] = true
	}
	profiles := []string{"", "profiles/ready.yaml", "profiles/unknown.yaml", "profiles/ccm-1.42.yaml", "profiles/flannel.yaml"}
	files := []string{"cluster/nodes.yaml", "modes/services.yaml", "samenode/services.yaml", "samenode/client-on-backend-node.yaml",
		"existing/services.yaml", "status/services.yaml", "reuse/services.yaml", "public/services.yaml"}
	dialects := []*volcengine.Dialect{d, volcengine.NewDialect(&volcengine.Options{
		Assumptions: volcengine.Assumptions{PublicCLBHidesPodSource: true, UnmetProxyUnknown: true}})}
	emitted := 0
	for _, p := range profiles {
		w := load(t, p, files...)
		for _, o := range w.objects {
			if _, ok := o.(*corev1.Service); !ok {
				continue
			}
			for _, dl := range dialects {
				r, err := core.Evaluate(dl, o, w.cluster, core.Policy{})
				if err != nil {
					t.Fatal(err)
				}
				all := append(append(append([]core.Reason{}, r.Assessment.Reasons...), r.Exposure.Notes...), r.Decision.Reason)
				for _, of := range r.Offers {
					all = append(all, of.Reason)
					for _, u := range of.Unmet {
						all = append(all, u.Reason)
					}
				}
				for _, rj := range r.Decision.Rejected {
					all = append(all, rj.Reason)
				}
				for _, rs := range all {
					emitted++
					if !documented[rs.Code] {
						t.Errorf("%s: code %q is not documented by any Rules()", r.Exposure.Object, rs.Code)
					}
					if rs.Source == "" {
						t.Errorf("%s: reason %s has no source", r.Exposure.Object, rs.Code)
					}
				}
			}
		}
	}
	if emitted == 0 {
		t.Fatal("no reasons emitted")
	}
}

// DOMAIN.md: code that depends on an UNCONFIRMED fact keeps it in one place.
func TestUnconfirmedIsInOnePlace(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		has := strings.Contains(string(b), "UNCONFIRMED")
		if has != (f == "unconfirmed.go") {
			t.Errorf("%s: contains UNCONFIRMED = %v; only unconfirmed.go may", f, has)
		}
	}
}

func TestReadService(t *testing.T) {
	proxy, vip := corev1.LoadBalancerIPModeProxy, corev1.LoadBalancerIPModeVIP
	base := func(mut func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
		mut(s)
		return s
	}
	tests := map[string]struct {
		svc  *corev1.Service
		want volcengine.ServiceFacts
	}{
		"nothing said: VIP, PUBLIC, NodePorts, not created": {
			svc: base(func(*corev1.Service) {}),
			want: volcengine.ServiceFacts{IPMode: core.PathVIP, AddressType: volcengine.AddressTypePublic,
				PassThrough: core.No, ProxyProtocol: core.No},
		},
		"a creationTimestamp alone means the Service exists": {
			svc: base(func(s *corev1.Service) { s.CreationTimestamp = metav1.Unix(1772438100, 0) }),
			want: volcengine.ServiceFacts{IPMode: core.PathVIP, AddressType: volcengine.AddressTypePublic,
				PassThrough: core.No, ProxyProtocol: core.No, Exists: true},
		},
		"a uid alone means the Service exists": {
			svc: base(func(s *corev1.Service) { s.UID = "u" }),
			want: volcengine.ServiceFacts{IPMode: core.PathVIP, AddressType: volcengine.AddressTypePublic,
				PassThrough: core.No, ProxyProtocol: core.No, Exists: true},
		},
		"a status alone means the Service exists; its ipMode is read": {
			svc: base(func(s *corev1.Service) {
				s.Annotations = map[string]string{volcengine.AnnotationIPMode: "Proxy"}
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.1", IPMode: &proxy}}
			}),
			want: volcengine.ServiceFacts{IPMode: core.PathProxy, IPModeSet: true, Status: core.PathProxy,
				AddressType: volcengine.AddressTypePublic, PassThrough: core.No, ProxyProtocol: core.No,
				Exists: true, Addresses: []string{"10.0.0.1"}},
		},
		"different ipModes are mixed": {
			svc: base(func(s *corev1.Service) {
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.1", IPMode: &proxy}, {IP: "10.0.0.2", IPMode: &vip}, {IP: "10.0.0.3", IPMode: &proxy}}
			}),
			want: volcengine.ServiceFacts{IPMode: core.PathVIP, StatusMixed: true,
				AddressType: volcengine.AddressTypePublic, PassThrough: core.No, ProxyProtocol: core.No,
				Exists: true, Addresses: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}},
		},
		"a reused CLB has no address type unless one is declared": {
			svc: base(func(s *corev1.Service) {
				s.Annotations = map[string]string{volcengine.AnnotationLoadBalancerID: "clb-1",
					volcengine.AnnotationPassThrough: "true", volcengine.AnnotationProxyProtocol: "standard"}
			}),
			want: volcengine.ServiceFacts{IPMode: core.PathVIP, LoadBalancerID: "clb-1", PassThrough: core.Yes, ProxyProtocol: core.Yes},
		},
		"a hostname-only status": {
			svc: base(func(s *corev1.Service) {
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "lb.example.com"}}
			}),
			want: volcengine.ServiceFacts{IPMode: core.PathVIP, AddressType: volcengine.AddressTypePublic,
				PassThrough: core.No, ProxyProtocol: core.No, Exists: true, HostnameOnly: true},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, errs := volcengine.ReadService(tc.svc)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	t.Run("an ipMode the API server would refuse", func(t *testing.T) {
		bad := corev1.LoadBalancerIPMode("Direct")
		_, errs := volcengine.ReadService(base(func(s *corev1.Service) {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.1", IPMode: &bad}}
		}))
		if len(errs) != 1 || errs[0].Field != "status.loadBalancer.ingress[0].ipMode" {
			t.Errorf("errs = %v", errs)
		}
	})
}

func TestInterceptedSource(t *testing.T) {
	tests := map[string]struct {
		profile  string
		opts     *volcengine.Options
		want     core.SourceKind
		clientIP core.ClientIP // what intercept-vip costs
	}{
		"VKE eBPF forwarding keeps the client Pod (assumption 7)": {profile: "profiles/ready.yaml",
			want: core.SourceClientPod, clientIP: core.ClientIPKept},
		"with the assumption switched off the source is unknown": {profile: "profiles/ready.yaml",
			opts: &volcengine.Options{Assumptions: volcengine.Assumptions{EBPFSourceUnknown: true}},
			want: core.SourceUnknown, clientIP: core.ClientIPUnknown},
		"kube-proxy iptables with externalTrafficPolicy Cluster masquerades (core)": {profile: "profiles/flannel.yaml",
			want: core.SourceNode, clientIP: core.ClientIPLost},
		"an unknown dataplane gives an unknown source": {profile: "profiles/unknown.yaml",
			want: core.SourceUnknown, clientIP: core.ClientIPUnknown},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := load(t, tc.profile, "cluster/nodes.yaml", "modes/services.yaml")
			r := w.evaluate(t, volcengine.NewDialect(tc.opts), "", "service-default")
			if r.Assessment.Path != core.PathVIP || r.Assessment.Source.Kind != tc.want {
				t.Errorf("path %s source %s, want VIP %s", r.Assessment.Path, r.Assessment.Source.Kind, tc.want)
			}
			if vip := offer(t, r, core.InterceptVIP); vip.Costs.ClientIP != tc.clientIP {
				t.Errorf("intercept-vip client IP cost = %q, want %q", vip.Costs.ClientIP, tc.clientIP)
			}
		})
	}
}
