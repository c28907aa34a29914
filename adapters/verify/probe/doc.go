// Package probe is for whoever needs to measure, not predict, what happens to connections
// from one place to a load balancer's addresses: loopguard's `probe` subcommand (which a
// verify probe Pod runs), the verify orchestration in adapters/verify, and loopguard's own
// dataplane tests, which run it inside network namespaces.
//
// Run opens a bounded number of TCP connections to each target, one after another, each
// bounded in time, and classifies every one (Outcome). It needs nothing but the standard
// library and a way to dial (Spec.Dial), so the same code runs in a distroless Pod and in a
// test's network namespace.
//
// How each outcome is told apart, precisely:
//
//   - timeout: the dial did not complete within Spec.ConnectTimeout: no SYN-ACK came from
//     the address dialed. This is the loop's signature behind an LB that forwards in the
//     kernel and keeps the client's address: the backend's SYN-ACK goes straight to the client
//     from the backend's own address, which the client's kernel does not match to the
//     connection it opened (it answers RST), so the dial waits out its timeout.
//   - refused: the dial was answered by an RST (ECONNREFUSED): nothing listens there.
//   - unreachable: an ICMP unreachable (EHOSTUNREACH, ENETUNREACH).
//   - no-answer: connected and sent the request, and nothing came back within
//     Spec.ReadTimeout while the connection stayed open. The loop's signature behind an LB
//     that is a proxy keeping the client's address (a transparent proxy): the client's own
//     connection ends at the LB, the LB's connection to the backend is the one whose reply is
//     short-circuited. A server that never answers the request sent (Spec.Payload) looks the
//     same: choose a payload the service answers.
//   - reset: connected, then an RST before the first byte of an answer (ECONNRESET, EPIPE).
//   - closed: connected, then an orderly close (EOF) before the first byte.
//   - proxy-rejected: reset or closed as above, and a check connection that sent a PROXY
//     protocol v1 header (naming the check connection's own addresses truthfully) before the
//     same request got an answer. A server that answers a request with the header and drops
//     the same request without it requires the header, and this path did not add one: the
//     rejection a PROXY-protocol backend gives connections that bypassed the LB (ipMode VIP).
//     The check is made once per target, only when a plain connection was reset or closed,
//     and only with Spec.ProxyCheck.
//   - ok: connected, and at least one byte of an answer arrived.
//   - dns-error, error: the target's name did not resolve; anything else (the error says).
//
// Every attempt records the time to connect and, once connected, the time from sending the
// request to the first byte of the answer.
package probe
