package dataplane

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/internal/netlab"
	"github.com/loopguard/loopguard/internal/proxylab"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// awsCase is an AWS-shaped exposure (docs/clouds.md): the Service a user writes, read
// by the plain dialect, and the lab that does what that NLB does to a packet.
type awsCase struct {
	name string
	ann  map[string]string
	// class is the Service's loadBalancerClass ("" for none); hostname its status.
	class, hostname string
	// lbSNAT is what the NLB does in the lab: replace the client's address (client IP
	// preservation off) or keep it.
	lbSNAT  bool
	binding binding
}

// awsCases: instance targets keep the client address (NodePort targets); IP targets over TCP
// replace it unless preserve_client_ip.enabled=true; the fix turns preservation off. The ACK
// NLB has the same shape (a DNS-name status, instance server groups on the NodePort, client IP
// preservation as the annotation says).
var awsCases = []awsCase{
	{name: "alibaba-nlb-preserve-on", binding: bindNodePortCluster, lbSNAT: false, class: "alibabacloud.com/nlb", hostname: "nlb-x.cn-hangzhou.nlb.aliyuncsslb.com",
		ann: map[string]string{"service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": "intranet", "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-preserve-client-ip": "on"}},
	{name: "alibaba-nlb-preserve-off", binding: bindNodePortCluster, lbSNAT: true, class: "alibabacloud.com/nlb", hostname: "nlb-x.cn-hangzhou.nlb.aliyuncsslb.com",
		ann: map[string]string{"service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": "intranet", "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-preserve-client-ip": "off"}},
	{name: "lbc-instance-targets", binding: bindNodePortCluster, lbSNAT: false,
		ann: map[string]string{"service.beta.kubernetes.io/aws-load-balancer-type": "external", "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "instance"}},
	{name: "lbc-instance-targets-preservation-off", binding: bindNodePortCluster, lbSNAT: true,
		ann: map[string]string{"service.beta.kubernetes.io/aws-load-balancer-type": "external", "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "instance",
			"service.beta.kubernetes.io/aws-load-balancer-target-group-attributes": "preserve_client_ip.enabled=false"}},
	{name: "lbc-ip-targets", binding: bindDirectToPod, lbSNAT: true,
		ann: map[string]string{"service.beta.kubernetes.io/aws-load-balancer-type": "external", "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip"}},
	{name: "lbc-ip-targets-preservation-on", binding: bindDirectToPod, lbSNAT: false,
		ann: map[string]string{"service.beta.kubernetes.io/aws-load-balancer-type": "external", "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
			"service.beta.kubernetes.io/aws-load-balancer-target-group-attributes": "preserve_client_ip.enabled=true"}},
}

// TestRealKubeProxyAWS (kube-proxy in iptables mode) and TestRealKubeProxyAWSNFTables: for
// each AWS shape (and the ACK NLB, shaped alike), the dialect's facts (does the NLB keep the client's address; does any node
// intercept a hostname status) must predict what the real kube-proxy and kernel do to a client
// on the node the NLB lands on: the loop when the address is kept, a working connection when
// the NLB replaces it. The mode matters because the NodePort path of instance targets goes
// through each mode's own rules (KUBE-NODEPORTS, or the nft nodeport map) and its masquerade.
func TestRealKubeProxyAWS(t *testing.T) { testRealKubeProxyAWS(t, proxylab.ModeIPTables) }

func TestRealKubeProxyAWSNFTables(t *testing.T) { testRealKubeProxyAWS(t, proxylab.ModeNFTables) }

func testRealKubeProxyAWS(t *testing.T, mode proxylab.Mode) {
	kp, _, err := proxylab.KubeProxyBinary(proxylab.EnvKubeProxy)
	if err == nil {
		err = proxylab.Available()
	}
	if err != nil {
		t.Skip(err)
	}
	coreMode := map[proxylab.Mode]core.ProxyMode{proxylab.ModeIPTables: core.ProxyModeIPTables, proxylab.ModeNFTables: core.ProxyModeNFTables}[mode]
	d := kubernetes.NewDialect(nil)
	c, err := core.NewCluster(core.ClusterProfile{ProxyMode: coreMode, KubeProxyVersion: "v1.37.2", KubernetesVersion: "v1.37.2"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ac := range awsCases {
		t.Run(ac.name, func(t *testing.T) {
			t.Parallel()
			ann := map[string]string{}
			hostname := ac.hostname
			if ac.class == "" {
				ann["service.beta.kubernetes.io/aws-load-balancer-scheme"] = "internal"
				hostname = "k8s-shop-web.elb.us-east-1.amazonaws.com"
			}
			for k, v := range ac.ann {
				ann[k] = v
			}
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: ac.name, Annotations: ann},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
					Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
				Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: hostname}}}}}
			if ac.class != "" {
				svc.Spec.LoadBalancerClass = &ac.class
			}
			tr, err := d.Translate(svc, c)
			if err != nil {
				t.Fatal(err)
			}
			e := &tr.Exposure
			if e.Intercept != core.No || e.LBSourceNAT == core.Unknown {
				t.Fatalf("dialect: intercept %s, source NAT %s: want a known verdict for a hostname status (%v)", e.Intercept, e.LBSourceNAT, e.Reasons)
			}
			if want := dialectFact(ac.lbSNAT); e.LBSourceNAT != want {
				t.Fatalf("dialect says source NAT %s, the NLB of this shape does %s (%v)", e.LBSourceNAT, want, e.Reasons)
			}
			modelLoops := e.LBSourceNAT == core.No

			net := twoNodeScenario(dims{binding: ac.binding, placement: lbPicksClientNode, attachment: attachBridgeNF})
			for i := range net.Nodes {
				net.Nodes[i].Intercept = netlab.InterceptExternal
			}
			net.Service.ExternalServer = true
			net.LB = netlab.LoadBalancer{SourceNAT: ac.lbSNAT}
			if ac.binding == bindDirectToPod {
				net.LB.Backend = netlab.BackendDirectToPod
			} else {
				net.LB.Backend, net.LB.TargetNode = netlab.BackendNodePort, lbPicksClientNode.backendNode()
			}
			res, err := proxylab.Run(t.Context(), proxylab.Scenario{KubeProxy: kp, Mode: mode,
				Hostname: hostname, Net: net})
			if err != nil {
				t.Fatalf("harness: %v", err)
			}
			t.Logf("model loops %v; lab: %v", modelLoops, res)
			if !res.ReachedLB {
				t.Errorf("a hostname status must not be intercepted, but the connection never reached the LB: %v", res)
			}
			switch {
			case modelLoops && (res.Connected || res.Failure != proxylab.FailureLoop):
				t.Errorf("model: a client on the NLB's target loops; lab: %v", res)
			case !modelLoops && !res.Connected:
				t.Errorf("model: the NLB replaces the source, so the connection works; lab: %v", res)
			}
		})
	}
}

func dialectFact(b bool) core.Fact {
	if b {
		return core.Yes
	}
	return core.No
}
