package core

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestServiceBase(t *testing.T) {
	svc := lbService("default", "dns", map[string]string{"app": "dns"})
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Port: 53, Protocol: corev1.ProtocolUDP})
	svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	c := mustCluster(t, ClusterProfile{ProxyMode: ProxyModeIPTables}, node("n1", nil))
	e, _, err := ServiceBase("test", svc, c, NodeFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Layer != Layer4 || e.Protocols != TCP|UDP || e.Binding != NodePortLocal || e.Provider != "test" ||
		e.Placement.NodesBehindLB != 1 || e.Hairpin == nil || e.Object != (ObjectRef{"Service", "default", "dns"}) ||
		e.InterceptMasquerades != No {
		t.Errorf("exposure = %+v", e)
	}
}

func TestKubeProxyMasquerades(t *testing.T) {
	for _, tc := range []struct {
		m      ProxyMode
		policy corev1.ServiceExternalTrafficPolicy
		want   Fact
	}{
		{ProxyModeIPTables, corev1.ServiceExternalTrafficPolicyCluster, Yes},
		{ProxyModeIPTables, "", Yes},
		{ProxyModeNFTables, corev1.ServiceExternalTrafficPolicyLocal, No},
		{ProxyModeIPVS, corev1.ServiceExternalTrafficPolicyCluster, Yes},
		{ProxyModeEBPF, corev1.ServiceExternalTrafficPolicyCluster, Unknown},
		{ProxyModeUnknown, corev1.ServiceExternalTrafficPolicyLocal, Unknown},
	} {
		if got := KubeProxyMasquerades(tc.m, tc.policy); got != tc.want {
			t.Errorf("%s/%s: %s, want %s", tc.m, tc.policy, got, tc.want)
		}
	}
}

func TestServiceBaseNilCluster(t *testing.T) {
	svc := lbService("default", "sig", nil)
	svc.Spec.Ports[0].Protocol = corev1.ProtocolSCTP
	e, _, err := ServiceBase("test", svc, nil, NodeFilter{})
	if err != nil || e.Protocols != SCTP || e.Placement.NodesBehindLB != 0 || e.Hairpin != nil {
		t.Errorf("exposure = %+v, err %v", e, err)
	}
	e.LBSourceNAT, e.Intercept, e.Scope = Yes, No, Private
	if a := Assess(&e); a.Source.ClientIP != ClientIPLost {
		t.Errorf("SCTP behind source NAT: client IP %s, want lost", a.Source.ClientIP)
	}
}

func TestServiceBaseNotExposed(t *testing.T) {
	svc := lbService("default", "web", nil)
	svc.Spec.Type = ""
	_, _, err := ServiceBase("test", svc, mustCluster(t, ClusterProfile{}), NodeFilter{})
	if !IsNotExposed(err) || !strings.Contains(err.Error(), "ClusterIP") {
		t.Errorf("err = %v", err)
	}
}

func TestServiceBaseRejectsBadInput(t *testing.T) {
	svc := lbService("default", "web", nil)
	svc.Annotations = map[string]string{AnnotationLBScope: "internal", AnnotationLBSourceNAT: "True"}
	svc.Spec.Ports[0].Protocol = "QUIC"
	e, _, err := ServiceBase("test", svc, mustCluster(t, ClusterProfile{}), NodeFilter{})
	var inv *InvalidError
	if !errors.As(err, &inv) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want *InvalidError", err)
	}
	if !cmp.Equal(e, Exposure{}) {
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
	svc.Annotations = map[string]string{AnnotationLBScope: "private", AnnotationLBSourceNAT: "true", AnnotationClientAccess: "service-name", AnnotationClients: "app=fe"}
	e, ov, err := ServiceBase("test", svc, mustCluster(t, ClusterProfile{}), NodeFilter{})
	if err != nil {
		t.Fatal(err)
	}
	e.Scope, e.LBSourceNAT = Public, No // what a dialect might have guessed
	ov.Apply(&e)
	if e.Scope != Private || e.LBSourceNAT != Yes || e.Access != AccessServiceName || ov.Clients == nil || ov.Clients.String() != "app=fe" {
		t.Errorf("exposure = %+v", e)
	}
	if n := len(e.Reasons); n != 2 || e.Reasons[0].Code != RuleOverride.Code {
		t.Errorf("reasons = %v, want one per declared fact", e.Reasons)
	}
}

