package kubernetes

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// Cloud names a cloud or bare-metal load-balancer implementation whose facts the plain dialect
// knows (docs/sources.md#clouds).
type Cloud string

// The clouds of the fact table.
const (
	CloudUnknown      Cloud = ""
	CloudAWS          Cloud = "aws"
	CloudGKE          Cloud = "gke"
	CloudAzure        Cloud = "azure"
	CloudAlibaba      Cloud = "alibaba"
	CloudDigitalOcean Cloud = "digitalocean"
	CloudLinode       Cloud = "linode"
	CloudScaleway     Cloud = "scaleway"
	CloudHetzner      Cloud = "hetzner"
	CloudOpenStack    Cloud = "openstack"
	CloudOracle       Cloud = "oracle"
	CloudExoscale     Cloud = "exoscale"
	CloudIBM          Cloud = "ibm"
	CloudMetalLB      Cloud = "metallb"
	CloudKubeVIP      Cloud = "kube-vip"
	CloudCilium       Cloud = "cilium"
)

// CloudFacts is one row of the fact table: how to recognise the cloud, and what its load
// balancer does to an in-cluster connection by default. Every field that no public source
// stated is left at its zero value (unknown); the loopguard.io annotations override it all.
type CloudFacts struct {
	Cloud Cloud
	// ProviderIDPrefixes are the Node spec.providerID prefixes the cloud's CCM sets.
	ProviderIDPrefixes []string
	// Classes are spec.loadBalancerClass values that select this implementation.
	Classes []string
	// AnnotationPrefixes are annotation key prefixes only this cloud's controller reads.
	AnnotationPrefixes []string
	// SourceNAT says whether the default load balancer replaces the client's source address
	// (a proxy: Yes; pass-through: No; Unknown when no source says or it depends on a setting
	// the row cannot see). AWS is decided per target type in awsSourceNAT.
	SourceNAT core.Fact
	// HostnameAnnotation is the annotation that makes the CCM publish a hostname instead of
	// the IP, so no node intercepts the address (empty when the cloud has none).
	HostnameAnnotation string
	// HostnameValue is the value HostnameAnnotation takes: "" means a DNS name that resolves
	// to the load balancer (the user's), anything else is the literal value.
	HostnameValue string
	// IPMode is what the cloud's controller does with status.loadBalancer.ingress[].ipMode,
	// read from its source; the zero value (not read) keeps the generic offer, which a CCM
	// fork carries out.
	IPMode CCMIPMode
	// Source cites the public documentation or CCM source of the row.
	Source string
}

// CCMIPMode is how a cloud's controller publishes ipMode, as its source shows. It decides
// what loopguard offers when the backends need the load balancer and the nodes intercept its
// address: publishing Proxy is the controller's to do, so on a cloud whose controller never
// does, that offer is unsupported and the cloud's own knob (a hostname) is offered instead.
type CCMIPMode struct {
	// Read: the controller's source was read for this; when false nothing below is known.
	Read bool
	// WithProxyProtocol: the controller publishes Proxy by itself while the Service turns
	// the PROXY protocol on (on every port, for Scaleway); Since is the first release that does.
	WithProxyProtocol bool
	Since             string
	// Annotation, when set, is read by the controller for the ipMode; ProxyValue is the value
	// that makes it publish Proxy.
	Annotation, ProxyValue string
	// Source cites the controller source read.
	Source string
}

