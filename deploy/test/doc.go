// Package test renders deploy/'s kustomizations with the kustomize library and runs what they
// render against a real kube-apiserver. It is its own module so that kustomize's requirements
// never enter the root go.mod (adopting loopguard must not move a host's sigs.k8s.io versions).
package test
