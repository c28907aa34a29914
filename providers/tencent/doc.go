// Package tencent is for hosts that assess or fix load-balancer loopback on Tencent Kubernetes
// Engine (TKE) with Cloud Load Balancer (CLB): the loopguard CLI, cloud-controller-manager
// forks, Terraform backends and platform SDKs that need to know whether in-cluster clients of a
// LoadBalancer Service or a CLB Ingress loop through the CLB, and which TKE fix applies.
//
// It implements core.Dialect, reading only. Translate turns a Service or Ingress, with the
// cluster's Nodes, ConfigMaps, EndpointSlices, Pods and TkeServiceConfigs, into a
// core.Exposure and the remedies TKE can carry out:
//
//   - scope: service.kubernetes.io/qcloud-loadbalancer-internal-subnetid (Service) or
//     kubernetes.io/ingress.subnetId (Ingress) make the CLB private; TKE's default is public;
//     a reused CLB (tke-existed-lbid, ingress.existLbId) has an unknown scope until declared
//     or read from the CLB API (Options.CLBs; in direct mode Driver.ReadCLBs and WithCLBs read
//     DescribeLoadBalancers' LoadBalancerType: INTERNAL private, OPEN public).
//   - interception, from the TKE guide's tables (seeds 000/001): super nodes intercept the
//     CLB VIP; iptables (and nftables) mode intercepts; IPVS mode on regular and native nodes
//     does not, unless service.cloud.tencent.com/prevent-loopback: "true" on a kube-proxy
//     revision that supports it; layer-7 Ingress VIPs are never intercepted on regular or
//     native nodes.
//   - CLB source NAT, from the referenced TkeServiceConfig (l4Listeners[].snatEnable;
//     l7Listeners[].snatEnable from ingress controller v2.9.0, keepaliveEnable: 1 before).
//   - the binding: direct-access (direct to Pod) or externalTrafficPolicy; super nodes are
//     not behind the CLB.
//
// The offers are the guide's three fixes plus the portable ones: intercept-vip
// (prevent-loopback), lb-snat (TkeServiceConfig, needing the allowlists of Capabilities),
// node-separation and dns-steering, each with its costs and unmet preconditions.
//
// Every conclusion carries a reason whose code starts with "tke-" and cites its source (a seed
// row, a docs/sources.md section or a Tencent document id); Rules lists them. What no public source
// confirms is gathered in one file, unconfirmed.go, and each guess can be overridden through
// Options or loopguard.io annotations.
//
// Driver (NewDriver) carries the decisions out for core.Reconciler (core.Driver). Planning
// observes only, and a plan is empty when the decision already holds:
//
//   - intercept-vip: the prevent-loopback annotation, by server-side apply; refused with a
//     *core.PreconditionError naming the minimum revision when kube-proxy is known to be too
//     old; the plan's notes carry FAQ Q3's caveats (health checks from 100.64.0.0/10,
//     existing long connections keep the CLB path).
//   - lb-snat on a Service: snatEnable: true on exactly the Service's (protocol, port) entries
//     of spec.loadBalancer.l4Listeners in the referenced or -auto TkeServiceConfig, by
//     read-modify-write with the resourceVersion (its CRD has no list-map markers); an object
//     without a config gets <name>-loopguard and then the reference annotation.
//   - lb-snat on an Ingress: l7Listeners[].snatEnable: true (ingress controller >= v2.9.0) or
//     keepaliveEnable: 1 (older); an unknown version is refused, not guessed.
//   - ModeDirect, for hosts that own the CLB: ModifyListener (SnatEnable, KeepaliveEnable)
//     through the official SDK client, waited on with DescribeTaskStatus and read back with
//     DescribeListeners, under a client-side rate limiter per action with backoff.
//
// SNAT needs CLB allowlists (Capabilities). A plan that would write without them is blocked
// with a *core.AllowlistError naming the capability and what to ask support for; the cloud's
// own refusals are classified the same way and remembered. Every edit touches only its own
// leaves, so fields, listeners and annotations loopguard does not own survive. crds/ holds a
// TkeServiceConfig CRD the project wrote for tests against a real API server; docs/tke.md is
// the user's guide.
package tencent
