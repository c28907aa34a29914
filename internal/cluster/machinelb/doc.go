// Package machinelb is the cloud of the cluster internal/cluster brings up: a
// k8s.io/cloud-provider Interface with load balancers only, each one real and on this machine,
// in the router namespace the cloud-controller-manager runs in (hack/cluster/ccm wraps it with
// loopguard's decorator, as a fork wraps its cloud). Each LoadBalancer Service gets an address
// of its own from a pool, served one of two ways, chosen by the Service's annotation
// lb.machine.invalid/forwarding:
//
//   - dnat (the default) and dnat-masquerade: the kernel forwards, as a cloud's layer-4 LB
//     without a proxy does: a DNAT of address:port to a healthy node's NodePort, keeping the
//     client's address, or replacing it with the router's (MASQUERADE) for dnat-masquerade;
//   - proxy, proxy-v1, proxy-v2: HAProxy in TCP mode on the address, connecting to the nodes'
//     NodePorts from its own address, with the PROXY protocol header v1 or v2 for the latter
//     two.
//
// A node is healthy as a cloud LB judges it: its kube-proxy's /healthz (port 10256) for
// externalTrafficPolicy Cluster, the Service's healthCheckNodePort for Local (200 only on a
// node with a ready local endpoint), checked every half second (HAProxy checks by itself).
//
// The status names the address (ipMode from lb.machine.invalid/ip-mode, VIP or Proxy, when the
// Service asks the cloud to set one), or, with lb.machine.invalid/address-type: hostname, only
// a hostname <name>-<namespace>.<domain>, as clouds whose LBs have DNS names publish them; the
// cloud's DNS answers it from a hosts file this package writes.
package machinelb
