// Package dataplane is for loopguard's developers: its tests hold every prediction the core
// model makes about packets up against the real Linux kernel. It has no non-test code.
//
// For each connection the model can express — interception (none, kube-proxy iptables, the
// IPVS stand-in, a node proxy without a local VIP, real IPVS where the kernel has it), LB
// source NAT, backend binding, whether the LB lands on the client's node, how Pods are
// attached — plus the Pod-to-own-Service cases and the seed tables' rows that have a dataplane
// meaning, a test builds both a core.Exposure (or core.HairpinFacts), the way a dialect would
// fill it, and the matching internal/netlab Scenario. core.Assess / core.HairpinFacts.Assess predict
// whether the declared client connects and which source the backend sees; netlab builds the
// cluster out of network namespaces and the kernel says what really happened.
//
// Every case must agree, except those listed in knownModelGaps (gaps_test.go): places where
// the kernel shows the model wrong, each with the kernel's evidence and the proposed core
// change. The test asserts that those still disagree in the recorded way, so fixing core makes
// it say which entry to remove.
//
// The test prints one line,
//
//	dataplane: N scenarios, N agree, ...
//
// with fmt.Printf. `go test` hides the output of passing packages in package-list mode
// (`go test ./...`), so `make test` runs this package in directory mode, which prints it:
//
//	cd internal/dataplane && go test
//
// A second set of tests replaces netlab's hand-written parts with real ones (internal/proxylab):
// the real kube-proxy v1.37.2 in iptables and in nftables mode, driven by a real kube-apiserver
// through Service, EndpointSlice and Node objects with ipMode in the status, and HAProxy as the
// LB and the backend where a PROXY protocol header is involved (the LB with its own address for
// LB source NAT, or as a transparent proxy that keeps the client's). They run both failure
// directions (the loop on the Proxy path; on the VIP path, a backend that requires a PROXY
// header and gets none), every combination of ipMode, LB source NAT, binding, placement and
// header (72 per mode), and print
//
//	dataplane (kube-proxy v1.37.2 iptables): N scenarios, N agree, N known model gaps, N disagree, ...
//
// and the same for nftables. The expectation is core.Assess's, with the backend's need for the
// header told to the model as Exposure.Needs. knownRealGaps (gaps_test.go) lists where the real
// components show the model wrong, with the evidence and the proposed core change, and the
// test asserts they still disagree in the recorded way. TestKubeProxyVersionSkew runs a
// kube-proxy that predates ipMode (v1.28.15) and checks what the plain Kubernetes dialect
// predicts for it. These tests also need KUBEBUILDER_ASSETS, haproxy, nftables and
// LOOPGUARD_KUBE_PROXY / LOOPGUARD_KUBE_PROXY_SKEW, and skip, saying which is missing, without
// them.
//
// The hand-written rules remain for what the kernel test covers and a real kube-proxy is not
// run for: the IPVS stand-in and real IPVS (no ip_vs here), a node proxy without a local VIP,
// Pods calling their own Service with self-masquerade turned off, and the Pod attachments
// (bridge with and without br_netfilter, routed), which the real-component tests fix to a
// bridge with br_netfilter on.
//
// The tests need what netlab needs (ip, iptables-restore, and user or root network
// namespaces) and skip with netlab's reason elsewhere.
package dataplane
