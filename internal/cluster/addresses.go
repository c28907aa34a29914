package cluster

import (
	"fmt"
	"net/netip"
)

// The address plan. Every address exists only inside the cluster's network namespaces, which
// have no route to anything else, so the ranges need not be unique on the machine: two
// clusters (a test's and `make cluster`'s) use the same ones side by side.
var (
	// RouterAddr is the router namespace's address on the nodes' subnet: kube-apiserver
	// (port 6443), the cloud's DNS (53) and every node's default gateway.
	RouterAddr = netip.MustParseAddr("10.240.0.1")
	// NodeSubnet is the nodes' subnet, a bridge in the router namespace.
	NodeSubnet = netip.MustParsePrefix("10.240.0.0/24")
	// PodCIDR holds every node's Pod range, 10.244.<node>.0/24.
	PodCIDR = netip.MustParsePrefix("10.244.0.0/16")
	// ServiceCIDR is the Services' ClusterIP range.
	ServiceCIDR = netip.MustParsePrefix("10.96.0.0/16")
	// KubernetesServiceIP and DNSServiceIP are the first ClusterIP and kube-dns's.
	KubernetesServiceIP = netip.MustParseAddr("10.96.0.1")
	DNSServiceIP        = netip.MustParseAddr("10.96.0.10")
	// LBPool is where the cloud (hack/cluster/ccm) takes load-balancer addresses from; they
	// live in the router namespace.
	LBPool = netip.MustParsePrefix("10.99.0.0/24")
)

// APIServerPort is kube-apiserver's port on RouterAddr.
const APIServerPort = 6443

// ClusterDomain is the DNS domain of Services.
const ClusterDomain = "cluster.local"

// nodeName is the name of node i (0-based): node1, node2.
func nodeName(i int) string { return fmt.Sprintf("node%d", i+1) }

// nodeAddr is node i's address on the nodes' subnet: 10.240.0.11, .12, ...
func nodeAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 240, 0, byte(11 + i)}) }

// nodePodCIDR is node i's Pod range: 10.244.1.0/24, 10.244.2.0/24, ...
func nodePodCIDR(i int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(i + 1), 0}), 24)
}
