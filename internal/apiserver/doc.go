// Package apiserver is for loopguard's tests that need a real Kubernetes API server: it starts
// kube-apiserver and etcd through controller-runtime's envtest from the binaries that
// hack/envtest-assets.sh builds, and skips the test when they are absent.
//
// A mock that agrees with our own reading of the API proves little (docs/sources.md#how-it-is-tested), so questions
// such as "does the server accept ipMode without ip" are answered by the server itself:
//
//	export KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"
//	go test ./...
//
// Without KUBEBUILDER_ASSETS the tests skip with "KUBEBUILDER_ASSETS not set; run
// hack/envtest-assets.sh". With it set but pointing at a folder without the binaries they
// fail, because a CI job that asked for a server must not pass without one.
//
// Each start costs ~3-5 s, so a package with several such tests shares one server through
// [Shared] and gives each test its own namespace with [Server.Namespace]; [Start] is for a
// test that needs a server of its own (other flags, other CRDs). Starts are gated machine-wide,
// across test binaries, to one per core at a time (gate_unix.go): `go test -p N` starts
// several packages' servers at once, and on two cores more starts than cores made each one
// slow enough for envtest to give up on it.
//
// The package also holds [IPModeCases]: what a real kube-apiserver v1.37.2 answers to each
// shape of status.loadBalancer.ingress[].ipMode, checked against the server by this package's
// tests, so that the project's own validation can be tested for agreement with the server
// without starting one.
package apiserver
