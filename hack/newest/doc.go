// Package newest pins the newest supported Kubernetes release for loopguard's own builds and
// tests; see go.mod. It holds no code.
package newest
