package tencent_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
	"github.com/loopguard/loopguard/providers/tencent"
)

func TestParseRevision(t *testing.T) {
	for in, want := range map[string]string{
		"v1.20.6-tke.12":  "v1.20.6-tke.12",
		"1.18.4-tke.20":   "v1.18.4-tke.20",
		"v1.30.0":         "v1.30.0",
		"v1.28.3-tke.3.1": "v1.28.3-tke.3",
	} {
		r, err := tencent.ParseRevision(in)
		if err != nil || r.String() != want {
			t.Errorf("ParseRevision(%q) = %v, %v; want %s", in, r, err, want)
		}
	}
	for _, in := range []string{"", "latest", "v1.20", "v1.20.x-tke.1"} {
		if _, err := tencent.ParseRevision(in); err == nil {
			t.Errorf("ParseRevision(%q) accepted", in)
		}
	}
	a, _ := tencent.ParseRevision("v1.18.4-tke.19")
	b, _ := tencent.ParseRevision("v1.18.4-tke.20")
	c, _ := tencent.ParseRevision("v1.18.5-tke.1")
	if !a.Less(b) || b.Less(a) || !b.Less(c) || a.Less(a) {
		t.Error("Less orders revisions wrongly")
	}
}

func TestDefaultPreventLoopbackMinimums(t *testing.T) {
	// The guide's list (intl doc 457/42976, DOMAIN.md §3.2).
	want := []string{"v1.12.4-tke.30", "v1.14.3-tke.24", "v1.16.3-tke.25", "v1.18.4-tke.20", "v1.20.6-tke.12"}
	var got []string
	for _, v := range tencent.DefaultPreventLoopbackMinimums() {
		got = append(got, v)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("minimums = %v, want %v", got, want)
	}
}

func TestCapabilities(t *testing.T) {
	want := map[core.Capability]string{
		tencent.CapL4SNAT:    "CLB Layer 4 SNAT capability",
		tencent.CapL7SNAT:    "CLB Layer 7 SNAT capability",
		tencent.CapKeepalive: "Keep Alive capability",
	}
	caps := tencent.Capabilities()
	if len(caps) != len(want) {
		t.Fatalf("Capabilities() = %v", caps)
	}
	for _, c := range caps {
		if tencent.Ask(c) != want[c] || !tencent.ValidCapability(c) {
			t.Errorf("Ask(%s) = %q, want %q", c, tencent.Ask(c), want[c])
		}
	}
	if tencent.Ask("clb-l4-snatt") != "" || tencent.ValidCapability("clb-l4-snatt") {
		t.Error("an unknown capability is known")
	}
	err := tencent.NewAllowlistError(core.ObjectRef{Kind: "Service", Namespace: "default", Name: "web"}, tencent.CapL4SNAT, nil)
	if !strings.Contains(err.Error(), `"CLB Layer 4 SNAT capability"`) || !errors.Is(err, core.ErrNotAllowlisted) {
		t.Errorf("allowlist error = %v", err)
	}
}

func TestRules(t *testing.T) {
	seen := map[core.Code]bool{}
	for _, r := range append(core.Rules(), dialect.Rules()...) {
		seen[r.Code] = true
	}
	for _, r := range tencent.NewDialect(nil).Rules() {
		if !strings.HasPrefix(string(r.Code), "tke-") {
			t.Errorf("code %q lacks the tke- prefix", r.Code)
		}
		if seen[r.Code] {
			t.Errorf("code %q is listed twice", r.Code)
		}
		seen[r.Code] = true
		if r.Summary == "" || r.Source == "" {
			t.Errorf("rule %q has no summary or source", r.Code)
		}
	}
	// Rules returns a copy: callers cannot change the dialect's list.
	d := tencent.NewDialect(nil)
	rs := d.Rules()
	rs[0].Code = "changed"
	if d.Rules()[0].Code == "changed" {
		t.Error("Rules shares its slice")
	}
}

