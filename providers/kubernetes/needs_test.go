package kubernetes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loopguard/loopguard/core"
)

// proxyService is a private LoadBalancer Service whose address the node intercepts (ipMode
// VIP on kube-proxy 1.37), with the given annotations.
func proxyService(ann map[string]string, labels map[string]string) *corev1.Service {
	vip := corev1.LoadBalancerIPModeVIP
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "ingress-nginx-controller", Namespace: "ingress-nginx", Annotations: ann, Labels: labels},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "10.0.0.10", IPMode: &vip}}}},
	}
}

var proxyProfile = core.ClusterProfile{ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: "v1.37.2", KubernetesVersion: "v1.37.2"}

// TestCCMProxyProtocolAnnotations: each CCM's PROXY-protocol annotation (as its source parses
// it) tells the dialect that the backends expect the header, so an intercepted address is
// judged the other way; a value the CCM does not treat as on draws no conclusion.
func TestCCMProxyProtocolAnnotations(t *testing.T) {
	cases := map[string]struct {
		ann     map[string]string
		on      bool
		version string
	}{
		// No type: the cloud-controller-manager's Classic ELB, whose PROXY protocol is v1.
		"aws star":                  {ann: map[string]string{annAWSProxyProtocol: "*"}, on: true, version: "v1"},
		"aws other value":           {ann: map[string]string{annAWSProxyProtocol: "true"}},
		"aws target group v2":       {ann: map[string]string{annAWSTargetGroupAttrs: "proxy_protocol_v2.enabled=true,preserve_client_ip.enabled=false"}, on: true, version: "v2"},
		"hetzner bool":              {ann: map[string]string{annHetznerProxyProtocol: "TRUE"}, on: true},
		"hetzner off":               {ann: map[string]string{annHetznerProxyProtocol: "false"}},
		"openstack v2":              {ann: map[string]string{annOpenStackProxyProtocol: "v2"}, on: true, version: "v2"},
		"openstack true":            {ann: map[string]string{annOpenStackProxyProtocol: "true"}, on: true, version: "v1"},
		"openstack case matters":    {ann: map[string]string{annOpenStackProxyProtocol: "V2"}},
		"digitalocean":              {ann: map[string]string{annDOProxyProtocol: "true"}, on: true, version: "v1"},
		"scaleway v2 star":          {ann: map[string]string{annScalewayProxyV2: "*"}, on: true, version: "v2"},
		"scaleway v1 on our port":   {ann: map[string]string{annScalewayProxyV1: "443,80"}, on: true, version: "v1"},
		"scaleway v1 on other port": {ann: map[string]string{annScalewayProxyV1: "443"}},
		"linode default v2":         {ann: map[string]string{annLinodeDefaultProxy: "v2"}, on: true, version: "v2"},
		"linode none":               {ann: map[string]string{annLinodeDefaultProxy: "none"}},
		"linode deprecated v1":      {ann: map[string]string{annLinodeProxyDeprecated: "v1"}, on: true, version: "v1"},
		"oci nlb":                   {ann: map[string]string{annOCILBType: "nlb", annOCINLBProxyV2: "True"}, on: true, version: "v2"},
		"oci lb version 1":          {ann: map[string]string{annOCIProxyProtocolVersion: "1"}, on: true, version: "v1"},
		"oci lb version nonsense":   {ann: map[string]string{annOCIProxyProtocolVersion: "x"}},
		"no annotation at all":      {},
	}
	d := NewDialect(nil)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, _ := core.NewCluster(proxyProfile)
			tr, err := d.Translate(proxyService(tc.ann, nil), c)
			if err != nil {
				t.Fatal(err)
			}
			e := &tr.Exposure
			record(e.Reasons)
			got := e.Needs.ProxyHeader == core.Yes
			if got != tc.on || e.Needs.ProxyVersion != tc.version {
				t.Fatalf("proxy header %v version %q, want %v %q (reasons %v)", got, e.Needs.ProxyVersion, tc.on, tc.version, e.Reasons)
			}
			a := core.Assess(e)
			record(a.Reasons)
			if tc.on && (a.Risk != core.RiskAtRisk || a.Symptom != core.SymptomProtocolError) {
				t.Errorf("intercepted with the header expected: %s %s, want at-risk protocol-error", a.Risk, a.Symptom)
			}
			if !tc.on && a.Risk != core.RiskNone {
				t.Errorf("intercepted, plain backend: %s, want none", a.Risk)
			}
		})
	}
}