func TestBoolAnnotation(t *testing.T) {
	ann := map[string]string{"a": "true", "b": "false", "c": "ture", "d": "TRUE", "e": ""}
	for key, want := range map[string]Fact{"a": Yes, "b": No, "missing": Unknown} {
		if got, err := BoolAnnotation(ann, key); err != nil || got != want {
			t.Errorf("%s: %v %v", key, got, err)
		}
	}
	for _, key := range []string{"c", "d", "e"} {
		got, err := BoolAnnotation(ann, key)
		if err == nil || got != Unknown || !strings.Contains(err.Error(), "metadata.annotations["+key+"]") {
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
	e, _, err := IngressBase("test", ing, mustCluster(t, ClusterProfile{}, web, node("n1", nil), node("n2", nil)), NodeFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Layer != Layer7 || e.Protocols != HTTP|HTTPS || e.Binding != NodePortCluster || e.Placement.NodesBehindLB != 2 {
		t.Errorf("exposure = %+v", e)
	}
	ing.Annotations = map[string]string{AnnotationClients: "!!"}
	if _, _, err := IngressBase("test", ing, mustCluster(t, ClusterProfile{}), NodeFilter{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("err = %v", err)
	}
}

func TestNodeSeparationOffer(t *testing.T) {
	e := throughLB(func(e *Exposure) { e.Placement.ClientNodes = []string{"n1"} })
	o := NodeSeparationOffer(e, map[string]string{"tier": "web", "app": "shop"})
	if !o.Ready() || !strings.Contains(o.Action, "Pods labelled app=shop,tier=web") || !strings.Contains(o.Action, "externalTrafficPolicy: Local") {
		t.Errorf("offer = %+v", o)
	}
	e.Binding = NodePortLocal
	if o := NodeSeparationOffer(e, map[string]string{"app": "shop"}); strings.Contains(o.Action, "externalTrafficPolicy") {
		t.Errorf("Local binding needs no policy change: %s", o.Action)
	}
	e.Placement.ClientNodes = nil
	o = NodeSeparationOffer(e, nil)
	if o.Ready() || len(o.Unmet) != 2 || o.Unmet[0].Reason.Code != RuleClientsUndeclared.Code {
		t.Errorf("offer without clients or labels = %+v", o)
	}
}

func TestDNSSteeringOffer(t *testing.T) {
	o := DNSSteeringOffer(&Exposure{}, "shop", "web", []string{"shop.example.com"})
	if !o.Ready() || o.Remedy != DNSSteering || !o.Costs.LosesLBFeatures || o.Costs.ClientIP != ClientIPKept {
		t.Errorf("offer = %+v", o)
	}
	if !strings.Contains(o.Action, "rewrite name exact shop.example.com web.shop.svc.cluster.local") {
		t.Errorf("action lacks the CoreDNS rewrite: %s", o.Action)
	}
}

// fakeDialect is a one-line test double for Evaluate.
type fakeDialect struct {
	t   *Translation
	err error
}

func (f fakeDialect) Name() string  { return "fake" }
func (f fakeDialect) Rules() []Rule { return nil }
func (f fakeDialect) Translate(runtime.Object, *Cluster) (*Translation, error) {
	return f.t, f.err
}

func TestEvaluate(t *testing.T) {
	e := throughLB(nil)
	r, err := Evaluate(fakeDialect{t: &Translation{Exposure: *e, Offers: []Offer{offerIntercept, offerDNS}}}, nil, nil, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Assessment.Risk != RiskAtRisk || r.Decision.Remedy != InterceptVIP || len(r.Offers) != 2 {
		t.Errorf("result = %+v", r)
	}
	boom := errors.New("boom")
	if _, err := Evaluate(fakeDialect{err: boom}, nil, nil, Policy{}); !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
}

func TestRulesAreUniqueAndDocumented(t *testing.T) {
	seen := map[Code]bool{}
	for _, r := range Rules() {
		if r.Code == "" || r.Summary == "" || r.Source == "" {
			t.Errorf("rule %+v lacks a code, summary or source", r)
		}
		if seen[r.Code] {
			t.Errorf("code %s is used twice", r.Code)
		}
		seen[r.Code] = true
	}
}
