module github.com/loopguard/loopguard/deploy/test

go 1.26.0

replace github.com/loopguard/loopguard => ../..

require github.com/loopguard/loopguard v0.0.0-00010101000000-000000000000

require (
	github.com/blang/semver/v4 v4.0.0 // indirect
	sigs.k8s.io/kustomize/api v0.21.2 // indirect
)
