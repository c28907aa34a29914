// Package helmchart is for loopguard's developers: its tests keep the Helm chart in
// deploy/helm/loopguard equal to deploy/'s kustomize compositions, lint it with Helm's own
// linter, and install it into a real kube-apiserver. It is a module of its own so that Helm's
// dependencies stay out of loopguard's root module.
package helmchart