// Sources of the fact table (docs/sources.md#clouds has them as links).
const (
	srcClouds        = "docs/sources.md#clouds"
	srcAWSLBC        = "kubernetes-sigs/aws-load-balancer-controller docs/guide/service/nlb.md and annotations.md (target type instance by default; IP targets: client IP preservation off for TCP/TLS, on for UDP); AWS ELB docs network/edit-target-group-attributes.html#client-ip-preservation (defaults: instance targets on; IP targets TCP/TLS off; UDP on, cannot be turned off)"
	srcAWSCLB        = "AWS ELB docs classic/enable-proxy-protocol.html (a Classic Load Balancer opens its own connection to the instance; the client address only comes in the PROXY header); kubernetes/cloud-provider-aws pkg/providers/v1/aws.go (the default type is a Classic ELB, status hostname)"
	srcAWSHairpin    = "AWS ELB docs network/load-balancer-troubleshooting.html (with client IP preservation, requests from a target to its own internal NLB fail: no hairpinning); kubernetes/cloud-provider-aws#1160; aws-load-balancer-controller#4803"
	srcGKE           = "GKE docs concepts/service-load-balancer (a LoadBalancer Service gets a pass-through load balancer, internal or external); Google Cloud docs load-balancing/docs/passthrough-network-load-balancer, opening paragraph (packets reach the backends with source and destination unchanged; direct server return) and load-balancing/docs/internal (the internal one forwards the original packets unproxied, preserving the client source IP); the status carries the IP, which kube-proxy intercepts"
	srcAzure         = "learn.microsoft.com azure/load-balancer/concepts, \"Load balancing algorithm\" (the load balancer doesn't close or originate flows, and the original source IP address is preserved when the flow arrives at the virtual machine); cloud-provider-azure publishes the frontend IP"
	srcAlibaba       = "Alibaba Cloud ACK docs \"Considerations for configuring a LoadBalancer Service\" (layer-4 CLB listeners pass the client address; with PROXY protocol in-cluster access to the CLB IP fails: use service.beta.kubernetes.io/alibaba-cloud-loadbalancer-hostname); kubernetes/cloud-provider-alibaba-cloud docs/usage.md"
	srcDO            = "DigitalOcean blog \"Load Balancers now support Proxy Protocol\" (backends see requests as though they came from the load balancer); digitalocean/digitalocean-cloud-controller-manager docs/controllers/services/annotations.md (do-loadbalancer-enable-proxy-protocol; do-loadbalancer-hostname works around kube-proxy intercepting the LB address)"
	srcLinode        = "Akamai techdocs \"Using Proxy Protocol with NodeBalancers\" (a NodeBalancer does not pass the client's information by default: the backend sees the NodeBalancer unless PROXY protocol is on); linode/linode-cloud-controller-manager docs/configuration/annotations.md"
	srcScaleway      = "Scaleway docs \"Using Proxy Protocol v2 with a Scaleway Load Balancer\" (without it the backend sees only the load balancer's address); scaleway/scaleway-cloud-controller-manager scaleway/loadbalancers_annotations.go (scw-loadbalancer-use-hostname, the PROXY protocol annotations)"
	srcHetznerDocs   = "hetznercloud/hcloud-cloud-controller-manager docs/reference/load_balancer_annotations.md (load-balancer.hetzner.cloud/hostname, uses-proxyprotocol); #727, #783 (ipMode Proxy with PROXY protocol)"
	srcOpenStackDocs = "kubernetes/cloud-provider-openstack docs/openstack-cloud-controller-manager/expose-applications-using-loadbalancer-type-service.md (loadbalancer.openstack.org/hostname, proxy-protocol; amphora or OVN provider decides proxy or pass-through)"
	srcOracle        = "Oracle OKE docs \"Specifying IPMode to adjust traffic routing\" (oci.oraclecloud.com/ingress-ip-mode: \"VIP\" or \"proxy\"; the OCI load balancer is a proxy, the network load balancer preserves the source with is-preserve-source); oracle/oci-cloud-controller-manager docs/load-balancer-annotations.md"
	srcExoscale      = "exoscale/exoscale-cloud-controller-manager docs/service-loadbalancer.md (no statement found here about source NAT or hairpin: unknown)"
	srcIBM           = "IBM Cloud docs containers?topic=containers-vpc-lbaas (ibm-cloud-docs/containers vpc-lbaas.md: a LoadBalancer Service gets a VPC ALB by default, reached through its hostname *.lb.appdomain.cloud, source IP preservation only with enable-features \"proxy-protocol\"; with enable-features \"nlb\" a VPC NLB, which preserves the source IP by default (direct server return) and is published as an IP)"
	srcIBMCCM        = "IBM-Cloud/cloud-provider-ibm pkg/vpcctl/vpc_lbaas.go GetLoadBalancerStatus (the VPC load balancer's hostname, no ipMode), vpc_sdk_gen2.go CreateLoadBalancer (PROXY protocol v1 on the pools with enable-features proxy-protocol), vpc_sdk_base.go (the pools' PROXY protocol: application family only), ibm/ibm_instances.go providerIDV2 (ibm://<account>///<cluster>/<worker>)"
	srcMetalLB       = "metallb.universe.tf concepts/layer2 (layer 2 does not implement a load balancer: one node holds the address and kube-proxy spreads the traffic from there); metallb/metallb controller/service.go (the status carries each address as an IP, never a hostname or an ipMode)"
	srcKubeVIP       = "kube-vip/website content/docs/about/architecture.md (kube-vip advertises the Service's address over ARP or BGP so traffic reaches the nodes and the Service network, then writes the address into the status) and usage/kubernetes-services.md (loadBalancerClass kube-vip.io/kube-vip-class); kube-vip/kube-vip pkg/services/services.go updateStatus (IPs only: a DNS name is resolved to its IPs, UPnP adds the gateway's IPs; no ipMode)"
	srcCilium        = "cilium/cilium Documentation/network/lb-ipam.rst (LB IPAM assigns the address, other features announce and load-balance it) and operator/pkg/lbipam/lbipam.go satisfyService (the status carries each address as an IP, no hostname, no ipMode); classes io.cilium/l2-announcer (pkg/k8s/apis/cilium.io/v2alpha1, L2AnnounceLoadBalancerClass) and io.cilium/bgp-control-plane"

	// What each controller publishes in the status, read in its source (docs/sources.md#clouds).
	srcCCMGKE       = "kubernetes/ingress-gce pkg/l4 (the GKE L4 controllers publish ipMode VIP); kubernetes/cloud-provider-gcp (no ipMode)"
	srcCCMAzure     = "kubernetes-sigs/cloud-provider-azure pkg/provider/azure_loadbalancer.go (the frontend IP, no ipMode; floating IP on unless service.beta.kubernetes.io/azure-disable-load-balancer-floating-ip, which sends to the NodePort instead)"
	srcCCMAlibaba   = "kubernetes/cloud-provider-alibaba-cloud pkg/controller/service/clbv1/service_controller.go (CLB: the hostname annotation, else the IP; no ipMode) and nlbv2/nlb_controller.go updateServiceStatus (NLB: the NLB's DNS name)"
	srcCCMDO        = "digitalocean/digitalocean-cloud-controller-manager cloud-controller-manager/do/loadbalancers.go EnsureLoadBalancer (do-loadbalancer-hostname, else the IPs; no ipMode)"
	srcCCMLinode    = "linode/linode-cloud-controller-manager cloud/linode/loadbalancers.go makeLoadBalancerStatus (the NodeBalancer's hostname and IP in one entry, the hostname alone with linode-loadbalancer-hostname-only-ingress: \"true\"; no ipMode) and docs/configuration/loadbalancer.md (PROXY protocol \"for client IP preservation\")"
	srcCCMScaleway  = "scaleway/scaleway-cloud-controller-manager scaleway/loadbalancers.go ipMode (Proxy when every port has the PROXY protocol, or from service.beta.kubernetes.io/scw-loadbalancer-ip-mode; since v0.33.0, #185)"
	srcCCMHetzner   = "hetznercloud/hcloud-cloud-controller-manager hcloud/load_balancers.go buildLoadBalancerStatusIngress (ipMode Proxy while uses-proxyprotocol is on) and CHANGELOG.md v1.21.0 (#727, #783)"
	srcCCMOpenStack = "kubernetes/cloud-provider-openstack pkg/openstack/loadbalancer.go createLoadBalancerStatus (ipMode Proxy with the PROXY protocol, or the hostname <ip>.<ingress-hostname-suffix> when the cloud config sets enable-ingress-hostname; since v1.30.0, #2587)"
	srcCCMOracle    = "oracle/oci-cloud-controller-manager pkg/cloudprovider/providers/oci/load_balancer_spec.go getIngressIpMode (oci.oraclecloud.com/ingress-ip-mode)"
	srcCCMExoscale  = "exoscale/exoscale-cloud-controller-manager exoscale/loadbalancer.go (the NLB's IP, no ipMode) and docs/service-loadbalancer.md (externalTrafficPolicy: Local \"preserves the client source IP\")"
)

