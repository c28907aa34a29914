// Package drivertest is for authors of loopguard providers and hosts: an in-memory
// core.ClusterWriter to test drivers without an API server, and RunConformance, the suite every
// core.Driver must pass through the public API (planning never writes, plans are
// deterministic, a reconciled object plans nothing and a second reconcile writes nothing,
// blocked plans write nothing, every reason code is documented).
//
// The fake keeps what matters to loopguard's contract and nothing more: resourceVersions and
// conflicts for read-modify-write, map merging for server-side apply of annotations, and a log
// of writes. Behaviour that depends on the real API server (field ownership, defaulting,
// validation) is tested against one in adapters/kube and the providers' envtest tests.
package drivertest