func TestRecognizes(t *testing.T) {
	obj := func(ann, lbl map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "x", Namespace: "default", Annotations: ann, Labels: lbl}
	}
	qcloud := "qcloud"
	nginx := "nginx"
	cfg := &unstructured.Unstructured{}
	cfg.SetGroupVersionKind(tencent.ServiceConfigGVK)
	other := &unstructured.Unstructured{}
	other.SetAPIVersion("example.com/v1")
	other.SetKind("Thing")
	for _, tc := range []struct {
		name string
		obj  runtime.Object
		want bool
	}{
		{"prevent-loopback", &corev1.Service{ObjectMeta: obj(map[string]string{tencent.AnnotationPreventLoopback: "true"}, nil)}, true},
		{"internal subnet", &corev1.Service{ObjectMeta: obj(map[string]string{tencent.AnnotationInternalSubnet: "subnet-1"}, nil)}, true},
		{"existing lb", &corev1.Service{ObjectMeta: obj(map[string]string{tencent.AnnotationExistedLB: "lb-1"}, nil)}, true},
		{"loadbalance-id", &corev1.Service{ObjectMeta: obj(map[string]string{tencent.AnnotationLoadBalancerID: "lb-1"}, nil)}, true},
		{"ingress subnet", &networkingv1.Ingress{ObjectMeta: obj(map[string]string{tencent.AnnotationIngressSubnet: "subnet-1"}, nil)}, true},
		{"ingress class annotation", &networkingv1.Ingress{ObjectMeta: obj(map[string]string{tencent.AnnotationIngressClass: "qcloud"}, nil)}, true},
		{"ingress class name", &networkingv1.Ingress{ObjectMeta: obj(nil, nil), Spec: networkingv1.IngressSpec{IngressClassName: &qcloud}}, true},
		{"ingress.cloud.tencent.com", &networkingv1.Ingress{ObjectMeta: obj(map[string]string{tencent.AnnotationIngressDirectAccess: "true"}, nil)}, true},
		{"nginx ingress", &networkingv1.Ingress{ObjectMeta: obj(map[string]string{tencent.AnnotationIngressClass: "nginx"}, nil), Spec: networkingv1.IngressSpec{IngressClassName: &nginx}}, false},
		{"super node", &corev1.Node{ObjectMeta: obj(nil, map[string]string{tencent.LabelInstanceType: tencent.InstanceTypeEklet})}, true},
		{"native node", &corev1.Node{ObjectMeta: obj(nil, map[string]string{tencent.LabelNativeMachineSet: "np-1"})}, true},
		{"plain node", &corev1.Node{ObjectMeta: obj(nil, map[string]string{tencent.LabelInstanceType: "S5.MEDIUM4"})}, false},
		{"controller ConfigMap", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tencent.IngressControllerConfigMap, Namespace: "kube-system"}}, true},
		{"TkeServiceConfig", cfg, true},
		{"other CRD", other, false},
		{"plain Service", &corev1.Service{ObjectMeta: obj(map[string]string{"app": "x"}, nil)}, false},
		{"volcengine Service", &corev1.Service{ObjectMeta: obj(map[string]string{"service.beta.kubernetes.io/volcengine-loadbalancer-ip-mode": "VIP"}, nil)}, false},
		{"nil", nil, false},
	} {
		if got := tencent.Recognizes(tc.obj); got != tc.want {
			t.Errorf("%s: Recognizes = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseServiceConfig(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "cloud.tencent.com/v1alpha1",
		"kind":       "TkeServiceConfig",
		"metadata":   map[string]interface{}{"name": "c", "namespace": "ns"},
		"spec": map[string]interface{}{
			"loadBalancer": map[string]interface{}{
				"internetMaxBandwidthOut": int64(10),
				"l4Listeners": []interface{}{
					map[string]interface{}{"protocol": "TCP", "port": int64(80), "snatEnable": true, "scheduler": "WRR"},
					map[string]interface{}{"protocol": "udp", "port": float64(53), "snatEnable": "false"},
					map[string]interface{}{"protocol": "TCP", "port": int64(443)},
				},
				"l7Listeners": []interface{}{
					map[string]interface{}{"protocol": "HTTP", "port": int64(80), "keepaliveEnable": int64(1),
						"domains": []interface{}{map[string]interface{}{"domain": "", "rules": []interface{}{}}}},
				},
			},
		},
	}}
	before := u.DeepCopy()
	cfg, errs := tencent.ParseServiceConfig(u)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if !cmp.Equal(before.Object, u.Object) {
		t.Error("ParseServiceConfig modified its input")
	}
	yes, no, one := true, false, int64(1)
	want := &tencent.ServiceConfig{Namespace: "ns", Name: "c",
		L4Listeners: []tencent.L4Listener{
			{ListenerKey: tencent.ListenerKey{Protocol: "TCP", Port: 80}, Index: 0, SnatEnable: &yes},
			{ListenerKey: tencent.ListenerKey{Protocol: "UDP", Port: 53}, Index: 1, SnatEnable: &no, SnatEnableQuoted: true},
			{ListenerKey: tencent.ListenerKey{Protocol: "TCP", Port: 443}, Index: 2},
		},
		L7Listeners: []tencent.L7Listener{
			{ListenerKey: tencent.ListenerKey{Protocol: "HTTP", Port: 80}, KeepaliveEnable: &one},
		},
	}
	if d := cmp.Diff(want, cfg); d != "" {
		t.Errorf("ParseServiceConfig (-want +got):\n%s", d)
	}
	if l := cfg.L4(tencent.ListenerKey{Protocol: "TCP", Port: 80}); l == nil || !l.SNAT() {
		t.Error("L4(TCP:80) lost SNAT")
	}
	if l := cfg.L4(tencent.ListenerKey{Protocol: "TCP", Port: 443}); l == nil || l.SNAT() {
		t.Error("L4(TCP:443) has SNAT")
	}
	if l := cfg.L7(tencent.ListenerKey{Protocol: "HTTP", Port: 80}); l == nil || !l.Keepalive() || l.SNAT() {
		t.Error("L7(HTTP:80) misread")
	}
	if cfg.L7(tencent.ListenerKey{Protocol: "HTTPS", Port: 443}) != nil {
		t.Error("L7(HTTPS:443) found")
	}

	empty := &unstructured.Unstructured{}
	empty.SetGroupVersionKind(tencent.ServiceConfigGVK)
	if cfg, errs := tencent.ParseServiceConfig(empty); len(errs) > 0 || len(cfg.L4Listeners)+len(cfg.L7Listeners) != 0 {
		t.Errorf("empty config = %+v, %v", cfg, errs)
	}
	wrong := &unstructured.Unstructured{}
	wrong.SetAPIVersion("v1")
	wrong.SetKind("ConfigMap")
	if _, errs := tencent.ParseServiceConfig(wrong); len(errs) == 0 {
		t.Error("a ConfigMap parsed as a TkeServiceConfig")
	}
}