// cloudTable is THE fact table. Order matters only for detection: the first row whose marks
// the object or its cluster carries wins.
var cloudTable = []CloudFacts{
	{Cloud: CloudAWS, ProviderIDPrefixes: []string{"aws://"}, Classes: []string{"service.k8s.aws/nlb"},
		AnnotationPrefixes: []string{"service.beta.kubernetes.io/aws-load-balancer-"},
		SourceNAT:          core.Unknown, // per target type and protocol: awsSourceNAT
		Source:             srcAWSLBC + "; " + srcAWSCLB},
	{Cloud: CloudGKE, ProviderIDPrefixes: []string{"gce://"},
		Classes:            []string{"networking.gke.io/l4-regional-internal", "networking.gke.io/l4-regional-external"},
		AnnotationPrefixes: []string{"networking.gke.io/", "cloud.google.com/"},
		SourceNAT:          core.No, IPMode: CCMIPMode{Read: true, Source: srcCCMGKE}, Source: srcGKE},
	{Cloud: CloudAzure, ProviderIDPrefixes: []string{"azure://"},
		AnnotationPrefixes: []string{"service.beta.kubernetes.io/azure-"},
		SourceNAT:          core.No, IPMode: CCMIPMode{Read: true, Source: srcCCMAzure}, Source: srcAzure},
	{Cloud: CloudAlibaba,
		// ACK's providerID is "<region>.<instance>", with no scheme prefix to recognise.
		Classes:            []string{alibabaNLBClass},
		AnnotationPrefixes: []string{"service.beta.kubernetes.io/alibaba-cloud-loadbalancer-", "service.beta.kubernetes.io/alibaba-cloud-nlb-"},
		SourceNAT:          core.No, // the CLB; the NLB per preserve-client-ip: alibabaSourceNAT
		HostnameAnnotation: "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-hostname",
		IPMode:             CCMIPMode{Read: true, Source: srcCCMAlibaba}, Source: srcAlibaba},
	{Cloud: CloudDigitalOcean, ProviderIDPrefixes: []string{"digitalocean://"},
		AnnotationPrefixes: []string{"service.beta.kubernetes.io/do-loadbalancer-", "kubernetes.digitalocean.com/"},
		SourceNAT:          core.Yes,
		HostnameAnnotation: "service.beta.kubernetes.io/do-loadbalancer-hostname",
		IPMode:             CCMIPMode{Read: true, Source: srcCCMDO}, Source: srcDO},
	{Cloud: CloudLinode, ProviderIDPrefixes: []string{"linode://"},
		AnnotationPrefixes: []string{"service.beta.kubernetes.io/linode-loadbalancer-"},
		SourceNAT:          core.Yes,
		HostnameAnnotation: annLinodeHostnameOnly, HostnameValue: "true",
		IPMode: CCMIPMode{Read: true, Source: srcCCMLinode}, Source: srcLinode + "; " + srcCCMLinode},
	{Cloud: CloudScaleway, ProviderIDPrefixes: []string{"scaleway://"},
		AnnotationPrefixes: []string{"service.beta.kubernetes.io/scw-loadbalancer-"},
		SourceNAT:          core.Yes,
		HostnameAnnotation: "service.beta.kubernetes.io/scw-loadbalancer-use-hostname", HostnameValue: "true",
		IPMode: CCMIPMode{Read: true, WithProxyProtocol: true, Since: "v0.33.0",
			Annotation: "service.beta.kubernetes.io/scw-loadbalancer-ip-mode", ProxyValue: "Proxy", Source: srcCCMScaleway},
		Source: srcScaleway},
	{Cloud: CloudHetzner, ProviderIDPrefixes: []string{"hcloud://"},
		AnnotationPrefixes: []string{"load-balancer.hetzner.cloud/"},
		SourceNAT:          core.Unknown, // only with PROXY protocol (snat.go)
		HostnameAnnotation: "load-balancer.hetzner.cloud/hostname",
		IPMode:             CCMIPMode{Read: true, WithProxyProtocol: true, Since: "v1.21.0", Source: srcCCMHetzner}, Source: srcHetznerDocs},
	{Cloud: CloudOpenStack, ProviderIDPrefixes: []string{"openstack://"},
		AnnotationPrefixes: []string{"loadbalancer.openstack.org/", "service.beta.kubernetes.io/openstack-"},
		SourceNAT:          core.Unknown, // amphora proxies, OVN passes through: the cloud's choice
		HostnameAnnotation: "loadbalancer.openstack.org/hostname",
		IPMode:             CCMIPMode{Read: true, WithProxyProtocol: true, Since: "v1.30.0", Source: srcCCMOpenStack}, Source: srcOpenStackDocs},
	{Cloud: CloudOracle, ProviderIDPrefixes: []string{"oci://", "ocid1."},
		AnnotationPrefixes: []string{"service.beta.kubernetes.io/oci-", "oci-network-load-balancer.oraclecloud.com/", "oci.oraclecloud.com/"},
		SourceNAT:          core.Unknown, // LB or NLB, and the NLB's is-preserve-source: ociSourceNAT
		IPMode:             CCMIPMode{Read: true, Annotation: annOCIIngressIPMode, ProxyValue: "proxy", Source: srcCCMOracle},
		Source:             srcOracle},
	{Cloud: CloudExoscale, ProviderIDPrefixes: []string{"exoscale://"},
		AnnotationPrefixes: []string{"service.beta.kubernetes.io/exoscale-loadbalancer-"},
		SourceNAT:          core.No, IPMode: CCMIPMode{Read: true, Source: srcCCMExoscale}, Source: srcCCMExoscale},
	// IBM Cloud: the VPC ALB or NLB per Service (ibmSourceNAT); a classic cluster's NLB is not
	// read here. The VPC NLB's IP status comes from code IBM does not publish, so the ipMode
	// handling stays unread.
	{Cloud: CloudIBM, ProviderIDPrefixes: []string{"ibm://"},
		AnnotationPrefixes: []string{"service.kubernetes.io/ibm-"},
		SourceNAT:          core.Unknown, Source: srcIBM + "; " + srcIBMCCM},
	// The bare-metal implementations have no load-balancer box: the nodes announce the
	// address and their service proxy answers it. None publishes a hostname or ipMode Proxy.
	{Cloud: CloudMetalLB, AnnotationPrefixes: []string{"metallb.universe.tf/", "metallb.io/"},
		SourceNAT: core.No, IPMode: CCMIPMode{Read: true, Source: srcMetalLB}, Source: srcMetalLB},
	{Cloud: CloudKubeVIP, Classes: []string{"kube-vip.io/kube-vip-class"}, AnnotationPrefixes: []string{"kube-vip.io/"},
		SourceNAT: core.No, IPMode: CCMIPMode{Read: true, Source: srcKubeVIP}, Source: srcKubeVIP},
	{Cloud: CloudCilium, Classes: []string{"io.cilium/bgp-control-plane", "io.cilium/l2-announcer"},
		AnnotationPrefixes: []string{"io.cilium/lb-ipam-", "lbipam.cilium.io/"},
		SourceNAT:          core.No, IPMode: CCMIPMode{Read: true, Source: srcCilium}, Source: srcCilium},
}

