// Package dataplane is for loopguard's developers: its tests hold every prediction the core
// model makes about packets up against the real Linux kernel. It has no non-test code.
//
// For each connection the model can express — interception (none, kube-proxy iptables, the
// IPVS stand-in, a node proxy without a local VIP, real IPVS where the kernel has it), LB
// source NAT, backend binding, whether the LB lands on the client's node, how Pods are
// attached — plus the Pod-to-own-Service cases and the seed tables' rows that have a dataplane
// meaning, a test builds both a core.Exposure (or core.HairpinFacts), the way a dialect would
// fill it, and the matching internal/netlab Scenario. core.Assess / core.AssessHairpin predict
// whether the declared client connects and which source the backend sees; netlab builds the
// cluster out of network namespaces and the kernel says what really happened.
//
// Every case must agree, except those listed in knownModelGaps (gaps_test.go): places where
// the kernel shows the model wrong, each with the kernel's evidence and the proposed core
// change. The test asserts that those still disagree in the recorded way, so fixing core makes
// it say which entry to remove.
//
// The test prints one line,
//
//	dataplane: N scenarios, N agree, ...
//
// with fmt.Printf. `go test` hides the output of passing packages in package-list mode
// (`go test ./...`), so `make test` runs this package in directory mode, which prints it:
//
//	cd internal/dataplane && go test
//
// The tests need what netlab needs (ip, iptables-restore, and user or root network
// namespaces) and skip with netlab's reason elsewhere.
package dataplane
