// Package netlab is for loopguard's own tests that want the real Linux kernel, not a model,
// to say what happens to a TCP connection from a Pod to its cluster's load balancer (LB) or to
// its own Service.
//
// It builds a tiny Kubernetes-like cluster out of network namespaces, programs it the way the
// LB, kube-proxy and the CNI would, runs a Go TCP server in the backend Pod and a Go client in
// the client Pod, and reports what happened: connected or not, how long it took, and which
// source address the backend saw (docs/sources.md#kernel-lab; the failure itself is docs/sources.md#loopback, the two
// serving paths §2, Pod-to-own-Service §6 and seed 002, source addresses §7).
//
// # Shape of a lab
//
//	Pod ─┐                                          ┌─ Pod
//	Pod ─┼─ node n1 ─── LB namespace ─── node n2 ───┼─ Pod
//	     │ (cni0 bridge, or /32 routes + proxy ARP)  │
//
// Every Pod, node and the LB is its own network namespace. The LB namespace is also the VPC router: it holds the VIP,
// DNATs VIP:port to a NodePort or straight to a Pod, optionally SNATs, and routes every Pod
// CIDR to its node. Nodes run kube-proxy-shaped iptables rules and, per node, may intercept
// the VIP.
//
// A Scenario names nodes, Pods, the Service (one endpoint, so every path ends at one known
// Pod), the LB and the connection to open. Build turns it into namespaces; Lab.Connect opens
// the connection; Run does both and tears down. The package deliberately does not import
// core: a test translates a core scenario into a Scenario and compares core's prediction
// with Result, so the two models stay independent.
//
// Result says whether the exchange with the backend completed, the source address the
// backend saw and whose it is (Origin: the client Pod, the LB, a node, a node's bridge), and,
// for a failure, who answered the client's SYN in place of the address it dialed
// (StrayReplies: the backend's own address is the loop of docs/sources.md#loopback; none at all means the
// packet was dropped, as for the martian of §6). Outcomes and addresses only, never packet
// counts, which depend on SYN retransmission timing (docs/sources.md#kernel-lab pitfalls). The verdict
// rests on packets captured at the client Pod, not on goroutine scheduling: on a starved
// machine an exchange the kernel completed is repeated, never reported as a failure
// (ErrStarved if it keeps happening).
//
// A test package that uses netlab needs:
//
//	func TestMain(m *testing.M) { os.Exit(netlab.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		netlab.Require(t)
//		res, err := netlab.Run(t.Context(), scenario)
//		...
//	}
//
// # Isolation
//
// Nothing here may touch the host network. Main, called from TestMain, re-executes the test
// binary in fresh user (when not root), mount and network namespaces with a private tmpfs on
// /run; Build refuses to run anywhere else. Every lab namespace is created inside that
// sandbox and only connected to other namespaces of the same lab, so no packet can leave.
// Tests call Require to skip, with the reason, where the sandbox cannot be made (user
// namespaces forbidden, ip or iptables missing).
//
// # Real components instead of netlab's own
//
// A harness can replace netlab's hand-written parts with real ones and keep the namespaces,
// addresses and routes: InterceptExternal leaves a node's service-proxy rules to a program the
// caller runs there, LoadBalancer.External leaves the LB namespace's forwarding to one (netlab
// still holds the VIP and routes), Service.ExternalServer leaves the backend's server to one.
// Lab.NodeNetns, LBNetns and PodNetns name the namespaces; StartIn, RunIn and InNetns run
// programs and code in them; VethToSandbox joins one to the sandbox's own namespace (for a
// control plane); WatchSYNACKs gives a caller's own client the packet evidence Dial uses.
// internal/proxylab runs the real kube-proxy, kube-apiserver and HAProxy this way.
//
// # Stand-ins
//
// This kernel has no IPVS and no dummy links (docs/sources.md#kernel-lab). InterceptIPVSStandIn binds the
// VIP to a port-less bridge named kube-ipvs0 and runs a userspace TCP proxy in the node
// namespace; it reproduces IPVS's "the VIP is local, so the packet never leaves the node", not
// IPVS's exact source address. InterceptIPVS (real IPVS through ipvsadm) runs only where
// /proc/net/ip_vs exists.
package netlab
