// Package demo is for someone trying loopguard for the first time: it runs the whole job on
// built-in examples, with no cluster, no cloud and no credentials, and prints what it found,
// what it changed where, and what is left for the user. `go run ./cmd/loopguard/demo` and
// `loopguard demo` both run it.
//
// It is written against the library only (core, core/memcluster, adapters/manifest and the
// TKE and VKE providers with their in-process API servers), as a host would embed it, so the
// first command a newcomer runs compiles no Kubernetes client, Gateway API or CLI framework:
// nothing the demo does not run. What it prints is readable in a terminal 100 columns wide.
//
// The three parts:
//
//  1. TKE, as `loopguard apply` does it: annotations written to an in-memory cluster
//     (core/memcluster) holding examples/manifests, then the cluster assessed again;
//  2. TKE, as a host that owns the CLB does it (the Tencent driver's direct mode): listener
//     SNAT turned on through the official SDK client against the in-process CLB API server
//     (providers/tencent/clbtest), and read back;
//  3. VKE: examples/volcengine, with the CLBs' facts read through the official SDK from the
//     in-process Volcengine API server, then what can be fixed and what is left for the user.
package demo
