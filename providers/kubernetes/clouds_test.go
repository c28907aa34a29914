package kubernetes

import (
	"context"
	"errors"
	"strings"
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

// IBM Cloud: a Node's providerID (ibm/ibm_instances.go providerIDV2, without the worker) and
// the VPC ALB's hostname status (vpc_lbaas.go GetLoadBalancerStatus).
const (
	ibmProviderID = "ibm://acct///cluster1/"
	annIBMIPType  = "service.kubernetes.io/ibm-load-balancer-cloud-provider-ip-type"
)

var ibmALBStatus = corev1.LoadBalancerIngress{Hostname: "1234abcd-us-south.lb.appdomain.cloud"}

var (
	awsHost = corev1.LoadBalancerIngress{Hostname: "k8s-shop-x.elb.us-east-1.amazonaws.com"}
	ipVIP   = corev1.LoadBalancerIngress{IP: "10.0.0.20"}
	// linodeStatus is what the Linode controller publishes by default: hostname and IP in one
	// entry (cloud/linode/loadbalancers.go makeLoadBalancerStatus).
	linodeStatus = corev1.LoadBalancerIngress{Hostname: "10-0-0-20.ip.linodeusercontent.com", IP: "10.0.0.20"}
)

// alibabaNLBService is an intranet ACK NLB Service with the NLB's DNS name as its status
// (nlbv2/nlb_controller.go updateServiceStatus).
func alibabaNLBService(ann map[string]string) *corev1.Service {
	all := map[string]string{"service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": "intranet"}
	for k, v := range ann {
		all[k] = v
	}
	s := cloudService("a", all, "TCP", corev1.LoadBalancerIngress{Hostname: "nlb-x.cn-hangzhou.nlb.aliyuncsslb.com"})
	s.Spec.LoadBalancerClass = ptr(alibabaNLBClass)
	return s
}

// TestCloudDetection: the cloud comes from the class, then the annotations, then every Node's
// providerID; two clouds' marks say nothing.
func TestCloudDetection(t *testing.T) {
	cls := "service.k8s.aws/nlb"
	for name, tc := range map[string]struct {
		svc        *corev1.Service
		providerID string
		want       string
	}{
		"class": {svc: func() *corev1.Service {
			s := cloudService("a", nil, "TCP", awsHost)
			s.Spec.LoadBalancerClass = &cls
			return s
		}(), want: "aws"},
		"annotation":           {svc: cloudService("a", map[string]string{"service.beta.kubernetes.io/scw-loadbalancer-use-hostname": "true"}, "TCP", ipVIP), want: "scaleway"},
		"providerID":           {svc: cloudService("a", nil, "TCP", ipVIP), providerID: "hcloud://", want: "hetzner"},
		"annotation over node": {svc: cloudService("a", map[string]string{"metallb.universe.tf/address-pool": "p"}, "TCP", ipVIP), providerID: "gce://p/z/", want: "metallb"},
		"two clouds' marks":    {svc: cloudService("a", map[string]string{"service.beta.kubernetes.io/do-loadbalancer-name": "x", "load-balancer.hetzner.cloud/name": "y"}, "TCP", ipVIP), want: ""},
		"unknown providerID":   {svc: cloudService("a", nil, "TCP", ipVIP), providerID: "kind://docker/", want: ""},
	} {
		t.Run(name, func(t *testing.T) {
			det := detectCloud(tc.svc, cloudCluster(t, tc.providerID))
			got := ""
			if det.unit != nil {
				got = det.unit.facts().name
			}
			if got != tc.want {
				t.Fatalf("cloud %q (%s), want %q", got, det.why, tc.want)
			}
		})
	}
}

// TestCloudRows: each row of docs/clouds.md as a scenario, through the dialect and
// Decide, then through the Reconciler with the provider the CLI plans with
// (NewCloudFixProvider): a cloud's fix is planned as changes, nothing is planned where there
// is nothing to do, and a remedy only the cloud-controller-manager can carry out is
// unsupported there, not planned by hand.
func TestCloudRows(t *testing.T) {
	d := NewDialect(nil)
	r := core.NewReconciler(NewCloudFixProvider(nil), &core.ReconcilerOptions{ClusterWriter: drivertest.NewCluster()})
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
			snat: core.No, remedy: core.LBSourceNAT, code: codeOfferAWSClientIP},
		"AWS LBC IP targets TCP": {svc: cloudService("a", lbcIP, "TCP", awsHost), risk: core.RiskNone, snat: core.Yes, remedy: core.RemedyNone, code: codeCloudAWSIPTargets},
		"AWS LBC IP targets UDP": {svc: cloudService("a", lbcIP, "UDP", awsHost), risk: core.RiskAtRisk, symptom: core.SymptomIntermittent, snat: core.No, remedy: core.DNSSteering, code: codeCloudAWSPreserves},
		"AWS CCM Classic": {svc: cloudService("a", map[string]string{"service.beta.kubernetes.io/aws-load-balancer-internal": "true"}, "TCP", awsHost),
			risk: core.RiskNone, snat: core.Yes, remedy: core.RemedyNone, code: codeCloudAWSCLB},
		"GKE internal passthrough": {svc: cloudService("a", map[string]string{"networking.gke.io/load-balancer-type": "Internal"}, "TCP", ipVIP),
			risk: core.RiskNone, snat: core.No, remedy: core.RemedyNone, code: codeCloudDefault},
		// The Alibaba case: intercepted, the header never comes; the hostname is the
		// documented fix, but the CLB passes the client through, so through it a same-node
		// client can loop: the least-failing path, tentatively.
		"Alibaba PROXY protocol": {svc: cloudService("a", map[string]string{"service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": "intranet",
			annAlibabaProxyProto: "on", annExternalDNS: "a.example.com"}, "TCP", ipVIP),
			risk: core.RiskAtRisk, symptom: core.SymptomProtocolError, snat: core.No, remedy: core.ThroughLB, tentative: true, code: core.CodeDecideFailsLeast},
		"DigitalOcean PROXY protocol, named": {svc: cloudService("a", map[string]string{annDOType: doRegional, annDOProxyProtocol: "true", annExternalDNS: "a.example.com"}, "TCP", ipVIP),
			risk: core.RiskAtRisk, symptom: core.SymptomProtocolError, snat: core.Yes, remedy: core.ThroughLB, code: codeOfferHostname},
		"Scaleway PROXY protocol": {svc: cloudService("a", map[string]string{annScalewayProxyV2: "true"}, "TCP", ipVIP),
			risk: core.RiskAtRisk, symptom: core.SymptomProtocolError, snat: core.Yes, remedy: core.ThroughLB, code: codeOfferHostname},
		"Oracle LB PROXY protocol": {svc: cloudService("a", map[string]string{annOCIProxyProtocolVersion: "2"}, "TCP", ipVIP),
			risk: core.RiskAtRisk, symptom: core.SymptomProtocolError, snat: core.Yes, remedy: core.ThroughLB, code: codeOfferOCIIPMode},
		"Hetzner PROXY protocol, older CCM publishing VIP": {svc: cloudService("a", map[string]string{annHetznerProxyProtocol: "true", annExternalDNS: "a.example.com"}, "TCP", ipVIP),
			risk: core.RiskAtRisk, symptom: core.SymptomProtocolError, snat: core.Yes, remedy: core.ThroughLB, code: codeOfferHostname},
		"OpenStack PROXY protocol, older OCCM publishing VIP": {svc: cloudService("a", map[string]string{annOpenStackProxyProtocol: "v2", annExternalDNS: "a.example.com"}, "TCP", ipVIP),
			risk: core.RiskAtRisk, symptom: core.SymptomProtocolError, snat: core.Yes, remedy: core.ThroughLB, code: codeOfferHostname},
		"GKE external passthrough": {svc: func() *corev1.Service {
			s := cloudService("a", nil, "TCP", ipVIP)
			s.Spec.LoadBalancerClass = ptr("networking.gke.io/l4-regional-external")
			return s
		}(), risk: core.RiskNone, snat: core.No, remedy: core.RemedyNone, code: codeCloudDefault},
		"Azure internal Standard LB": {svc: cloudService("a", map[string]string{"service.beta.kubernetes.io/azure-load-balancer-internal": "true"}, "TCP", ipVIP),
			risk: core.RiskNone, snat: core.No, remedy: core.RemedyNone, code: codeCloudDefault},
		// Floating IP off sends to the NodePort instead of the frontend IP; the source is still
		// the client's and the status still an IP, which the nodes intercept.
		"Azure external, floating IP off": {svc: cloudService("a", map[string]string{"service.beta.kubernetes.io/azure-disable-load-balancer-floating-ip": "true"}, "TCP", ipVIP),
			providerID: "azure:///subscriptions/s/resourceGroups/r/providers/Microsoft.Compute/virtualMachines/",
			risk:       core.RiskNone, snat: core.No, remedy: core.RemedyNone, code: codeCloudDefault},
		// A backend that needs the LB on GKE: the controller publishes VIP only, so the generic
		// "publish ipMode Proxy" is unsupported there and nothing else is offered.
		"GKE, backends need TLS from the LB": {svc: cloudService("a", map[string]string{"networking.gke.io/load-balancer-type": "Internal", "loopguard.io/backend-expects": "tls"}, "TCP", ipVIP),
			risk: core.RiskAtRisk, symptom: core.SymptomProtocolError, snat: core.No, remedy: core.RemedyNone},
		"Alibaba NLB keeps the client IP": {svc: alibabaNLBService(map[string]string{annAlibabaPreserveClient: "on"}),
			risk: core.RiskAtRisk, symptom: core.SymptomIntermittent, snat: core.No, remedy: core.LBSourceNAT, code: codeOfferAlibabaClientIP},
		"Alibaba NLB without preservation": {svc: alibabaNLBService(map[string]string{annAlibabaPreserveClient: "off"}),
			risk: core.RiskNone, snat: core.Yes, remedy: core.RemedyNone, code: codeAlibabaNLBPreserve},
		"Alibaba NLB, preservation not said: unknown": {svc: alibabaNLBService(nil), risk: core.RiskUnknown, snat: core.Unknown},
		"Alibaba NLB with PROXY protocol: the DNS name reaches the NLB": {svc: alibabaNLBService(map[string]string{annAlibabaPreserveClient: "off", annAlibabaProxyProto: "on"}),
			risk: core.RiskNone, snat: core.Yes, remedy: core.RemedyNone},
		// The DigitalOcean controller never publishes ipMode: without a DNS name the hostname
		// fix is the one left, tentatively (it needs the name).
		"DigitalOcean PROXY protocol, no name": {svc: cloudService("a", map[string]string{annDOType: doRegional, annDOProxyProtocol: "true"}, "TCP", ipVIP),
			risk: core.RiskAtRisk, symptom: core.SymptomProtocolError, snat: core.Yes, remedy: core.ThroughLB, tentative: true, code: core.CodeDecideFailsLeast},
		// Linode publishes the NodeBalancer's hostname and IP in one entry; hostname-only-ingress
		// drops the IP, and needs no DNS name.
		"Linode PROXY protocol": {svc: cloudService("a", map[string]string{annLinodeDefaultProxy: "v2"}, "TCP", linodeStatus), providerID: "linode://",
			risk: core.RiskAtRisk, symptom: core.SymptomProtocolError, snat: core.Yes, remedy: core.ThroughLB, code: codeOfferHostname},
		// Hetzner (v1.21.0+) and OpenStack (v1.30.0+) publish ipMode Proxy by themselves with the
		// PROXY protocol: a VIP status with it on is an older controller.
		"Hetzner PROXY protocol, older CCM, no name": {svc: cloudService("a", map[string]string{annHetznerProxyProtocol: "true"}, "TCP", ipVIP),
			risk: core.RiskAtRisk, symptom: core.SymptomProtocolError, snat: core.Yes, remedy: core.ThroughLB, code: codeOfferCCMUpgrade},
		"OpenStack PROXY protocol, older OCCM, no name": {svc: cloudService("a", map[string]string{annOpenStackProxyProtocol: "v2"}, "TCP", ipVIP),
			risk: core.RiskAtRisk, symptom: core.SymptomProtocolError, snat: core.Yes, remedy: core.ThroughLB, code: codeOfferCCMUpgrade},
		"Hetzner PROXY protocol, current CCM publishing Proxy": {svc: cloudService("a", map[string]string{annHetznerProxyProtocol: "true"}, "TCP",
			corev1.LoadBalancerIngress{IP: "10.0.0.20", IPMode: ptr(corev1.LoadBalancerIPModeProxy)}),
			risk: core.RiskNone, snat: core.Yes, remedy: core.RemedyNone},
		"Linode NodeBalancer is a proxy": {svc: cloudService("a", nil, "TCP", corev1.LoadBalancerIngress{Hostname: "192-0-2-1.ip.linodeusercontent.com"}), providerID: "linode://",
			snat: core.Yes, code: codeCloudDefault},
		"MetalLB: the nodes announce, kube-proxy intercepts": {svc: cloudService("a", map[string]string{"metallb.universe.tf/address-pool": "lan"}, "TCP", ipVIP),
			risk: core.RiskNone, snat: core.No, remedy: core.RemedyNone, code: codeCloudDefault},
		"kube-vip class": {svc: func() *corev1.Service {
			s := cloudService("a", nil, "TCP", ipVIP)
			s.Spec.LoadBalancerClass = ptr("kube-vip.io/kube-vip-class")
			return s
		}(), snat: core.No, code: codeCloudDefault},
		"Cilium LB IPAM": {svc: cloudService("a", map[string]string{"lbipam.cilium.io/ips": "10.0.0.20"}, "TCP", ipVIP), snat: core.No, code: codeCloudDefault},
		// The Exoscale NLB passes the client through (docs/service-loadbalancer.md); a
		// hostname status is not intercepted, so an in-cluster client can loop.
		"Exoscale NLB passes the client through": {svc: cloudService("a", nil, "TCP", corev1.LoadBalancerIngress{Hostname: "lb.example.com"}), providerID: "exoscale://",
			risk: core.RiskUnknown, symptom: core.SymptomIntermittent, snat: core.No, code: codeCloudDefault},
		// IBM Cloud VPC (ibm-cloud-docs/containers vpc-lbaas.md; IBM-Cloud/cloud-provider-ibm
		// pkg/vpcctl): the default VPC ALB is a proxy published by its hostname; "nlb" makes a
		// VPC NLB, which keeps the client's address and is published as an IP.
		"IBM VPC ALB (the default) is a proxy behind its hostname": {svc: cloudService("a", map[string]string{annIBMIPType: "private"}, "TCP", ibmALBStatus),
			providerID: ibmProviderID, risk: core.RiskNone, snat: core.Yes, remedy: core.RemedyNone, code: codeCloudDefault},
		"IBM VPC ALB with the PROXY protocol: the hostname reaches the ALB and its header": {svc: cloudService("a", map[string]string{annIBMEnableFeatures: "proxy-protocol"}, "TCP", ibmALBStatus),
			providerID: ibmProviderID, risk: core.RiskNone, snat: core.Yes, remedy: core.RemedyNone, code: codeCCMProxyProtocol},
		"IBM VPC NLB passes the client through; the nodes intercept its IP": {svc: cloudService("a", map[string]string{annIBMEnableFeatures: "nlb", annIBMIPType: "private"}, "TCP", ipVIP),
			providerID: ibmProviderID, risk: core.RiskNone, snat: core.No, remedy: core.RemedyNone, code: codeCloudDefault},
		// An NLB's pools never carry the PROXY protocol (vpc_sdk_base.go), so no header is expected.
		"IBM VPC NLB asked for the PROXY protocol: no header, nothing fails": {svc: cloudService("a", map[string]string{annIBMEnableFeatures: "nlb, proxy-protocol"}, "TCP", ipVIP),
			providerID: ibmProviderID, risk: core.RiskNone, snat: core.No, remedy: core.RemedyNone},
		// An IP and no VPC mark: a classic cluster's NLB, not read here.
		"IBM classic (an IP, no VPC mark): source NAT stays unknown": {svc: cloudService("a", nil, "TCP", ipVIP), providerID: ibmProviderID, snat: core.Unknown},
		// No box to go through: the generic "publish ipMode Proxy" is unsupported (cloudfixes.go
		// bareMetal), so nothing is offered but what a user can do elsewhere.
		"MetalLB, backends need TLS from a load balancer: there is none": {svc: cloudService("a", map[string]string{"metallb.universe.tf/address-pool": "lan", "loopguard.io/backend-expects": "tls"}, "TCP", ipVIP),
			risk: core.RiskAtRisk, symptom: core.SymptomProtocolError, snat: core.No, remedy: core.RemedyNone},
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
			planRow(t, r, tc.svc, cloudCluster(t, tc.providerID), res)
		})
	}
}

