// The newest supported Kubernetes release, which loopguard's own tests, make lint and the CLI
// are built with. The root go.mod holds the floor of the support window (Kubernetes 1.35), so
// a host that adds loopguard keeps its own k8s.io/* and sigs.k8s.io/* versions; go.work in
// this directory (selected by the Makefile through GOWORK) raises the build to these versions
// by minimal version selection. hack/k8s-pins.sh checks both sets of pins.
module github.com/loopguard/loopguard/hack/newest

go 1.26.0

// fatih/color: Helm v4.2.4 (hack/helmchart) requires v1.19.0 and Kubernetes does not pin it, so
// loopguard's builds take it too and the chart test compiles nothing a second time
// (hack/k8s-pins.sh).
require (
	github.com/fatih/color v1.19.0
	google.golang.org/genproto v0.0.0-20260526163538-3dc84a4a5aaa
	k8s.io/api v0.37.2
	k8s.io/apiextensions-apiserver v0.37.2
	k8s.io/apimachinery v0.37.2
	k8s.io/apiserver v0.37.2
	k8s.io/client-go v0.37.2
	k8s.io/cloud-provider v0.37.2
	k8s.io/component-base v0.37.2
	k8s.io/component-helpers v0.37.2
	k8s.io/controller-manager v0.37.2
	k8s.io/klog/v2 v2.140.0
	k8s.io/kms v0.37.2
	k8s.io/kube-openapi v0.0.0-20260721132016-d427ff9ee9ad
	k8s.io/utils v0.0.0-20260626114624-be93311217bd
	sigs.k8s.io/apiserver-network-proxy/konnectivity-client v0.36.0
	sigs.k8s.io/controller-runtime v0.25.3
	sigs.k8s.io/gateway-api v1.5.1
	sigs.k8s.io/structured-merge-diff/v6 v6.4.2
)
