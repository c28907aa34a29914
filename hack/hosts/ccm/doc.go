// Command ccm is a cloud-controller-manager fork as k8s.io/cloud-provider's sample/basic_main.go
// shapes one, kept to check that adding loopguard moves none of its Kubernetes modules
// (hack/hosts.sh). host.go is the fork before loopguard; loopguard.go is what it adds.
package main