// CloudTable returns a copy of the fact table.
func CloudTable() []CloudFacts { return append([]CloudFacts(nil), cloudTable...) }

// FactsOf returns the row of a cloud.
func FactsOf(c Cloud) (CloudFacts, bool) {
	for _, r := range cloudTable {
		if r.Cloud == c {
			return r, true
		}
	}
	return CloudFacts{}, false
}

// detection is which cloud an exposure is on and why.
type detection struct {
	row *CloudFacts
	why string
}

// detectCloud finds the cloud from, in order, the Service's loadBalancerClass, its annotations,
// and the Nodes' providerID. An object's own marks win over the cluster's, because a bare-metal
// implementation (MetalLB) can run on a cloud's nodes.
func detectCloud(svc *corev1.Service, c *core.Cluster) detection {
	if cls := svc.Spec.LoadBalancerClass; cls != nil {
		for i := range cloudTable {
			for _, x := range cloudTable[i].Classes {
				if x == *cls {
					return detection{&cloudTable[i], "spec.loadBalancerClass " + *cls}
				}
			}
		}
	}
	// Annotations of two clouds say nothing (a manifest copied between clouds); the smallest
	// key names the evidence, so the message does not depend on map order.
	var byAnn detection
	var key string
	for k := range svc.Annotations {
		for i := range cloudTable {
			for _, p := range cloudTable[i].AnnotationPrefixes {
				if !strings.HasPrefix(k, p) {
					continue
				}
				switch {
				case byAnn.row == nil:
					byAnn, key = detection{&cloudTable[i], "annotation " + k}, k
				case byAnn.row != &cloudTable[i]:
					return detection{}
				case k < key:
					byAnn.why, key = "annotation "+k, k
				}
			}
		}
	}
	if byAnn.row != nil {
		return byAnn
	}
	if c == nil {
		return detection{}
	}
	d, _ := c.Memo(cloudMemoKey{}, func() any { return nodeCloud(c) }).(detection)
	return d
}