func TestListeners(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}, {Port: 53, Protocol: corev1.ProtocolUDP}}}}
	if got := tencent.ServiceListeners(svc); !slices.Equal(got, []tencent.ListenerKey{{Protocol: "TCP", Port: 80}, {Protocol: "UDP", Port: 53}}) {
		t.Errorf("ServiceListeners = %v", got)
	}
	ing := &networkingv1.Ingress{}
	if got, custom := tencent.IngressListeners(ing); custom || !slices.Equal(got, []tencent.ListenerKey{{Protocol: "HTTP", Port: 80}}) {
		t.Errorf("IngressListeners = %v %v", got, custom)
	}
	ing.Spec.TLS = []networkingv1.IngressTLS{{SecretName: "s"}}
	if got, _ := tencent.IngressListeners(ing); !slices.Equal(got, []tencent.ListenerKey{{Protocol: "HTTPS", Port: 443}}) {
		t.Errorf("IngressListeners with TLS = %v", got)
	}
	ing.Annotations = map[string]string{tencent.AnnotationIngressRuleMix: "true", tencent.AnnotationIngressListenPorts: "[]"}
	if got, custom := tencent.IngressListeners(ing); !custom || len(got) != 2 {
		t.Errorf("IngressListeners with rule-mix = %v %v", got, custom)
	}
}

func TestConfigNames(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{tencent.AnnotationServiceConfigAuto: "true"}}}
	if name, auto, err := tencent.ServiceConfigName(svc); name != "web-auto-service-config" || !auto || err != nil {
		t.Errorf("ServiceConfigName = %q %v %v", name, auto, err)
	}
	svc.Annotations = map[string]string{tencent.AnnotationServiceConfig: "mine", tencent.AnnotationServiceConfigAuto: "false"}
	if name, auto, err := tencent.ServiceConfigName(svc); name != "mine" || auto || err != nil {
		t.Errorf("ServiceConfigName = %q %v %v", name, auto, err)
	}
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{tencent.AnnotationIngressServiceConfigAuto: "true"}}}
	if name, auto, err := tencent.IngressConfigName(ing); name != "web-auto-ingress-config" || !auto || err != nil {
		t.Errorf("IngressConfigName = %q %v %v", name, auto, err)
	}
	ing.Annotations[tencent.AnnotationIngressServiceConfig] = "mine"
	if _, _, err := tencent.IngressConfigName(ing); err == nil {
		t.Error("both Ingress config annotations accepted")
	}
	if class, _ := tencent.IngressClass(&networkingv1.Ingress{}); class != "" {
		t.Errorf("IngressClass of a class-less Ingress = %q", class)
	}
}
