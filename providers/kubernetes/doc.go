// Package kubernetes is for anyone whose LoadBalancer Services run on a cloud (or a bare-metal
// load balancer) that loopguard has no dedicated dialect for, and for cloud-controller-manager
// forks that publish status.loadBalancer.ingress themselves: it is the KEP-1860 dialect, which
// reads any cluster, and the clouds it knows, one unit each.
//
// # The KEP-1860 dialect
//
// Translate turns a Service into the portable model (core.Exposure) from what every cloud
// shares: interception, from status.loadBalancer.ingress[] (an ip with ipMode VIP, or none,
// which the API server defaults to VIP, is intercepted by kube-proxy in iptables, nftables and
// ipvs mode and by eBPF dataplanes; ipMode Proxy is not, where the service proxy honours it:
// kube-proxy 1.30 and later, Cilium 1.17 and later except 1.18.0; hostname-only entries are
// never intercepted; an empty status is "not provisioned"). The loopguard.io annotations
// (core/dialect.ReadOverrides) declare what no cloud says and win over everything below.
// Ingress objects have no ipMode, so Translate answers core.ErrNotExposed for them: assess
// the ingress controller's LoadBalancer Service instead.
//
// The dialect offers intercept-vip (publish ipMode VIP), node-separation, dns-steering and,
// for an intercepted address whose backends need the load balancer, through-lb (publish
// ipMode Proxy); only the owner of the status (a CCM fork, adapters/cloudprovider) can publish
// an ipMode, and StatusDriver plans it (PlanStatus). ValidateIngressStatus,
// ValidateServiceStatus and DefaultIngressStatus mirror kube-apiserver v1.37.2's defaulting and
// validation of status.loadBalancer.ingress[], so a fork can check a status before writing it.
//
// # The clouds, one unit each
//
// Everything loopguard knows about one cloud's load balancers is one file, cloud_<name>.go
// (AWS, GKE, Azure, Alibaba, DigitalOcean, Linode, Scaleway, Hetzner, OpenStack, Oracle,
// Exoscale, IBM, VMware, MetalLB, kube-vip, Cilium LB IPAM, and the internal-LB annotations
// of Baidu, Tencent and Volcengine): how it is recognised (a loadBalancerClass, an annotation
// prefix, the Nodes' providerID), how its controller reads each setting (one parser per
// setting, restating that controller's: strconv.ParseBool where it uses it, exact strings
// where it compares them, its defaults and case rules), what its load balancer does to the
// client's address, what the backends then expect, the fixes a user can make there (offers
// with a stable ID and the annotation changes that carry them out), and the upstream file and
// release every fact was read at. The shared code asks the units through a small interface
// (units.go) and names no cloud; registry.go lists them; docs/clouds.md is generated from them.
//
// A value a controller refuses or ignores is reported (k8s-controller-rejects-value,
// k8s-controller-ignores-value) naming the Service and the key, and concludes nothing the
// controller would not. A setting of the controller itself (its environment, flags, cloud
// config) comes from the profile's controllerSettings (a host states it with a
// ControllerConfig, a fork with SettingsFromEnv) or from the controller's Pod in the inputs; a
// fact that changed between the controller's releases uses the profile's ccmVersion or the
// controller's image tag, and is tentative, naming the release that decides, when neither
// says. UserIPMode is the ipMode the user's own annotation makes the cloud's controller publish.
//
// # UNCONFIRMED
//
// Facts no public source stated outright; each is in the rule or unit that uses it, and a
// loopguard.io annotation or profile field overrides it:
//   - eBPF dataplanes other than Cilium intercept VIP-mode LB IPs (the rule k8s-ebpf-programs-vip).
//   - With the PROXY protocol on (Hetzner uses-proxyprotocol, OpenStack proxy-protocol) the
//     load balancer replaces the source address: inferred from PROXY protocol meaning the LB
//     opens its own connection (k8s-proxy-protocol-lb-proxies).
//   - OpenStack's ovn provider passes the client's address through (its design describes no
//     source NAT); a passthrough load balancer whose packets arrive addressed to its IP (GKE,
//     Azure with floating IP, DigitalOcean's REGIONAL_NETWORK) stops working for traffic from
//     outside when its IP loses the nodes' rule (ipMode Proxy, a hostname).
//   - kube-proxy 1.29 runs with LoadBalancerIPMode at its default (off); a cluster that turned
//     the alpha gate on is misjudged (declare kubeProxyVersion as 1.30 to say it honours Proxy).
package kubernetes