// planRow plans one row through the Reconciler and checks the plan carries the decision.
func planRow(t *testing.T, r *core.Reconciler, svc *corev1.Service, c *core.Cluster, res *core.Result) {
	t.Helper()
	dec := &res.Decision
	plan, err := r.Plan(context.Background(), svc, c)
	switch {
	case errors.Is(err, core.ErrUnsupported):
		// Only the status's owner (ipMode) or the user (DNS steering) could: not a cloud fix.
		if dec.Remedy == core.RemedyNone || strings.Contains(dec.Action, "metadata.annotations") {
			t.Errorf("plan: %v, for decision %s (%s)", err, dec.Remedy, dec.Action)
		}
		return
	case err != nil:
		t.Fatalf("plan: %v", err)
	}
	if plan.Decision.Remedy != dec.Remedy || plan.Decision.Action != dec.Action {
		t.Errorf("plan's decision %s %q, evaluation's %s %q", plan.Decision.Remedy, plan.Decision.Action, dec.Remedy, dec.Action)
	}
	switch {
	case dec.Remedy == core.RemedyNone && len(plan.Changes) != 0:
		t.Errorf("nothing to do, but the plan has %v", plan.Changes)
	case dec.Remedy != core.RemedyNone && len(plan.Changes) == 0:
		t.Errorf("decision %s, but the plan has no change (%s)", dec.Remedy, dec.Action)
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
		"DigitalOcean hostname from external-dns": {svc: cloudService("web", map[string]string{annDOType: doRegional, annDOProxyProtocol: "true", annExternalDNS: "web.example.com,www.example.com"}, "TCP", ipVIP),
			key: "service.beta.kubernetes.io/do-loadbalancer-hostname", value: "web.example.com",
			status: &corev1.LoadBalancerIngress{Hostname: "web.example.com"}},
		"Linode hostname-only-ingress": {svc: cloudService("web", map[string]string{annLinodeDefaultProxy: "v2"}, "TCP", linodeStatus),
			key: annLinodeHostnameOnly, value: "true",
			status: &corev1.LoadBalancerIngress{Hostname: linodeStatus.Hostname}},
		"Alibaba NLB preserve-client-ip off": {svc: alibabaNLBService(map[string]string{annAlibabaPreserveClient: "on"}),
			key: annAlibabaPreserveClient, value: "off"},
		"Scaleway ip-mode Proxy where use-hostname is refused": {
			svc: cloudService("web", map[string]string{annScalewayProxyV2: "true", "service.beta.kubernetes.io/scw-loadbalancer-use-hostname": "false",
				core.AnnotationLBScope: "private"}, "TCP", ipVIP),
			key: "service.beta.kubernetes.io/scw-loadbalancer-ip-mode", value: "Proxy",
			status: &corev1.LoadBalancerIngress{IP: "10.0.0.20", IPMode: ptr(corev1.LoadBalancerIPModeProxy)}},
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
			r := core.NewReconciler(NewProvider(nil), &core.ReconcilerOptions{ClusterWriter: w})
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
	r := core.NewReconciler(NewProvider(nil), &core.ReconcilerOptions{ClusterWriter: drivertest.NewCluster(u)})
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

// TestCCMIPMode: what each cloud's controller does with ipMode decides who can carry out
// "publish ipMode Proxy": on a cloud whose controller never does (DigitalOcean), the generic
// offer is unsupported and the plan is the cloud's knob; where a newer controller does it by
// itself (Hetzner), the plan is the upgrade, for the user; a host that owns the status (a CCM
// fork, kubernetes.StatusOwner) publishes it whatever the cloud.
func TestCCMIPMode(t *testing.T) {
	ctx := context.Background()
	hetzner := cloudService("web", map[string]string{annHetznerProxyProtocol: "true"}, "TCP", ipVIP)
	do := cloudService("web", map[string]string{annDOType: doRegional, annDOProxyProtocol: "true"}, "TCP", ipVIP)
	for name, tc := range map[string]struct {
		svc        *corev1.Service
		ownsStatus bool
		// providerID and extra: the Nodes' providerID prefix and more inputs (the controller's Pod).
		providerID string
		extra      []runtime.Object
		// by and to: the plan's one change; tentative: the decision's.
		by        core.Writer
		to        string
		tentative bool
		// genericUnmet: the generic ipMode offer is unsupported with codeCCMNoProxyIPMode.
		genericUnmet bool
	}{
		"DigitalOcean, no DNS name: the hostname, the name to be given": {svc: do, by: core.WriterUser, to: "do-loadbalancer-hostname", tentative: true, genericUnmet: true},
		"Hetzner, older CCM: the upgrade":                               {svc: hetzner, by: core.WriterUser, to: "to v1.21.0 or later", genericUnmet: true},
		"Hetzner, a CCM fork publishes Proxy":                           {svc: hetzner, ownsStatus: true, by: core.WriterStatus, to: "Proxy"},
		"DigitalOcean, a CCM fork publishes Proxy":                      {svc: do, ownsStatus: true, by: core.WriterStatus, to: "Proxy"},
		// The PROXY protocol from the controller's cluster-wide default (its Pod in the inputs):
		// the status follows that default only from v1.29.1 (#1131).
		"Hetzner, the default on, VIP status: the upgrade to v1.29.1": {svc: cloudService("web", nil, "TCP", ipVIP), providerID: "hcloud://",
			extra: []runtime.Object{hcloudPod("true", false)}, by: core.WriterUser, to: "to v1.29.1 or later", genericUnmet: true},
	} {
		t.Run(name, func(t *testing.T) {
			u, err := drivertest.ToUnstructured(tc.svc)
			if err != nil {
				t.Fatal(err)
			}
			p := NewProvider(&Options{OwnsStatus: tc.ownsStatus})
			c := clusterWith(t, tc.providerID, tc.extra...)
			res, err := core.Evaluate(p.Dialect(), tc.svc, c, core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			unmet := false
			for _, o := range res.Offers {
				for _, u := range o.Unmet {
					unmet = unmet || o.Remedy == core.ThroughLB && u.Kind == core.PreconditionUnsupported && u.Reason.Code == codeCCMNoProxyIPMode
				}
			}
			if unmet != tc.genericUnmet {
				t.Errorf("generic ipMode offer unsupported by the cloud's controller: %v, want %v (offers %+v)", unmet, tc.genericUnmet, res.Offers)
			}
			r := core.NewReconciler(p, &core.ReconcilerOptions{ClusterWriter: drivertest.NewCluster(u)})
			plan, err := r.Plan(ctx, tc.svc, c)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Changes) != 1 || plan.Changes[0].By != tc.by || !strings.Contains(plan.Changes[0].To, tc.to) || plan.Decision.Tentative != tc.tentative {
				t.Fatalf("decision %s tentative %v, changes %v; want one %s change to %q, tentative %v", plan.Decision.Remedy, plan.Decision.Tentative, plan.Changes, tc.by, tc.to, tc.tentative)
			}
		})
	}
	// The host's wrapper: a *Dialect gets OwnsStatus, any other dialect is left alone.
	if d, ok := StatusOwner(NewDialect(nil)).(*Dialect); !ok || !d.opts.OwnsStatus {
		t.Errorf("StatusOwner(*Dialect) = %#v, want OwnsStatus", d)
	}
	other := core.Dialect(nil)
	if StatusOwner(other) != nil {
		t.Error("StatusOwner changed a dialect it does not know")
	}
}
