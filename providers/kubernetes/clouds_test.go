package kubernetes

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/drivertest"
)

// cloudService is a private-or-not LoadBalancer Service with the given annotations, protocol
// and status entry.
func cloudService(name string, ann map[string]string, proto corev1.Protocol, ing corev1.LoadBalancerIngress) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: ann},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "p", Port: 80, Protocol: proto}}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{ing}}},
	}
}

func cloudCluster(t *testing.T, providerID string) *core.Cluster {
	t.Helper()
	var objs []runtime.Object
	for _, n := range []string{"node-a", "node-b"} {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"kubernetes.io/hostname": n}},
			Spec: corev1.NodeSpec{ProviderID: providerID + n}})
	}
	c, err := core.NewCluster(core.ClusterProfile{ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: "v1.32.4", KubernetesVersion: "v1.32.4"}, objs...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var (
	awsHost = corev1.LoadBalancerIngress{Hostname: "k8s-shop-x.elb.us-east-1.amazonaws.com"}
	ipVIP   = corev1.LoadBalancerIngress{IP: "10.0.0.20"}
)

// TestCloudDetection: the cloud comes from the class, then the annotations, then every Node's
// providerID; two clouds' marks say nothing.
func TestCloudDetection(t *testing.T) {
	cls := "service.k8s.aws/nlb"
	for name, tc := range map[string]struct {
		svc        *corev1.Service
		providerID string
		want       Cloud
	}{
		"class": {svc: func() *corev1.Service {
			s := cloudService("a", nil, "TCP", awsHost)
			s.Spec.LoadBalancerClass = &cls
			return s
		}(), want: CloudAWS},
		"annotation":           {svc: cloudService("a", map[string]string{"service.beta.kubernetes.io/scw-loadbalancer-use-hostname": "true"}, "TCP", ipVIP), want: CloudScaleway},
		"providerID":           {svc: cloudService("a", nil, "TCP", ipVIP), providerID: "hcloud://", want: CloudHetzner},
		"annotation over node": {svc: cloudService("a", map[string]string{"metallb.universe.tf/address-pool": "p"}, "TCP", ipVIP), providerID: "gce://p/z/", want: CloudMetalLB},
		"two clouds' marks":    {svc: cloudService("a", map[string]string{"service.beta.kubernetes.io/do-loadbalancer-name": "x", "load-balancer.hetzner.cloud/name": "y"}, "TCP", ipVIP), want: CloudUnknown},
		"unknown providerID":   {svc: cloudService("a", nil, "TCP", ipVIP), providerID: "kind://docker/", want: CloudUnknown},
	} {
		t.Run(name, func(t *testing.T) {
			det := detectCloud(tc.svc, cloudCluster(t, tc.providerID))
			got := CloudUnknown
			if det.row != nil {
				got = det.row.Cloud
			}
			if got != tc.want {
				t.Fatalf("cloud %q (%s), want %q", got, det.why, tc.want)
			}
		})
	}
}

// TestCloudRows: each row of docs/sources.md#clouds as a scenario, through the dialect and
// Decide.
func TestCloudRows(t *testing.T) {
	d := NewDialect(nil)
	lbcInstance := map[string]string{annAWSType: "external", annAWSNLBTargetType: "instance", "service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"}
	lbcIP := map[string]string{annAWSType: "external", annAWSNLBTargetType: "ip", "service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"}
	for name, tc := range map[string]struct {
		svc        *corev1.Service
		providerID string
		risk       core.Risk
		symptom    core.Symptom
		snat       core.Fact
		remedy     core.Remedy
		tentative  bool
		code       core.Code // the decision's offer, or the SNAT reason
	}{
		// aws-load-balancer-controller#4803, cloud-provider-aws#1160.
		"AWS LBC instance targets": {svc: cloudService("a", lbcInstance, "TCP", awsHost), risk: core.RiskAtRisk, symptom: core.SymptomIntermittent,
			snat: core.No, remedy: core.LBSourceNAT, code: CodeOfferAWSClientIP},
		"AWS LBC IP targets TCP": {svc: cloudService("a", lbcIP, "TCP", awsHost), risk: core.RiskNone, snat: core.Yes, remedy: core.RemedyNone, code: CodeCloudAWSIPTargets},
		"AWS LBC IP targets UDP": {svc: cloudService("a", lbcIP, "UDP", awsHost), risk: core.RiskAtRisk, symptom: core.SymptomIntermittent, snat: core.No, remedy: core.DNSSteering, code: CodeCloudAWSPreserves},
		"AWS CCM Classic": {svc: cloudService("a", map[string]string{"service.beta.kubernetes.io/aws-load-balancer-internal": "true"}, "TCP", awsHost),
			risk: core.RiskNone, snat: core.Yes, remedy: core.RemedyNone, code: CodeCloudAWSCLB},
		"GKE internal passthrough": {svc: cloudService("a", map[string]string{"networking.gke.io/load-balancer-type": "Internal"}, "TCP", ipVIP),
			risk: core.RiskNone, snat: core.No, remedy: core.RemedyNone, code: CodeCloudDefault},
		// The Alibaba case: intercepted, the header never comes; the hostname is the
		// documented fix, but the CLB passes the client through, so through it a same-node
		// client can loop: the least-failing path, tentatively.
		"Alibaba PROXY protocol": {svc: cloudService("a", map[string]string{"service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": "intranet",
			annAlibabaProxyProto: "on", annExternalDNS: "a.example.com"}, "TCP", ipVIP),
			risk: core.RiskAtRisk, symptom: core.SymptomProtocolError, snat: core.No, remedy: core.ThroughLB, tentative: true, code: core.CodeDecideFailsLeast},
		"DigitalOcean PROXY protocol, named": {svc: cloudService("a", map[string]string{annDOProxyProtocol: "true", annExternalDNS: "a.example.com"}, "TCP", ipVIP),
			risk: core.RiskAtRisk, symptom: core.SymptomProtocolError, snat: core.Yes, remedy: core.ThroughLB, code: CodeOfferHostname},
		"Scaleway PROXY protocol": {svc: cloudService("a", map[string]string{annScalewayProxyV2: "true"}, "TCP", ipVIP),
			risk: core.RiskAtRisk, symptom: core.SymptomProtocolError, snat: core.Yes, remedy: core.ThroughLB, code: CodeOfferHostname},
		"Oracle LB PROXY protocol": {svc: cloudService("a", map[string]string{annOCIProxyProtocolVersion: "2"}, "TCP", ipVIP),
			risk: core.RiskAtRisk, symptom: core.SymptomProtocolError, snat: core.Yes, remedy: core.ThroughLB, code: CodeOfferOCIIPMode},
		"Hetzner PROXY protocol, older CCM publishing VIP": {svc: cloudService("a", map[string]string{annHetznerProxyProtocol: "true", annExternalDNS: "a.example.com"}, "TCP", ipVIP),
			risk: core.RiskAtRisk, symptom: core.SymptomProtocolError, snat: core.Yes, remedy: core.ThroughLB, code: CodeOfferHostname},
		"OpenStack PROXY protocol, older OCCM publishing VIP": {svc: cloudService("a", map[string]string{annOpenStackProxyProtocol: "v2", annExternalDNS: "a.example.com"}, "TCP", ipVIP),
			risk: core.RiskAtRisk, symptom: core.SymptomProtocolError, snat: core.Yes, remedy: core.ThroughLB, code: CodeOfferHostname},
		"Linode NodeBalancer is a proxy": {svc: cloudService("a", nil, "TCP", corev1.LoadBalancerIngress{Hostname: "192-0-2-1.ip.linodeusercontent.com"}), providerID: "linode://",
			snat: core.Yes, code: CodeCloudDefault},
		"MetalLB: the nodes announce, kube-proxy intercepts": {svc: cloudService("a", map[string]string{"metallb.universe.tf/address-pool": "lan"}, "TCP", ipVIP),
			risk: core.RiskNone, snat: core.No, remedy: core.RemedyNone, code: CodeCloudDefault},
		"kube-vip class": {svc: func() *corev1.Service {
			s := cloudService("a", nil, "TCP", ipVIP)
			s.Spec.LoadBalancerClass = ptr("kube-vip.io/kube-vip-class")
			return s
		}(), snat: core.No, code: CodeCloudDefault},
		"Cilium LB IPAM": {svc: cloudService("a", map[string]string{"lbipam.cilium.io/ips": "10.0.0.20"}, "TCP", ipVIP), snat: core.No, code: CodeCloudDefault},
		"Exoscale: unknown stays unknown": {svc: cloudService("a", nil, "TCP", corev1.LoadBalancerIngress{Hostname: "lb.example.com"}), providerID: "exoscale://",
			risk: core.RiskUnknown, snat: core.Unknown},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := core.Evaluate(d, tc.svc, cloudCluster(t, tc.providerID), core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			a, dec := &res.Assessment, &res.Decision
			if tc.risk != "" && a.Risk != tc.risk || tc.symptom != "" && a.Symptom != tc.symptom || res.Exposure.LBSourceNAT != tc.snat {
				t.Fatalf("%s %s snat %s, want %s %s snat %s; reasons %v", a.Risk, a.Symptom, res.Exposure.LBSourceNAT, tc.risk, tc.symptom, tc.snat, a.Reasons)
			}
			if tc.remedy != "" && (dec.Remedy != tc.remedy || dec.Tentative != tc.tentative) {
				t.Fatalf("decision %s tentative %v, want %s %v: %s; rejected %+v", dec.Remedy, dec.Tentative, tc.remedy, tc.tentative, dec.Why, dec.Rejected)
			}
			if tc.code == "" {
				return
			}
			found := false
			for _, r := range append(append([]core.Reason{dec.Reason}, res.Exposure.Reasons...), res.Offers[0].Reason) {
				found = found || r.Code == tc.code
			}
			for _, o := range res.Offers {
				found = found || o.Remedy == dec.Remedy && o.Action == dec.Action && o.Reason.Code == tc.code
			}
			if !found {
				t.Errorf("no %s in the decision or the exposure's reasons: %s %v", tc.code, dec.Reason.Code, res.Exposure.Reasons)
			}
		})
	}
}

