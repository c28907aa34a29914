package dialect

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
)

func node(name string, lbls map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
}

func lbService(ns, name string, sel map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: sel,
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
}

func mustCluster(t testing.TB, p core.ClusterProfile, objs ...runtime.Object) *core.Cluster {
	t.Helper()
	c, err := core.NewCluster(p, objs...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestServiceBase(t *testing.T) {
	svc := lbService("default", "dns", map[string]string{"app": "dns"})
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Port: 53, Protocol: corev1.ProtocolUDP})
	svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	c := mustCluster(t, core.ClusterProfile{ProxyMode: core.ProxyModeIPTables}, node("n1", nil))
	e, _, err := ServiceBase("test", svc, c, core.NodeFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Layer != core.Layer4 || e.Protocols != core.TCP|core.UDP || e.Binding != core.NodePortLocal || e.Provider != "test" ||
		e.Placement.NodesBehindLB != 1 || e.Hairpin == nil || e.Object != (core.ObjectRef{Kind: "Service", Namespace: "default", Name: "dns"}) ||
		e.InterceptMasquerades != core.No {
		t.Errorf("exposure = %+v", e)
	}
}

func TestKubeProxyMasquerades(t *testing.T) {
	for _, tc := range []struct {
		m      core.ProxyMode
		policy corev1.ServiceExternalTrafficPolicy
		want   core.Fact
	}{
		{core.ProxyModeIPTables, corev1.ServiceExternalTrafficPolicyCluster, core.Yes},
		{core.ProxyModeIPTables, "", core.Yes},
		{core.ProxyModeNFTables, corev1.ServiceExternalTrafficPolicyLocal, core.No},
		{core.ProxyModeIPVS, corev1.ServiceExternalTrafficPolicyCluster, core.Yes},
		{core.ProxyModeEBPF, corev1.ServiceExternalTrafficPolicyCluster, core.Unknown},
		{core.ProxyModeUnknown, corev1.ServiceExternalTrafficPolicyLocal, core.Unknown},
	} {
		if got := KubeProxyMasquerades(tc.m, tc.policy); got != tc.want {
			t.Errorf("%s/%s: %s, want %s", tc.m, tc.policy, got, tc.want)
		}
	}
}

func TestServiceBaseNilCluster(t *testing.T) {
	svc := lbService("default", "sig", nil)
	svc.Spec.Ports[0].Protocol = corev1.ProtocolSCTP
	e, _, err := ServiceBase("test", svc, nil, core.NodeFilter{})
	if err != nil || e.Protocols != core.SCTP || e.Placement.NodesBehindLB != 0 || e.Hairpin != nil {
		t.Errorf("exposure = %+v, err %v", e, err)
	}
	e.LBSourceNAT, e.Intercept, e.Scope = core.Yes, core.No, core.Private
	if a := core.Assess(&e); a.Source.ClientIP != core.ClientIPLost {
		t.Errorf("SCTP behind source NAT: client IP %s, want lost", a.Source.ClientIP)
	}
}

func TestServiceBaseNotExposed(t *testing.T) {
	svc := lbService("default", "web", nil)
	svc.Spec.Type = ""
	_, _, err := ServiceBase("test", svc, mustCluster(t, core.ClusterProfile{}), core.NodeFilter{})
	if !errors.Is(err, core.ErrNotExposed) || !strings.Contains(err.Error(), "ClusterIP") {
		t.Errorf("err = %v", err)
	}
}

func TestServiceBaseRejectsBadInput(t *testing.T) {
	svc := lbService("default", "web", nil)
	svc.Annotations = map[string]string{core.AnnotationLBScope: "internal", core.AnnotationLBSourceNAT: "True"}
	svc.Spec.Ports[0].Protocol = "QUIC"
	e, _, err := ServiceBase("test", svc, mustCluster(t, core.ClusterProfile{}), core.NodeFilter{})
	var inv *core.InvalidError
	if !errors.As(err, &inv) || !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("err = %v, want *core.InvalidError", err)
	}
	if !cmp.Equal(e, core.Exposure{}) {
		t.Error("nothing partial may be returned with an error")
	}
	msg := err.Error()
	for _, want := range []string{"Service default/web", "metadata.annotations[loopguard.io/lb-scope]", `"internal"`,
		"metadata.annotations[loopguard.io/lb-source-nat]", "case-sensitive", "spec.ports[0].protocol"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
}

func TestOverridesWin(t *testing.T) {
	svc := lbService("default", "web", nil)
	svc.Annotations = map[string]string{core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "true", core.AnnotationClientAccess: "service-name", core.AnnotationClients: "app=fe"}
	e, ov, err := ServiceBase("test", svc, mustCluster(t, core.ClusterProfile{}), core.NodeFilter{})
	if err != nil {
		t.Fatal(err)
	}
	e.Scope, e.LBSourceNAT = core.Public, core.No // what a dialect might have guessed
	ov.Apply(&e)
	if e.Scope != core.Private || e.LBSourceNAT != core.Yes || e.Access != core.AccessServiceName || ov.Clients == nil || ov.Clients.String() != "app=fe" {
		t.Errorf("exposure = %+v", e)
	}
	if n := len(e.Reasons); n != 2 || e.Reasons[0].Code != CodeOverride {
		t.Errorf("reasons = %v, want one per declared fact", e.Reasons)
	}
}

// TestDeclaredCountsApply: ServiceBase sizes the reasons with declared(), so it must count
// exactly the reasons Apply adds, for every combination of declarations.
func TestDeclaredCountsApply(t *testing.T) {
	decl := [...][2]string{{core.AnnotationLBScope, "private"}, {core.AnnotationLBSourceNAT, "false"},
		{core.AnnotationBackendExpects, "proxy-protocol"}, {core.AnnotationClientAccess, "service-name"}}
	for mask := 0; mask < 1<<len(decl); mask++ {
		ann := map[string]string{}
		for i, d := range decl {
			if mask&(1<<i) != 0 {
				ann[d[0]] = d[1]
			}
		}
		svc := lbService("default", "web", nil)
		svc.Annotations = ann
		e, ov, err := ServiceBase("test", svc, mustCluster(t, core.ClusterProfile{}), core.NodeFilter{})
		if err != nil {
			t.Fatal(err)
		}
		before := len(e.Reasons)
		ov.Apply(&e)
		if added := len(e.Reasons) - before; added != ov.declared() {
			t.Errorf("%v: Apply added %d reasons, declared() says %d", ann, added, ov.declared())
		}
	}
}

func TestBoolAnnotation(t *testing.T) {
	ann := map[string]string{"a": "true", "b": "false", "c": "ture", "d": "TRUE", "e": ""}
	for key, want := range map[string]core.Fact{"a": core.Yes, "b": core.No, "missing": core.Unknown} {
		if got, err := BoolAnnotation(ann, key); err != nil || got != want {
			t.Errorf("%s: %v %v", key, got, err)
		}
	}
	for _, key := range []string{"c", "d", "e"} {
		got, err := BoolAnnotation(ann, key)
		if err == nil || got != core.Unknown || !strings.Contains(err.Error(), "metadata.annotations["+key+"]") {
			t.Errorf("%s: %v %v", key, got, err)
		}
	}
}

func TestIngressBase(t *testing.T) {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "site"},
		Spec: networkingv1.IngressSpec{TLS: []networkingv1.IngressTLS{{Hosts: []string{"a"}}},
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web"}}}}
	web := lbService("default", "web", map[string]string{"app": "web"})
	web.Spec.Type = corev1.ServiceTypeNodePort
	e, _, err := IngressBase("test", ing, mustCluster(t, core.ClusterProfile{}, web, node("n1", nil), node("n2", nil)), core.NodeFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Layer != core.Layer7 || e.Protocols != core.HTTP|core.HTTPS || e.Binding != core.NodePortCluster || e.Placement.NodesBehindLB != 2 {
		t.Errorf("exposure = %+v", e)
	}
	ing.Annotations = map[string]string{core.AnnotationClients: "!!"}
	if _, _, err := IngressBase("test", ing, mustCluster(t, core.ClusterProfile{}), core.NodeFilter{}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("err = %v", err)
	}
}

func TestNodeSeparationOffer(t *testing.T) {
	e := &core.Exposure{Scope: core.Private, Layer: core.Layer4, Protocols: core.TCP, Intercept: core.No, LBSourceNAT: core.No, Binding: core.NodePortCluster, Placement: core.Placement{NodesBehindLB: 3, ClientNodes: []string{"n1"}}}
	o := NodeSeparationOffer(e, map[string]string{"tier": "web", "app": "shop"})
	if !o.Ready() || !strings.Contains(o.Action, "Pods labelled app=shop,tier=web") || !strings.Contains(o.Action, "externalTrafficPolicy: Local") {
		t.Errorf("offer = %+v", o)
	}
	e.Binding = core.NodePortLocal
	if o := NodeSeparationOffer(e, map[string]string{"app": "shop"}); strings.Contains(o.Action, "externalTrafficPolicy") {
		t.Errorf("Local binding needs no policy change: %s", o.Action)
	}
	e.Placement.ClientNodes = nil
	o = NodeSeparationOffer(e, nil)
	if o.Ready() || len(o.Unmet) != 2 || o.Unmet[0].Reason.Code != CodeClientsUndeclared {
		t.Errorf("offer without clients or labels = %+v", o)
	}
}

func TestDNSSteeringOffer(t *testing.T) {
	o := DNSSteeringOffer(&core.Exposure{}, "shop", "web", []string{"shop.example.com"})
	if !o.Ready() || o.Remedy != core.DNSSteering || !o.Costs.LosesLBFeatures || o.Costs.ClientIP != core.ClientIPKept {
		t.Errorf("offer = %+v", o)
	}
	if !strings.Contains(o.Action, "rewrite name exact shop.example.com web.shop.svc.cluster.local") {
		t.Errorf("action lacks the CoreDNS rewrite: %s", o.Action)
	}
}

func TestIngressBinding(t *testing.T) {
	local := lbService("default", "api", nil)
	local.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	cluster := lbService("default", "web", nil)
	if b := IngressBinding([]*corev1.Service{local, cluster}); b != core.NodePortCluster {
		t.Errorf("binding = %s, want cluster (web is Cluster)", b)
	}
	if b := IngressBinding([]*corev1.Service{local}); b != core.NodePortLocal {
		t.Errorf("binding = %s, want local", b)
	}
	if b := IngressBinding(nil); b != core.BindingUnknown {
		t.Errorf("binding = %s, want unknown", b)
	}
}

// intercepted is a private, intercepted exposure: it cannot loop.
func intercepted(mod func(*core.Exposure)) *core.Exposure {
	e := &core.Exposure{Object: core.ObjectRef{Kind: "Service", Namespace: "shop", Name: "api"}, Scope: core.Private, Layer: core.Layer4,
		Protocols: core.TCP, Intercept: core.Yes, InterceptMasquerades: core.No, LBSourceNAT: core.Yes, Binding: core.NodePortLocal}
	if mod != nil {
		mod(e)
	}
	return e
}

func TestThroughLBOffer(t *testing.T) {
	o := ThroughLBOffer(intercepted(nil), "publish Proxy")
	if !o.Ready() || o.Path != core.PathProxy || o.Costs.ClientIP != core.ClientIPLost {
		t.Errorf("with LB SNAT: %+v", o)
	}
	o = ThroughLBOffer(intercepted(func(e *core.Exposure) { e.ProxyProtocol = core.Yes }), "publish Proxy")
	if o.Costs.ClientIP != core.ClientIPProxyProtocol {
		t.Errorf("with the PROXY protocol the client address survives SNAT: %s", o.Costs.ClientIP)
	}
	for fact, kind := range map[core.Fact]core.PreconditionKind{core.No: core.PreconditionUnsupported, core.Unknown: core.PreconditionUnknown} {
		o = ThroughLBOffer(intercepted(func(e *core.Exposure) { e.LBSourceNAT = fact }), "publish Proxy")
		if o.Ready() || o.Unmet[0].Kind != kind || o.Unmet[0].Reason.Code != CodeThroughLBLoops {
			t.Errorf("LB SNAT %s: unmet %+v, want %s %s", fact, o.Unmet, kind, CodeThroughLBLoops)
		}
	}
	o = ThroughLBOffer(intercepted(func(e *core.Exposure) { e.LBSourceNAT = core.No; e.Placement.Separated = core.Yes }), "publish Proxy")
	if !o.Ready() {
		t.Errorf("clients kept apart make the path loop-safe: %+v", o.Unmet)
	}
}

func TestBackendExpectsAnnotation(t *testing.T) {
	cases := map[string]struct {
		value string
		want  string // LBDependence.String, or "error"
	}{
		"one":                     {"proxy-protocol", "proxy-protocol"},
		"version":                 {"proxy-protocol-v2", "proxy-protocol-v2"},
		"several":                 {"tls, l7-routing", "tls,l7-routing"},
		"none":                    {"none", "none"},
		"typo":                    {"proxy-protcol", "error"},
		"two versions":            {"proxy-protocol-v1,proxy-protocol-v2", "error"},
		"none and tls":            {"none,tls", "error"},
		"client address":          {"client-address", "client-address"},
		"none and client address": {"none,client-address", "error"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{Annotations: map[string]string{core.AnnotationBackendExpects: tc.value}}
			o, errs := ReadOverrides(obj)
			if tc.want == "error" {
				if len(errs) != 1 || errs[0].Field != "metadata.annotations[loopguard.io/backend-expects]" {
					t.Fatalf("errors %v, want one naming the annotation", errs)
				}
				return
			}
			if len(errs) > 0 || o.Needs == nil {
				t.Fatalf("errors %v needs %v", errs, o.Needs)
			}
			if got := o.Needs.String(); got != tc.want {
				t.Errorf("%q read as %q, want %q", tc.value, got, tc.want)
			}
			e := intercepted(nil)
			o.Apply(e)
			wantRisk := core.RiskNone
			// The client address asks nothing of the path: the VIP path keeps it.
			if tc.want != "none" && tc.want != "client-address" {
				wantRisk = core.RiskAtRisk
			}
			a := core.Assess(e)
			if a.Risk != wantRisk {
				t.Errorf("declared %q: risk %s, want %s", tc.value, a.Risk, wantRisk)
			}
			if tc.want == "client-address" && a.NeedsClientAddress != core.Yes {
				t.Errorf("declared %q: needsClientAddress %s, want yes", tc.value, a.NeedsClientAddress)
			}
		})
	}
	// The LB's own header cannot be declared away.
	e := intercepted(func(e *core.Exposure) { e.ProxyProtocol = core.Yes })
	o, _ := ReadOverrides(&metav1.ObjectMeta{Annotations: map[string]string{core.AnnotationBackendExpects: "none"}})
	o.Apply(e)
	if a := core.Assess(e); a.Symptom != core.SymptomProtocolError {
		t.Errorf("none over an LB that sends the header: symptom %s, want protocol-error", a.Symptom)
	}
}

func TestTypedFromUnstructured(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"namespace": "default", "name": "web"}, "spec": map[string]any{"type": "LoadBalancer"}}}
	obj, err := TypedFromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := core.KeyOf(obj); !ok || k != (core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "default", Name: "web"}) {
		t.Errorf("key = %v", k)
	}
	pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}}
	if _, err := TypedFromUnstructured(pod); !errors.Is(err, core.ErrUnsupported) {
		t.Errorf("err = %v", err)
	}
}
