// Command controller is an operator built on controller-runtime, kept to check that adding
// loopguard's controller moves none of its Kubernetes modules (hack/hosts.sh). host.go is
// the operator before loopguard; loopguard.go is what it adds.
package main
