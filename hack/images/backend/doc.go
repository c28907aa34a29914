// Command backend is the test server of the cluster hack/cluster brings up: it answers every
// HTTP request with one line naming the TCP peer it saw and, on its PROXY-protocol port, the
// client the header named, so a test or `loopguard verify` can tell which path a connection
// took. On that port a connection without a PROXY header (v1 or v2) is closed unanswered, as
// a real backend that requires the header closes it.
//
//	backend -listen :8080 -listen-proxy :8081
//
// With -dial it is the client instead: it opens -n connections to the address (a name is
// resolved by the Pod's resolver), sends each an HTTP request and writes one JSON line per
// connection (its outcome and the answer line) to standard output and, for kubelet to report
// as the container's termination message, to /dev/termination-log.
//
//	backend -dial web.shop.svc.cluster.local:80 -n 3
package main