// TestProxyProtocolDecidesIPModeProxy: the ipMode those CCMs should publish. Hetzner's LB
// proxies (it replaces the source), so the decision is through-lb, path Proxy, which the
// status driver and the CCM decorator publish; DigitalOcean documents its load balancer as a
// proxy too (docs/clouds.md), so the same holds there.
func TestProxyProtocolDecidesIPModeProxy(t *testing.T) {
	d := NewDialect(nil)
	for name, tc := range map[string]struct {
		ann  map[string]string
		want core.Remedy
		path core.Path
	}{
		"hetzner":                    {ann: map[string]string{annHetznerProxyProtocol: "true"}, want: core.ThroughLB, path: core.PathProxy},
		"digitalocean":               {ann: map[string]string{annDOProxyProtocol: "true"}, want: core.ThroughLB, path: core.PathProxy},
		"digitalocean declared snat": {ann: map[string]string{annDOProxyProtocol: "true", core.AnnotationLBSourceNAT: "true"}, want: core.ThroughLB, path: core.PathProxy},
	} {
		t.Run(name, func(t *testing.T) {
			c, _ := core.NewCluster(proxyProfile)
			res, err := core.Evaluate(d, proxyService(tc.ann, nil), c, core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			recordResult(res)
			if res.Decision.Remedy != tc.want || res.Decision.Path != tc.path {
				t.Fatalf("decision %s (%q), want %s (%q); rejected %+v", res.Decision.Remedy, res.Decision.Path, tc.want, tc.path, res.Decision.Rejected)
			}
			for _, r := range res.Decision.Rejected {
				if r.Remedy == core.InterceptVIP && r.Reason.Code != core.CodeDecideKeepsOffLB {
					t.Errorf("intercept-vip rejected for %s", r.Reason.Code)
				}
			}
		})
	}
}

// TestIngressNginxUsePROXYProtocol: the controller's ConfigMap, found as the official manifests
// and the Helm chart name it.
func TestIngressNginxUsePROXYProtocol(t *testing.T) {
	labels := map[string]string{"app.kubernetes.io/name": "ingress-nginx"}
	cm := func(v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ingressNginxConfigMap, Namespace: "ingress-nginx"}, Data: map[string]string{ingressNginxUsePROXY: v}}
	}
	d := NewDialect(nil)
	for name, tc := range map[string]struct {
		labels map[string]string
		cm     *corev1.ConfigMap
		on     bool
	}{
		"on":              {labels: labels, cm: cm("true"), on: true},
		"off":             {labels: labels, cm: cm("false")},
		"no configmap":    {labels: labels},
		"not the ingress": {cm: cm("true")},
	} {
		t.Run(name, func(t *testing.T) {

			c, _ := core.NewCluster(proxyProfile)
			if tc.cm != nil {
				c, _ = core.NewCluster(proxyProfile, tc.cm)
			}
			tr, err := d.Translate(proxyService(nil, tc.labels), c)
			if err != nil {
				t.Fatal(err)
			}
			record(tr.Exposure.Reasons)
			if got := tr.Exposure.Needs.ProxyHeader == core.Yes; got != tc.on {
				t.Errorf("proxy header %v, want %v (reasons %v)", got, tc.on, tr.Exposure.Reasons)
			}
		})
	}
}
