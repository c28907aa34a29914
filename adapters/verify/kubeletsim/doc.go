// Package kubeletsim is for tests of `loopguard verify` (adapters/verify) against a real
// kube-apiserver, which (envtest) runs no kubelet: loopguard's own, and a host's that embeds
// verify. Start plays a kubelet for the probe Pods of a namespace, writing their status through
// the status subresource as a kubelet would — Running, then the container terminated with the
// real probe's report (adapters/verify/probe, run against loopback servers that stand for each
// node's view of the LB) as its termination message — or an image pull failure, a container
// that never ends, one that exits without a report.
//
// It lives beside adapters/verify, which it plays against, and not under internal/: a harness
// there may not import an adapter.
package kubeletsim
