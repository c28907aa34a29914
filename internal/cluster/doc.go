// Package cluster is for loopguard's own tests and contributors that want loopguard where its
// users run it: a real Kubernetes cluster on this machine, brought up from binaries built from
// source (hack/cluster-assets.sh) and taken down without a trace.
//
// Up starts, as processes of the machine:
//
//   - the control plane: etcd, kube-apiserver, kube-controller-manager and kube-scheduler
//     v1.37.2, and, when Config.CCM names one, a cloud-controller-manager (a fork built with
//     loopguard's decorator, hack/cluster/ccm) whose cloud serves load balancers on the machine;
//   - per node (two by default): containerd with runc and the CNI bridge plugin, kubelet and
//     kube-proxy (nftables mode, or iptables);
//   - CoreDNS as the kubeadm Deployment behind the kube-dns Service, and a second CoreDNS in
//     the router namespace playing the cloud's DNS for load-balancer hostnames.
//
// # Where every packet stays
//
//	node1 (netns) ─┐                   ┌─ node2 (netns)
//	cni0: Pods     ├─ router (netns) ──┤  cni0: Pods
//	               │ control plane, LB │
//
// Nothing is attached to the machine's own network: the router namespace holds the nodes'
// subnet (10.240.0.0/24, a bridge), routes each node's Pod range (10.244.N.0/24), serves the
// API on 10.240.0.1:6443 and the load balancers' addresses (10.99.0.0/24), and has no route
// anywhere else. A test reaches the API server with a dialer that opens its sockets inside the
// router namespace (Cluster.RESTConfig), and runs commands there or on a node with Exec.
//
// Each node's processes share a mount namespace of their own whose /run, /var/log and /var/lib
// are private tmpfs mounts: what kubelet, containerd and runc mount (Pod volumes, container
// root file systems, the Pods' network namespace pins) and write to fixed host paths
// (/var/log/containers, /var/lib/cni, /run/containerd) lives and dies with that namespace.
//
// # What it takes, and how it goes away
//
// Every process Up starts is moved, before it executes, into a cgroup of the cluster's own
// tree (lgc-<name> under each cgroup hierarchy), and kubelet's cgroupRoot is a child of that
// tree; shims and containers inherit it. Down stops what Up started by PID (checking each PID
// still names the process Up started), then every process left in the tree, removes the
// cgroups, the network namespaces and the state folder. Leftovers reports anything that
// survived; a test calls it after Down.
//
// Supported says what this machine lacks (root, cgroup v1 controllers or a writable unified
// hierarchy, overlayfs, a tool); tests skip with that reason unless the environment variable
// EnvRequired is set, as CI sets it, which turns the skip into a failure.
package cluster