type cloudMemoKey struct{}

// nodeCloud reads the Nodes' spec.providerID: the cloud only when every Node that has one
// agrees.
func nodeCloud(c *core.Cluster) detection {
	var found detection
	for _, n := range c.Nodes() {
		id := n.Spec.ProviderID
		if id == "" {
			continue
		}
		var row *CloudFacts
		for i := range cloudTable {
			for _, p := range cloudTable[i].ProviderIDPrefixes {
				if strings.HasPrefix(id, p) {
					row = &cloudTable[i]
				}
			}
		}
		if row == nil || found.row != nil && found.row != row {
			return detection{}
		}
		if found.row == nil {
			found = detection{row, "Node " + n.Name + " spec.providerID " + id}
		}
	}
	return found
}

// Annotations read for the per-cloud source-NAT defaults.
const (
	annAWSNLBTargetType  = "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"
	annAlibabaProxyProto = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-proxy-protocol"
	annExternalDNS       = "external-dns.alpha.kubernetes.io/hostname"
	annOCILBType         = "oci.oraclecloud.com/load-balancer-type"
	awsLBCClass          = "service.k8s.aws/nlb"
	// Alibaba's NLB: its class, the older type annotation, and its client IP preservation.
	alibabaNLBClass          = "alibabacloud.com/nlb"
	annAlibabaLBType         = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-type"
	annAlibabaPreserveClient = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-preserve-client-ip"
	annLinodeHostnameOnly    = "service.beta.kubernetes.io/linode-loadbalancer-hostname-only-ingress"
)

// awsFlavour says which AWS controller makes the load balancer and its target type.
type awsFlavour struct {
	lbc       bool   // the AWS Load Balancer Controller
	nlb       bool   // a Network Load Balancer (else a Classic one)
	ipTargets bool   // LBC with target type ip
	what      string // for messages
}

func awsFlavourOf(svc *corev1.Service) awsFlavour {
	ann := svc.Annotations
	typ := ann[annAWSType]
	cls := ""
	if svc.Spec.LoadBalancerClass != nil {
		cls = *svc.Spec.LoadBalancerClass
	}
	switch {
	case cls == awsLBCClass || typ == "external" || typ == "nlb-ip":
		// The LBC's target type defaults to instance; "nlb-ip" is its older spelling of ip.
		ip := typ == "nlb-ip" || ann[annAWSNLBTargetType] == "ip"
		f := awsFlavour{lbc: true, nlb: true, ipTargets: ip, what: "AWS Load Balancer Controller NLB, instance targets"}
		if ip {
			f.what = "AWS Load Balancer Controller NLB, IP targets"
		}
		return f
	case cls != "":
		return awsFlavour{what: "load balancer class " + cls}
	case typ == "nlb":
		return awsFlavour{nlb: true, what: "AWS cloud-controller-manager NLB, instance targets"}
	case typ == "":
		return awsFlavour{what: "AWS cloud-controller-manager Classic Load Balancer"}
	}
	return awsFlavour{what: "AWS load balancer type " + quote(typ)}
}

