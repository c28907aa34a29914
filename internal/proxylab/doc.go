// Package proxylab is for loopguard's own tests that want real components, not rules written
// to look like them, between a client Pod and its cluster's load balancer (LB): the real
// kube-proxy programs the nodes, a real kube-apiserver tells it what to program, and real
// HAProxy is the LB and the backend.
//
// It builds on internal/netlab (the namespaces, addresses and routes; the client-side packet
// capture) and replaces netlab's hand-written parts:
//
//   - kube-proxy: every node runs the kube-proxy binary the scenario names (built from the Go
//     module proxy by hack/kube-proxy.sh: v1.37.2, and v1.28.15 for the version-skew test) in
//     iptables or nftables mode, in the node's namespace, against a kube-apiserver (envtest,
//     hack/envtest-assets.sh) listening in the sandbox's own namespace and reached over a veth
//     per node. Each lab creates its own Service (type LoadBalancer, its NodePort allocated by
//     the server), an EndpointSlice with the backend Pod's address and node, and writes
//     status.loadBalancer.ingress[].ip and ipMode through the status subresource; Build waits,
//     with a deadline, until iptables-save or `nft list table ip kube-proxy` on every node
//     shows the endpoint programmed and the LB address present (ipMode VIP) or absent
//     (ipMode Proxy). No fixed sleeps.
//   - the LB: for a scenario with a PROXY protocol header, HAProxy in TCP mode on the LB
//     address with send-proxy (v1) or send-proxy-v2, which connects from its own address
//     (source NAT), or, with Scenario.LBTransparent, from the client's: a transparent proxy
//     (source 0.0.0.0 usesrc clientip, an IP_TRANSPARENT socket) plus the policy routing it
//     needs in the LB namespace, a mangle PREROUTING rule marking packets of local sockets
//     (-m socket → MARK 1), "ip rule fwmark 1 lookup 100" and "route local 0.0.0.0/0 dev lo
//     table 100", so that a backend's reply routed back to the LB reaches HAProxy instead of
//     being forwarded to the client (without it the connection fails, measured). No sysctl
//     beyond netlab's (forwarding on, rp_filter off) is needed. Without a header the LB stays
//     netlab's kernel DNAT, with or without MASQUERADE.
//   - the backend: HAProxy in the backend Pod answering an HTTP request with the TCP peer it
//     saw and the client the PROXY header named; with accept-proxy when the backend expects a
//     header, so a connection without one is rejected the way a real PROXY-protocol backend
//     rejects it (HAProxy logs "Received something which does not look like a PROXY protocol
//     header", which Connect reads to tell this failure from others).
//
// A raw-table counter in the LB namespace says whether the client's SYN reached the LB at all
// (Result.ReachedLB): with ipMode VIP kube-proxy answers on the node and the LB sees nothing.
// Connect names the loop (FailureLoop) from a SYN-ACK the client Pod got from an address it
// did not dial: with a kernel DNAT LB it answers the client's own SYN and the dial times out;
// with a transparent HAProxy the client's connection to the LB succeeds, the LB's connection to
// the backend (from the client's address, another port) is the one answered straight to the
// client, and the client's request gets no answer.
//
// One control plane serves every lab of a test binary (Shared); labs that run at once each
// have their own LB address (10.99.x.y) and Service, because every lab's kube-proxies watch
// every Service. A test package needs:
//
//	func TestMain(m *testing.M) { os.Exit(proxylab.Main(m)) }
//
// What it needs, and skips without (Available, KubeProxyBinary): what netlab needs, root or
// unprivileged user namespaces; KUBEBUILDER_ASSETS; Debian's haproxy (and nftables for the
// nftables mode); LOOPGUARD_KUBE_PROXY (and LOOPGUARD_KUBE_PROXY_SKEW for the old release)
// naming binaries from hack/kube-proxy.sh. .ci/run provides all of them.
//
// What is still written by hand, and why: netlab's kernel DNAT and MASQUERADE in the LB
// namespace stand in for a cloud LB that forwards without a userspace proxy (the plain and
// no-SNAT cases); the clouds' own LBs cannot run here. The hand-written kube-proxy rules of
// netlab remain in internal/dataplane's kernel test for what a real kube-proxy cannot be made
// to do on this kernel: IPVS mode (no ip_vs module here; a userspace stand-in), a node proxy
// without a local VIP, and Pods calling their own Service with kube-proxy's self-masquerade
// turned off (real kube-proxy always programs it).
package proxylab
