// Package verifylab is loopguard's proof that the verify probe measures what it claims: its
// tests run the probe engine (adapters/verify/probe) from a client Pod's network namespace in
// internal/proxylab's labs — the real kube-proxy programming the nodes from a real
// kube-apiserver, real HAProxy as the PROXY-protocol LB and backend — and compare what it
// observed with core.Assess's prediction for that client placement (adapters/verify.Predict,
// Observe, Agree: the same functions `loopguard verify` uses on a cluster). They print
//
//	verify: N scenarios, N agree, ...
//
// and need what proxylab needs (root or user namespaces, KUBEBUILDER_ASSETS, haproxy,
// nftables for that mode, LOOPGUARD_KUBE_PROXY); without it they skip and say why.
package verifylab
