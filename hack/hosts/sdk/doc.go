// Package sdk is a platform SDK built on client-go, kept to check that adding loopguard moves
// none of its Kubernetes modules (hack/hosts.sh). host.go is the SDK before loopguard;
// loopguard.go is what it adds.
package sdk
