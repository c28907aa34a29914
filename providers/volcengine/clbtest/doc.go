// Package clbtest is for tests and local runs that need a Volcengine CLB
// (Cloud Load Balancer) API without a Volcengine account: it is an
// in-process HTTP server speaking the Volcengine OpenAPI for CLB, API version
// 2020-04-01, so the official client (github.com/volcengine/volcengine-go-sdk
// service/clb, v1.1.35) runs against it unchanged.
//
// It serves the read actions loopguard uses to learn whether a load balancer
// is private or public and whether its listeners send PROXY protocol:
// DescribeLoadBalancers, DescribeLoadBalancerAttributes, DescribeListeners,
// DescribeListenerAttributes, DescribeServerGroups and
// DescribeServerGroupAttributes. State is seeded and read back through Go
// methods (AddLoadBalancer, UpdateLoadBalancer, Snapshot); nothing is created
// over the wire.
//
// # Wire protocol
//
// Measured against the SDK (see the tests): every action is
// GET /?Action=<name>&Version=2020-04-01&<params>, lists as Name.N from 1,
// an empty list as a bare "Name=". Requests carry X-Date, X-Content-Sha256 and
//
//	Authorization: HMAC-SHA256 Credential=<ak>/<yyyymmdd>/<region>/clb/request,
//	  SignedHeaders=content-type;host;x-content-sha256;x-date, Signature=<hex>
//
// The server verifies the signature by re-signing a copy of the request with
// github.com/volcengine/volc-sdk-golang/base, the signer the SDK itself uses.
// Every response carries ResponseMetadata{RequestId, Action, Version,
// Service, Region}; errors add ResponseMetadata.Error{Code, Message} (and
// CodeN where Volcengine publishes one) with the cloud's HTTP status, which
// the SDK returns as a volcengineerr.RequestFailure (Code, StatusCode,
// RequestID). The SDK does not check required parameters itself, so a missing
// LoadBalancerId reaches the server and gets MissingParameter.
//
// Load balancers are regional: a call sees only those whose Region equals
// the region of its credential scope (the SDK's configured region).
//
// # Testing features
//
// Faults (InjectFault) script throttling, any error code, HTTP 5xx, non-JSON
// bodies and latency; SetRateLimit adds a per-action token bucket on the
// server's injectable clock; Calls returns a log of every request (action,
// region, access key ID, parameters, outcome) for assertions. Secrets never
// appear in responses, the call log, log records or the String form of
// Credential and Options.
//
// Use Server.Client with volcengine.Config.WithHTTPClient: the SDK session
// otherwise routes the calls through HTTP(S)_PROXY, ignoring NO_PROXY.
//
// # UNCONFIRMED
//
// These behaviours are guesses, kept in one place so they can be checked
// against the real cloud:
//   - HTTP status 429 for AccountFlowLimitExceeded (the code itself is used
//     by Volcengine's cello CNI; its status and CodeN are not published in
//     the pages found). FlowLimitExceeded 429 is documented.
//   - InvalidTimestamp is sent with 400 (docs/6369/68677 and BytePlus); the
//     ECS error page lists 403. The skew tolerance (15 min both ways) comes
//     from the default X-Expires of 900 s; the future-side limit is a guess.
//   - InvalidListener.NotFound and InvalidServerGroup.NotFound (and 404 for
//     them) follow the pattern of the documented InvalidLoadBalancer.NotFound.
//   - Which code answers a wrong service in the credential scope: here
//     ServiceNotFound (404), as for an unknown service on the shared gateway.
//   - AccessDenied's message (403 and CodeN 100013 are the published ones) and
//     InvalidRegion for a region the endpoint does not serve (Options.Regions):
//     no published code was found for that case.
//   - The order of checks (authentication before Action/Version, then region
//     and IAM policy).
//   - InvalidParameter for malformed PageNumber/PageSize, PageSize > 100, or
//     more IDs than the documented maxima (20 LoadBalancerIds, 100
//     ListenerIds/ServerGroupIds); the real messages are not published.
//   - DescribeLoadBalancers with unknown LoadBalancerIds returns an empty
//     list, not an error (inferred from terraform-provider-volcengine).
//   - Empty strings (not absent fields) for unset attributes such as
//     EipAddress of a private LB; listing order is insertion order.
//   - Messages of InternalServiceError, ServiceUnavailableTemp,
//     FlowLimitExceeded, AccountFlowLimitExceeded and MethodNotAllowed.
//
// Not supported: signatures in the query string (X-Signature) and STS
// session tokens; filters other than those named in each action's code are
// ignored.
package clbtest
