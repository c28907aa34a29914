// Package kubernetes is for anyone whose LoadBalancer Services run on a cloud loopguard has no
// dedicated dialect for, and for cloud-controller-manager forks that publish
// status.loadBalancer.ingress themselves: it is the plain KEP-1860 dialect, the fallback that
// reads any cluster.
//
// It turns a Service into the portable model (core.Exposure) from what every cloud shares:
//   - interception, from status.loadBalancer.ingress[]: ip with ipMode VIP (or no ipMode, which
//     the API server defaults to VIP) is intercepted by kube-proxy (iptables, nftables, ipvs)
//     and by eBPF dataplanes; ipMode Proxy is not, if the service proxy honours it
//     (kube-proxy >= 1.30; an older kube-proxy, which the skew policy allows up to three minor
//     versions behind the API server, ignores it; Cilium >= 1.17 except 1.18.0); hostname-only
//     entries are never intercepted; an empty status is "not provisioned" (unknown);
//   - scope, from the clouds' well-known internal-LB annotations (ScopeAnnotations; one table,
//     each row with its source), otherwise unknown;
//   - LB source NAT, only where a peer's behaviour is documented (PROXY protocol on Hetzner
//     and OpenStack, AWS NLB client-IP preservation, OCI NLB source preservation, the clouds'
//     fact table in clouds.go), otherwise unknown; where a cluster-wide setting of the cloud's
//     controller decides (unseen.go), it is read from the controller's Pod in the inputs or
//     named in a note as what to confirm.
//
// The loopguard.io annotations (dialect.ReadOverrides) declare what no cloud says and win over the
// dialect. Ingress objects have no ipMode, so Translate answers core.ErrNotExposed for them:
// assess the ingress controller's LoadBalancer Service instead.
//
// The dialect offers intercept-vip (publish ipMode VIP: for whoever owns the status, a CCM
// fork), node-separation and dns-steering; LB source NAT is cloud-specific and not offered.
//
// ValidateIngressStatus, ValidateServiceStatus and DefaultIngressStatus mirror kube-apiserver
// v1.37.2's defaulting and validation of status.loadBalancer.ingress[] (same field paths and
// error types), so a CCM fork can check a status before writing it.
//
// # UNCONFIRMED
//
// Facts no public source stated outright; each is in the rule or table row that uses it, and a
// loopguard.io annotation or profile field overrides it:
//   - eBPF dataplanes other than Cilium intercept VIP-mode LB IPs (RuleEBPFVIP).
//   - With PROXY protocol on (Hetzner uses-proxyprotocol, OpenStack proxy-protocol) the LB
//     replaces the source address: inferred from PROXY protocol meaning the LB opens its own
//     connection, and from those CCMs sending in-cluster clients through the LB on purpose
//     (RuleProxyProtocolSNAT).
//   - OpenStack's proxy-protocol values "v1" and "v2" (newer OCCM) mean PROXY protocol on.
//   - Hetzner disable-public-network "true" makes the LB private for in-cluster clients.
//   - Alibaba's address-type is compared case-insensitively by every controller version.
//   - kube-proxy 1.29 runs with LoadBalancerIPMode at its default (off); a cluster that turned
//     the alpha gate on is misjudged (declare kubeProxyVersion as 1.30 to say it honours Proxy).
package kubernetes
