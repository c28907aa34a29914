// Package clbtest is for tests and demos of code that drives Tencent Cloud Load Balancer
// (CLB) through the official Go SDK — loopguard's Tencent provider, a
// cloud-controller-manager fork, a Terraform backend — and needs a CLB that answers
// like the real one without a cloud account.
//
// It is an in-process HTTP server speaking Tencent Cloud API 3.0 for service clb,
// version 2018-03-17. Point the unmodified SDK client at it
// (github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317, common
// v1.3.156):
//
//	srv, _ := clbtest.Start(nil)
//	defer srv.Close()
//	cpf := profile.NewClientProfile()
//	cpf.HttpProfile.Endpoint = srv.Endpoint()
//	cpf.HttpProfile.Scheme = "HTTP"
//	client, _ := clb.NewClient(common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey), clbtest.DefaultRegion, cpf)
//
// The package imports only the standard library.
//
// # What it does like the cloud
//
//   - Verifies TC3-HMAC-SHA256 signatures exactly as the SDK computes them, for POST
//     JSON and GET query requests (docs/sources.md#cloud-apis), and refuses with the cloud's codes:
//     AuthFailure.SecretIdNotFound, AuthFailure.SignatureFailure (wrong key, wrong
//     service or date in the credential scope), AuthFailure.SignatureExpire (more than
//     five minutes of skew against Options.Now), AuthFailure.TokenFailure,
//     AuthFailure.InvalidAuthorization; then NoSuchVersion, InvalidAction,
//     MissingParameter, UnknownParameter, InvalidParameter.FormatError.
//   - Answers HTTP 200 with {"Response":{...,"RequestId"}} always, errors inside
//     "Error", except injected HTTP faults.
//   - Serves DescribeLoadBalancers (ID/type/name/VIP/VPC/search filters, Offset/Limit,
//     OrderBy/OrderType), DescribeListeners (LoadBalancerId, ListenerIds, Protocol,
//     Port), ModifyListener, CreateListener, CreateLoadBalancer, DeleteLoadBalancer and
//     DescribeTaskStatus, so a cloud-controller-manager's load-balancer lifecycle runs
//     against it too. Listener SNAT is read back through AttrFlags containing
//     "SnatEnable"; KeepaliveEnable is an integer for HTTP/HTTPS only
//     (docs/sources.md#tke-clb-api).
//   - Runs every write as a task whose ID is the write's RequestId: the change becomes
//     visible when the task completes after Options.TaskDuration (or a time drawn up to
//     Options.TaskDurationMax; a new load balancer's or listener's ID is answered at once, the
//     object appears with the task), and meanwhile other writes on that load balancer fail with
//     FailedOperation.ResourceInOperating.
//   - Limits each action to Options.RateLimit requests per second (default 20), answering
//     RequestLimitExceeded with the cloud's message.
//   - Gates SNAT and Keep Alive behind an allowlist (Options.Allowlist, Server.Allow);
//     how a refused write fails is Options.Denial (see Denial: UNCONFIRMED).
//
// # What tests control
//
// Seed state with AddLoadBalancer and AddListener, read it back with Snapshot, Listener
// and Task, script misbehaviour with InjectFault (throttling and its sub-codes, any error
// code, HTTP 5xx with a JSON or non-JSON body, latency, failed tasks, an answer dropped
// after the call ran), drive time with a
// ManualClock, and assert on
// Calls and Writes (for example that a second, idempotent run wrote nothing).
//
// # Guesses
//
// Behaviour no public source confirmed is marked UNCONFIRMED in the code: the allowlist
// denial (Denial), the wording of not-found messages, the answer to an unknown TaskId,
// refusing a listener-level HealthCheck on HTTP/HTTPS, TCP_SSL/QUIC falling under the
// layer-4 SNAT allowlist, how ProxyProtocol is reported (it is not), and port sharing
// between QUIC and UDP.
//
// Parameters that filter on things the fake does not hold (targets, security groups,
// zones, Filters, DealName, port ranges) are refused with a message saying so rather
// than silently ignored. Actions other than the seven above answer InvalidAction.
//
// Secret keys, tokens and signatures never appear in responses, the call log or the log.
package clbtest
