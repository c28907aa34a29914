//go:build ignore

// The fork fixtures: each folder holds a real cloud-controller-manager fork's go.mod and go.sum
// at a release (its go.mod's first comment says which), and loopguard.go is the lines every
// fork adds. hack/forks.sh builds each fixture with hack/hosts/ccm's main, adds loopguard.go
// and runs docs/ccm.md's fork steps. The build constraint keeps this folder out of the root
// module's packages.

package main
