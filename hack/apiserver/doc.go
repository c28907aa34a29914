// Command apiserver is for trying `loopguard scan` and `apply` without a cluster: it starts a
// throwaway kube-apiserver and etcd (the envtest binaries hack/envtest-assets.sh builds), with
// the TkeServiceConfig CRD installed, loads manifests into it, writes a kubeconfig and runs
// until interrupted. Nothing it starts outlives it.
//
//	export KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"
//	go run ./hack/apiserver -kubeconfig /tmp/loopguard.kubeconfig -f examples/manifests
package main
