// Package volcengine is for anyone who needs to know whether in-cluster clients of a
// LoadBalancer Service on Volcengine Kubernetes Engine (VKE) loop through the Cloud Load
// Balancer (CLB), and what VKE can do about it: hosts (the CLI, a controller, a platform SDK)
// that hand it Services and a core.Cluster, and hosts that apply the decision through the
// core.Reconciler with this package's Driver.
//
// It is the VKE dialect of core.Dialect and only reads. It translates the cloud-controller-
// manager's annotations into the portable model:
//
//   - service.beta.kubernetes.io/volcengine-loadbalancer-ip-mode: VIP (the default) makes
//     nodes intercept the CLB address, so in-cluster traffic never reaches the CLB; Proxy sends
//     it through the CLB, which keeps the client's address, so a client Pod and a server Pod on
//     the same node loop (seed 003).
//   - status.loadBalancer.ingress[].ipMode, when present, is the mode in effect.
//   - the prerequisites of ip-mode: Kubernetes >= v1.30, VPC-CNI with IPVlan and eBPF
//     forwarding, cloud-controller-manager >= v1.43.0 (from the ClusterProfile).
//   - the address type, a reused CLB, pass-through (Pod ENIs or NodePorts), PROXY protocol.
//   - whether the Service already exists: ip-mode cannot be changed afterwards, so switching
//     modes means a new Service and a new CLB address.
//
// It offers three remedies: ip-mode VIP, ip-mode Proxy with clients kept off the backends'
// nodes, and DNS steering. There is no LB source NAT on VKE's classic CLB listeners.
//
// The Driver (NewDriver) carries the decision out for loopguard's core.Reconciler: it creates a
// Service with its ip-mode in the creating write; for an existing Service whose mode would
// change it plans a disruptive replacement (a new Service beside the old one, and a step for the
// user to move clients and delete the old one); it checks the prerequisites before anything is
// written (the server's version through discovery, the network model and the CCM's version from
// the cluster where the profile is silent); it makes Proxy mode's same-node rule concrete
// (SameNode, SeparationPatches, externalTrafficPolicy Local, an optional refusal); and it waits
// for status.loadBalancer.ingress[].ipMode. CLBReader reads CLB facts through the official
// volcengine-go-sdk (service/clb) into a CLBSnapshot for Options.CLBs: the address type, PROXY
// protocol, and the backends of the server groups (eni: straight to Pods; ecs: NodePorts),
// which set the binding. docs/vke.md is the guide.
//
// Every conclusion carries a reason whose code starts with "vke-" (Dialect.Rules). What no
// public source confirms is gathered, with its overrides, in unconfirmed.go.
package volcengine