// cloudSourceNAT is the cloud's default, used only when no annotation in snat.go said.
// ownsStatus is Options.OwnsStatus: a status the host wrote says nothing about the cloud.
func cloudSourceNAT(det detection, svc *corev1.Service, protos core.Protocols, c *core.Cluster, ownsStatus bool) []snatFact {
	if det.row == nil {
		return nil
	}
	on := " (" + det.why + ")"
	switch det.row.Cloud {
	case CloudIBM:
		return ibmSourceNAT(svc, on)
	case CloudHetzner:
		return hetznerDefaultProxyProtocol(svc, c, ownsStatus, on)
	case CloudAWS:
		f := awsFlavourOf(svc)
		switch {
		case f.lbc && f.ipTargets && protos&(core.UDP|core.SCTP) == 0:
			return []snatFact{{nat: core.Yes, reason: ruleCloudAWSIPTargets.Because(f.what + ": client IP preservation is off by default for TCP, so the NLB's own address reaches the backend" + on)}}
		case f.lbc:
			why := "client IP preservation is on by default for instance targets"
			if f.ipTargets {
				why = "client IP preservation is on for UDP target groups"
			}
			return []snatFact{{nat: core.No, reason: ruleCloudAWSPreserves.Because(f.what + ": " + why + on)}}
		case f.nlb:
			return nil // snat.go's legacy NLB row
		case svc.Spec.LoadBalancerClass == nil && svc.Annotations[annAWSType] == "" && !awsLBCAnnotations(svc):
			return []snatFact{{nat: core.Yes, reason: ruleCloudAWSCLB.Because(f.what + " is a proxy: it opens its own connection to the node" + on)}}
		}
		return nil
	case CloudAlibaba:
		if !alibabaNLB(svc) {
			break
		}
		switch v := svc.Annotations[annAlibabaPreserveClient]; {
		case strings.EqualFold(v, "on"):
			return []snatFact{{nat: core.No, reason: ruleAlibabaNLBPreserve.Because("Alibaba Cloud NLB: " + annAlibabaPreserveClient + ": " + quote(v) + on)}}
		case strings.EqualFold(v, "off"):
			return []snatFact{{nat: core.Yes, reason: ruleAlibabaNLBPreserve.Because("Alibaba Cloud NLB: " + annAlibabaPreserveClient + ": " + quote(v) + on)}}
		}
		return nil // no public source read here gives the NLB's default
	case CloudOracle:
		// The OCI load balancer (not the NLB) is a proxy.
		if t := svc.Annotations[annOCILBType]; t == "" || t == "lb" {
			if _, nlb := svc.Annotations[annOCINLBPreserveSource]; !nlb {
				return []snatFact{{nat: core.Yes, reason: ruleCloudDefault.Because("Oracle OKE: the OCI load balancer (oci.oraclecloud.com/load-balancer-type " + quote(orDefault(t, "lb")) + ") is a proxy" + on)}}
			}
		}
		return nil
	}
	if det.row.SourceNAT == core.Unknown {
		return nil
	}
	what := "passes the client's address through"
	if det.row.SourceNAT == core.Yes {
		what = "is a proxy: the backend sees the load balancer's address"
	}
	return []snatFact{{nat: det.row.SourceNAT, reason: ruleCloudDefault.Because(string(det.row.Cloud) + ": the load balancer " + what + on + " [" + det.row.Source + "]")}}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// cloudProxyHeader reads the PROXY-protocol switches proxyHeaderOf does not know.
func cloudProxyHeader(svc *corev1.Service) []proxyHeaderFact {
	// Alibaba: "on" turns PROXY protocol on for the CLB's layer-4 listeners.
	if v := svc.Annotations[annAlibabaProxyProto]; strings.EqualFold(v, "on") {
		return []proxyHeaderFact{{reason: ruleCCMProxyProtocol.Because("Alibaba Cloud: " + annAlibabaProxyProto + ": " + quote(v) + " (" + srcAlibaba + ")")}}
	}
	// IBM Cloud: "proxy-protocol" among the enabled features puts PROXY protocol v1 on the VPC
	// ALB's pools; a VPC NLB's pools never have it (vpc_sdk_base.go: application family only).
	if f := ibmFeatures(svc); f["proxy-protocol"] && !f["nlb"] {
		return []proxyHeaderFact{{version: "v1", reason: ruleCCMProxyProtocol.Because("IBM Cloud: " + annIBMEnableFeatures + ": " +
			quote(svc.Annotations[annIBMEnableFeatures]) + " (PROXY protocol v1 on the VPC ALB's pools; " + srcIBMCCM + ")")}}
	}
	return nil
}

// IBM Cloud's VPC load balancers (srcIBM, srcIBMCCM).
const annIBMEnableFeatures = "service.kubernetes.io/ibm-load-balancer-cloud-provider-enable-features"

// ibmFeatures is the enable-features list as the IBM controller reads it: spaces removed,
// lower case, split at commas (vpc_config.go getServiceEnabledFeatures, vpc_sdk_base.go
// isVpcOptionEnabled).
func ibmFeatures(svc *corev1.Service) map[string]bool {
	v := strings.ToLower(strings.ReplaceAll(svc.Annotations[annIBMEnableFeatures], " ", ""))
	out := map[string]bool{}
	for _, f := range strings.Split(v, ",") {
		if f != "" {
			out[f] = true
		}
	}
	return out
}

// ibmSourceNAT: on a VPC cluster a LoadBalancer Service gets a VPC ALB (a proxy: the client's
// address only in the PROXY header) unless enable-features names "nlb", which makes a VPC NLB
// (source IP preserved by default). Only the VPC controller publishes a hostname for it (a
// classic cluster's NLB publishes its portable IP), and only VPC clusters read the -vpc-
// annotations, so without either the load balancer is not known.
func ibmSourceNAT(svc *corev1.Service, on string) []snatFact {
	f := ibmFeatures(svc)
	if f["nlb"] {
		return []snatFact{{nat: core.No, reason: ruleCloudDefault.Because("IBM Cloud VPC NLB (" + annIBMEnableFeatures + " names \"nlb\"" + on +
			"): it preserves the client's source IP by default and answers by direct server return [" + srcIBM + "]")}}
	}
	vpc := f["proxy-protocol"]
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		vpc = vpc || ing.Hostname != ""
	}
	for k := range svc.Annotations {
		vpc = vpc || strings.HasPrefix(k, "service.kubernetes.io/ibm-load-balancer-cloud-provider-vpc-")
	}
	if !vpc {
		return nil
	}
	proxy := core.Unknown
	if f["proxy-protocol"] {
		proxy = core.Yes
	}
	return []snatFact{{nat: core.Yes, proxy: proxy, reason: ruleCloudDefault.Because("IBM Cloud VPC ALB (the default without \"nlb\" in " + annIBMEnableFeatures + on +
		"): the backend sees the load balancer's address, the client's only with the PROXY protocol [" + srcIBM + "; " + srcIBMCCM + "]")}}
}

