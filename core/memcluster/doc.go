// Package memcluster is for hosts and demos that need a Kubernetes API without a cluster: an
// in-memory core.ClusterWriter that applies, updates, creates and deletes unstructured objects
// with the semantics loopguard relies on (server-side apply merges, resourceVersion conflicts).
// It imports no testing package, so a program (the CLI's demo) can link it; core/drivertest
// re-exports it for tests.
package memcluster