// TestCloudFixesThroughReconciler: the clouds' fixes are planned as annotation changes,
// applied through the cluster writer, and re-assessed from what was written.
func TestCloudFixesThroughReconciler(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		svc *corev1.Service
		// key and value the plan must set.
		key, value string
		// status is what the CCM publishes once it read the annotation (nil: unchanged).
		status *corev1.LoadBalancerIngress
	}{
		"AWS preserve_client_ip off, other attributes kept": {
			svc: cloudService("web", map[string]string{annAWSType: "external", annAWSNLBTargetType: "instance",
				"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal", annAWSTargetGroupAttrs: "deregistration_delay.timeout_seconds=30"}, "TCP", awsHost),
			key: annAWSTargetGroupAttrs, value: "deregistration_delay.timeout_seconds=30,preserve_client_ip.enabled=false"},
		"Scaleway use-hostname": {svc: cloudService("web", map[string]string{annScalewayProxyV2: "true"}, "TCP", ipVIP),
			key: "service.beta.kubernetes.io/scw-loadbalancer-use-hostname", value: "true",
			status: &corev1.LoadBalancerIngress{Hostname: "10-0-0-20.lb.fr-par.scw.cloud"}},
		"DigitalOcean hostname from external-dns": {svc: cloudService("web", map[string]string{annDOProxyProtocol: "true", annExternalDNS: "web.example.com,www.example.com"}, "TCP", ipVIP),
			key: "service.beta.kubernetes.io/do-loadbalancer-hostname", value: "web.example.com",
			status: &corev1.LoadBalancerIngress{Hostname: "web.example.com"}},
		"Oracle ingress-ip-mode proxy": {svc: cloudService("web", map[string]string{annOCIProxyProtocolVersion: "2"}, "TCP", ipVIP),
			key: annOCIIngressIPMode, value: "proxy",
			status: &corev1.LoadBalancerIngress{IP: "10.0.0.20", IPMode: ptr(corev1.LoadBalancerIPModeProxy)}},
	} {
		t.Run(name, func(t *testing.T) {
			u, err := drivertest.ToUnstructured(tc.svc)
			if err != nil {
				t.Fatal(err)
			}
			w := drivertest.NewCluster(u)
			r := core.NewReconciler(NewProvider(nil), core.WithClusterWriter(w))
			c := cloudCluster(t, "")
			plan, err := r.Plan(ctx, tc.svc, c)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Changes) != 1 || plan.Changes[0].By != core.WriterCluster || plan.Changes[0].To != tc.value {
				t.Fatalf("changes %v, want %s: %q by the cluster writer (decision %s: %s)", plan.Changes, tc.key, tc.value, plan.Decision.Remedy, plan.Decision.Why)
			}
			if _, err := r.Apply(ctx, plan); err != nil {
				t.Fatal(err)
			}
			var got corev1.Service
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(w.Objects()[0].Object, &got); err != nil {
				t.Fatal(err)
			}
			if got.Annotations[tc.key] != tc.value {
				t.Fatalf("written %q, want %q", got.Annotations[tc.key], tc.value)
			}
			for k, v := range tc.svc.Annotations {
				if k != tc.key && got.Annotations[k] != v {
					t.Errorf("annotation %s changed to %q", k, got.Annotations[k])
				}
			}
			if tc.status != nil {
				got.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{*tc.status}
			}
			again, err := r.Plan(ctx, &got, c)
			if err != nil {
				t.Fatal(err)
			}
			if len(again.Changes) != 0 || again.Decision.Remedy != core.RemedyNone {
				t.Fatalf("after the fix: %s with %v, want nothing to do (%s)", again.Decision.Remedy, again.Changes, again.Decision.Why)
			}
		})
	}
}

// TestFailsLeastIsTentative: the Reconciler does not apply a tentative recommendation.
func TestFailsLeastIsTentative(t *testing.T) {
	svc := cloudService("web", map[string]string{"service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": "intranet",
		annAlibabaProxyProto: "on", annExternalDNS: "web.example.com"}, "TCP", ipVIP)
	u, _ := drivertest.ToUnstructured(svc)
	r := core.NewReconciler(NewProvider(nil), core.WithClusterWriter(drivertest.NewCluster(u)))
	plan, err := r.Plan(context.Background(), svc, cloudCluster(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Decision.Tentative || len(plan.Changes) != 1 {
		t.Fatalf("decision %s tentative %v, changes %v", plan.Decision.Remedy, plan.Decision.Tentative, plan.Changes)
	}
	if _, err := r.Apply(context.Background(), plan); !errors.Is(err, core.ErrPrecondition) {
		t.Fatalf("apply: %v, want a precondition error", err)
	}
}

func ptr[T any](v T) *T { return &v }