// Codes of the fact-table rules.
const (
	CodeCloudDetected     core.Code = "k8s-cloud-detected"
	CodeCloudDefault      core.Code = "k8s-cloud-lb-default"
	CodeCloudAWSIPTargets core.Code = "k8s-aws-ip-targets-no-preservation"
	CodeCloudAWSPreserves core.Code = "k8s-aws-lbc-preserves-client-ip"
	CodeCloudAWSCLB       core.Code = "k8s-aws-clb-proxies"
	CodeOfferAWSClientIP  core.Code = "k8s-offer-aws-client-ip-off"
	CodeOfferHostname     core.Code = "k8s-offer-hostname-status"
	CodeOfferOCIIPMode    core.Code = "k8s-offer-oci-ingress-ip-mode"
	CodeHostnameNeedsName core.Code = "k8s-hostname-needs-dns-name"
	CodeAWSLegacyNoKnob   core.Code = "k8s-aws-ccm-nlb-no-preservation-knob"
	CodeAWSClientIPUDP    core.Code = "k8s-aws-udp-always-preserves"
	// CodeCCMNoProxyIPMode: the cloud's controller does not publish ipMode Proxy for this
	// Service, so the generic offer is unsupported there (CloudFacts.IPMode).
	CodeCCMNoProxyIPMode      core.Code = "k8s-ccm-publishes-no-proxy-ipmode"
	CodeOfferIPModeAnnotation core.Code = "k8s-offer-ccm-ipmode-annotation"
	CodeOfferCCMUpgrade       core.Code = "k8s-offer-ccm-upgrade-ipmode"
	CodeAlibabaNLBPreserve    core.Code = "k8s-alibaba-nlb-client-ip"
	CodeOfferAlibabaClientIP  core.Code = "k8s-offer-alibaba-nlb-client-ip-off"
)

