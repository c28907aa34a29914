// Package netlab is for loopguard's own tests that want the real Linux kernel, not a model,
// to say what happens to a TCP connection from a Pod to its cluster's load balancer (LB) or to
// its own Service.
//
// It builds a tiny Kubernetes-like cluster out of network namespaces, programs it the way the
// LB, kube-proxy and the CNI would, runs a Go TCP server in the backend Pod and a Go client in
// the client Pod, and reports what happened: connected or not, how long it took, and which
// source address the backend saw (TESTING.md §1; the failure itself is DOMAIN.md §1, the two
// serving paths §2, Pod-to-own-Service §6 and seed 002, source addresses §7).
//
// # Shape of a lab
//
//	client Pod ─┐                                   ┌─ backend Pod
//	            ├─ node n1 ──┐              ┌── node n2 ─┤
//	   (bridge cni0 or /32 routes + proxy ARP)   (same choices)
//	                         └── LB namespace ──┘
//	                 (VPC router; holds the VIP; DNAT VIP:port → NodePort or Pod; optional SNAT)
//
// A Scenario names nodes, Pods, the Service (one endpoint, so every path ends at one known
// Pod), the LB and the connection to open. Build turns it into namespaces; Lab.Connect opens
// the connection; Run does both and tears down. The package deliberately does not import
// core: a test translates a core scenario into a Scenario and compares core's prediction
// with Result, so the two models stay independent.
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
// # Stand-ins
//
// This kernel has no IPVS and no dummy links (TESTING.md §1). InterceptIPVSStandIn binds the
// VIP to a port-less bridge named kube-ipvs0 and runs a userspace TCP proxy in the node
// namespace; it reproduces IPVS's "the VIP is local, so the packet never leaves the node", not
// IPVS's exact source address. InterceptIPVS (real IPVS through ipvsadm) runs only where
// /proc/net/ip_vs exists.
package netlab