var (
	ruleCloudDetected = core.Rule{Code: CodeCloudDetected,
		Summary: "The cloud was recognised from the Service's loadBalancerClass, a cloud-specific annotation, or every Node's spec.providerID; its row of the fact table applies.",
		Source:  srcClouds}
	ruleCloudDefault = core.Rule{Code: CodeCloudDefault,
		Summary: "The cloud's documented default: its load balancer either replaces the client's address (a proxy) or passes it through.",
		Source:  srcClouds}
	ruleCloudAWSIPTargets = core.Rule{Code: CodeCloudAWSIPTargets,
		Summary: "An AWS Load Balancer Controller NLB with IP targets over TCP does not preserve the client IP by default: the backend sees the NLB's private address, so replies return through it.",
		Source:  srcAWSLBC}
	ruleCloudAWSPreserves = core.Rule{Code: CodeCloudAWSPreserves,
		Summary: "An AWS Load Balancer Controller NLB with instance targets (or UDP) preserves the client IP by default; a client on the target the NLB picks fails (no hairpinning).",
		Source:  srcAWSLBC + "; " + srcAWSHairpin}
	ruleCloudAWSCLB = core.Rule{Code: CodeCloudAWSCLB,
		Summary: "The AWS cloud-controller-manager's default Classic Load Balancer is a proxy: the node sees the CLB's address.",
		Source:  srcAWSCLB}
	ruleOfferAWSClientIP = core.Rule{Code: CodeOfferAWSClientIP,
		Summary: "Set the AWS Load Balancer Controller's target-group attribute preserve_client_ip.enabled=false: the NLB's address becomes the source and replies return through it; the client address is lost unless proxy_protocol_v2.enabled=true and the backends read the header.",
		Source:  srcAWSLBC + "; " + srcAWSHairpin}
	ruleOfferHostname = core.Rule{Code: CodeOfferHostname,
		Summary: "The cloud's hostname annotation makes its CCM publish a hostname instead of the IP, so no node intercepts the address and in-cluster traffic reaches the load balancer (and its PROXY header).",
		Source:  srcAlibaba + "; " + srcDO + "; " + srcScaleway + "; " + srcHetznerDocs + "; " + srcOpenStackDocs}
	ruleOfferOCIIPMode = core.Rule{Code: CodeOfferOCIIPMode,
		Summary: "Oracle OKE's oci.oraclecloud.com/ingress-ip-mode: \"proxy\" makes the CCM publish ipMode Proxy, so in-cluster traffic goes through the load balancer (Kubernetes 1.30 or later).",
		Source:  srcOracle}
	ruleHostnameNeedsName = core.Rule{Code: CodeHostnameNeedsName,
		Summary: "The hostname annotation needs a DNS name that resolves to the load balancer; none is known (external-dns.alpha.kubernetes.io/hostname names one).",
		Source:  srcAlibaba + "; " + srcDO}
	ruleAWSLegacyNoKnob = core.Rule{Code: CodeAWSLegacyNoKnob,
		Summary: "The AWS cloud-controller-manager's NLB turns client IP preservation on and has no annotation to turn it off; the AWS Load Balancer Controller does (a new load balancer).",
		Source:  "kubernetes/cloud-provider-aws#1160; " + srcAWSLBC}
	ruleAWSClientIPUDP = core.Rule{Code: CodeAWSClientIPUDP,
		Summary: "Client IP preservation cannot be turned off for UDP target groups.",
		Source:  srcAWSTG}

	ruleCCMNoProxyIPMode = core.Rule{Code: CodeCCMNoProxyIPMode,
		Summary: "The cloud's own cloud-controller-manager does not publish ipMode Proxy for this Service (its source says when it does, if ever), so publishing it takes a fork of the controller; the cloud's own knobs are offered instead.",
		Source:  srcClouds + "; " + srcCCMDO + "; " + srcCCMLinode + "; " + srcCCMAlibaba + "; " + srcCCMGKE + "; " + srcCCMAzure + "; " + srcCCMExoscale}
	ruleOfferIPModeAnnotation = core.Rule{Code: CodeOfferIPModeAnnotation,
		Summary: "The cloud's controller reads an annotation for the ipMode: setting it to Proxy makes it publish ipMode Proxy, so in-cluster traffic goes through the load balancer (the dataplane must honour Proxy).",
		Source:  srcCCMScaleway + "; " + srcCCMOracle}
	ruleOfferCCMUpgrade = core.Rule{Code: CodeOfferCCMUpgrade,
		Summary: "The cloud's controller publishes ipMode Proxy by itself while the PROXY protocol is on, since the release named; a status with VIP comes from an older one: upgrading it is the fix (the dataplane must honour Proxy).",
		Source:  srcCCMHetzner + "; " + srcCCMOpenStack + "; " + srcCCMScaleway}
	ruleAlibabaNLBPreserve = core.Rule{Code: CodeAlibabaNLBPreserve,
		Summary: "An ACK NLB's server groups keep the client address only with alibaba-cloud-loadbalancer-preserve-client-ip: \"on\"; \"off\" makes the NLB's address the source. Without the annotation the default was not found in a public source: unknown.",
		Source:  srcCCMAlibaba + "; kubernetes/cloud-provider-alibaba-cloud pkg/controller/service/nlbv2/server_groups.go (PreserveClientIpEnabled only from the annotation); Alibaba Cloud ACK documentation \"Configure NLB instances by using annotations\" (class alibabacloud.com/nlb, preserve-client-ip)"}
	ruleOfferAlibabaClientIP = core.Rule{Code: CodeOfferAlibabaClientIP,
		Summary: "Set alibaba-cloud-loadbalancer-preserve-client-ip: \"off\" on an ACK NLB: the NLB's address becomes the source and replies return through it; the client address is lost unless alibaba-cloud-loadbalancer-proxy-protocol: \"on\" and the backends read the header.",
		Source:  "kubernetes/cloud-provider-alibaba-cloud pkg/controller/service/nlbv2/server_groups.go (PreserveClientIpEnabled updated in place); Alibaba Cloud ACK documentation \"Configure NLB instances by using annotations\""}
)

func cloudRules() []core.Rule {
	return []core.Rule{ruleCloudDetected, ruleCloudDefault, ruleCloudAWSIPTargets, ruleCloudAWSPreserves, ruleCloudAWSCLB,
		ruleOfferAWSClientIP, ruleOfferHostname, ruleOfferOCIIPMode, ruleHostnameNeedsName, ruleAWSLegacyNoKnob,
		ruleAWSClientIPUDP, ruleCCMNoProxyIPMode, ruleOfferIPModeAnnotation, ruleOfferCCMUpgrade, ruleAlibabaNLBPreserve,
		ruleOfferAlibabaClientIP, ruleCloudDefaultUnseen}
}

// awsLBCAnnotations reports annotations only the AWS Load Balancer Controller reads: with
// them and no type, which controller made the load balancer is not known.
func awsLBCAnnotations(svc *corev1.Service) bool {
	for _, k := range [...]string{"service.beta.kubernetes.io/aws-load-balancer-scheme", annAWSNLBTargetType, annAWSTargetGroupAttrs} {
		if _, ok := svc.Annotations[k]; ok {
			return true
		}
	}
	return false
}
