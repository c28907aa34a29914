package tencent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	sdkerrors "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/errors"
	"golang.org/x/time/rate"

	"github.com/loopguard/loopguard/core"
)

// CLBAPI is the part of the CLB API (clb 2018-03-17) the driver calls. *clb.Client of
// github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317 implements it; pass
// the SDK client as it is, so the driver's calls are the SDK's own requests.
type CLBAPI interface {
	DescribeListenersWithContext(ctx context.Context, req *clb.DescribeListenersRequest) (*clb.DescribeListenersResponse, error)
	ModifyListenerWithContext(ctx context.Context, req *clb.ModifyListenerRequest) (*clb.ModifyListenerResponse, error)
	DescribeTaskStatusWithContext(ctx context.Context, req *clb.DescribeTaskStatusRequest) (*clb.DescribeTaskStatusResponse, error)
}

var _ CLBAPI = (*clb.Client)(nil)

// credentialHolder is implemented by the SDK client; the driver uses it only to keep the
// credential out of every error text it returns.
type credentialHolder interface {
	GetCredential() common.CredentialIface
}

// Error codes the driver branches on (docs/sources.md#tke-clb-api; Tencent Cloud API 3.0 common codes and
// the clb v20180317 error list of tencentcloud-sdk-go v1.3.156).
const (
	codeRequestLimitExceeded = "RequestLimitExceeded"
	codeResourceInOperating  = "FailedOperation.ResourceInOperating"
	codeInternalError        = "InternalError"
	codeHTTPStatus           = "ClientError.HttpStatusCodeError"
	codeNetwork              = "ClientError.NetworkError"
	codeIO                   = "ClientError.IOError"
)

// failure classifies a CLB API error for retrying.
type failure int

const (
	failNone failure = iota
	// failOther: not retried.
	failOther
	// failThrottled: RequestLimitExceeded and its sub-codes.
	failThrottled
	// failBusy: FailedOperation.ResourceInOperating, a task runs on the load balancer.
	failBusy
	// failTransient: HTTP 5xx or 429, network and I/O errors, InternalError.
	failTransient
	// failNotEnabled: the capability is not enabled for the account (docs/sources.md#tke-clb-api).
	failNotEnabled
)

// classify maps an error of the SDK to a failure.
func classify(err error) failure {
	if err == nil {
		return failNone
	}
	var e *sdkerrors.TencentCloudSDKError
	if !errors.As(err, &e) {
		return failOther
	}
	code := e.GetCode()
	switch {
	case hasCode(code, codeRequestLimitExceeded):
		return failThrottled
	case code == codeResourceInOperating:
		return failBusy
	case hasCode(code, codeInternalError), code == codeNetwork, code == codeIO:
		return failTransient
	case code == codeHTTPStatus:
		// "Request fail with http status code: 503 Service Unavailable, with body: ..."
		msg := e.GetMessage()
		if strings.Contains(msg, "status code: 5") || strings.Contains(msg, "status code: 429") {
			return failTransient
		}
		return failOther
	case notEnabled(code, e.GetMessage()):
		return failNotEnabled
	}
	return failOther
}

// hasCode reports whether code is base or one of its sub-codes (base.X).
func hasCode(code, base string) bool {
	return code == base || strings.HasPrefix(code, base+".")
}

// notEnabled reports whether an error says a capability is not enabled for the account. The
// exact error CLB answers is UNCONFIRMED (unconfirmed.go, notEnabledCodes); docs/sources.md#tke-clb-api
// lists the codes to read this way.
func notEnabled(code, message string) bool {
	for _, base := range notEnabledCodes {
		if hasCode(code, base) {
			return true
		}
	}
	if strings.HasPrefix(code, "InvalidParameter") {
		return mentionsAllowlist(message)
	}
	return false
}

func mentionsAllowlist(message string) bool {
	m := strings.ToLower(message)
	for _, w := range allowlistWords {
		if strings.Contains(m, w) {
			return true
		}
	}
	return false
}

// callCode is what a CallObserver hears of a call's outcome: "" for success, the SDK error's
// code, or "Unknown" for an error that carries none.
func callCode(err error) string {
	if err == nil {
		return ""
	}
	if code := sdkCode(err); code != "" {
		return code
	}
	return "Unknown"
}

// sdkCode returns the SDK error's code, or "".
func sdkCode(err error) string {
	var e *sdkerrors.TencentCloudSDKError
	if errors.As(err, &e) {
		return e.GetCode()
	}
	return ""
}

// clbCaller makes CLB API calls with a client-side rate limiter per action and retries
// throttled, busy and transient failures with backoff. It keeps credentials out of errors.
type clbCaller struct {
	api     CLBAPI
	log     hclog.Logger
	backoff Backoff
	poll    time.Duration
	timeout time.Duration
	onCall  func(action, code string)

	rps       float64
	burst     int
	perAction map[string]float64
	mu        sync.Mutex
	limiters  map[string]*rate.Limiter

	// taskReadable is set once DescribeTaskStatus is known to be allowed (checkTaskReadable).
	taskReadable atomic.Bool

	// writing holds a token per load balancer while one of this driver's writes and its task
	// run on it (lockLB).
	writing map[string]*lbLock
}

// lbLock is one load balancer's write token and how many callers hold or wait for it.
type lbLock struct {
	token chan struct{}
	users int
}

// lockLB waits until no other write of this driver runs on the load balancer and returns the
// function that lets the next one go. CLB runs one task at a time per load balancer and
// refuses other writes meanwhile (FailedOperation.ResourceInOperating): writes that wait here
// instead of being refused spend no ModifyListener quota on refusals and start as soon as the
// task before them ends, not after a backoff.
func (c *clbCaller) lockLB(ctx context.Context, lbID string) (func(), error) {
	c.mu.Lock()
	l := c.writing[lbID]
	if l == nil {
		l = &lbLock{token: make(chan struct{}, 1)}
		c.writing[lbID] = l
	}
	l.users++
	c.mu.Unlock()
	release := func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if l.users--; l.users == 0 {
			delete(c.writing, lbID)
		}
	}
	select {
	case l.token <- struct{}{}:
		return func() { <-l.token; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}

func newCLBCaller(api CLBAPI, o *DriverOptions, log hclog.Logger) (*clbCaller, error) {
	c := &clbCaller{
		api: api, log: log, backoff: o.Backoff, poll: o.TaskPollInterval, timeout: o.TaskTimeout, onCall: o.OnCall,
		rps: o.RateLimit, burst: o.Burst, perAction: map[string]float64{}, limiters: map[string]*rate.Limiter{},
		writing: map[string]*lbLock{},
	}
	if c.rps == 0 {
		c.rps = DefaultRateLimit
	}
	if c.burst == 0 {
		c.burst = 1
	}
	if c.rps < 0 || c.burst < 0 {
		return nil, fmt.Errorf("tencent.DriverOptions: %w: RateLimit and Burst must not be negative", core.ErrInvalid)
	}
	for a, r := range o.ActionRateLimits {
		if r < 0 {
			return nil, fmt.Errorf("tencent.DriverOptions: %w: ActionRateLimits[%q] must not be negative", core.ErrInvalid, a)
		}
		if r > 0 {
			c.perAction[a] = r
		}
	}
	if c.backoff.Initial <= 0 {
		c.backoff.Initial = 250 * time.Millisecond
	}
	if c.backoff.Max <= 0 {
		c.backoff.Max = 8 * time.Second
	}
	if c.backoff.Budget <= 0 {
		c.backoff.Budget = time.Minute
	}
	if c.poll <= 0 {
		c.poll = DefaultTaskPollInterval
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTaskTimeout
	}
	return c, nil
}

// limiter returns the action's rate limiter: CLB limits each API action separately
// (docs/sources.md#tke-clb-api), so one busy action does not slow the others.
func (c *clbCaller) limiter(action string) *rate.Limiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.limiters[action]
	if l == nil {
		r := c.rps
		if a, ok := c.perAction[action]; ok {
			r = a
		}
		l = rate.NewLimiter(rate.Limit(r), c.burst)
		c.limiters[action] = l
	}
	return l
}

// do calls fn for one action until it succeeds, fails for good, or the backoff budget is
// spent; then it returns a core.RetryError wrapping the last error.
func (c *clbCaller) do(ctx context.Context, action, target string, fn func(context.Context) error) error {
	start := time.Now()
	delay := c.backoff.Initial
	for attempt := 1; ; attempt++ {
		if err := c.limiter(action).Wait(ctx); err != nil {
			return err
		}
		err := fn(ctx)
		if c.onCall != nil {
			c.onCall(action, callCode(err))
		}
		f := classify(err)
		if f == failNone {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.log.Debug("clb call failed", "action", action, "target", target, "attempt", attempt, "code", sdkCode(err))
		if f != failThrottled && f != failBusy && f != failTransient {
			return c.wrap(action, target, err)
		}
		wait := jitter(delay)
		if time.Since(start)+wait > c.backoff.Budget {
			what := map[failure]string{failThrottled: "throttled", failBusy: "busy with another task", failTransient: "failing transiently"}[f]
			return &core.RetryError{After: delay, Msg: fmt.Sprintf("clb %s %s: %s after %d attempts", action, target, what, attempt), Err: c.wrap(action, target, err)}
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		delay = min(2*delay, c.backoff.Max)
	}
}

// jitter spreads retries of concurrent callers: a delay between d/2 and d.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wrap returns the SDK error with the call's context and with any credential text removed;
// the SDK error stays reachable with errors.As.
func (c *clbCaller) wrap(action, target string, err error) error {
	return &CLBError{Action: action, Target: target, msg: c.redact(err.Error()), err: err}
}

// redact removes the client's SecretId, SecretKey and token from a text.
func (c *clbCaller) redact(s string) string {
	h, ok := c.api.(credentialHolder)
	if !ok {
		return s
	}
	cred := h.GetCredential()
	if cred == nil {
		return s
	}
	for _, secret := range []string{cred.GetSecretKey(), cred.GetToken(), cred.GetSecretId()} {
		if len(secret) >= 4 {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return s
}

// CLBError is a failed CLB API call. Its text never holds the client's credentials; the SDK's
// *errors.TencentCloudSDKError is reachable with errors.As.
type CLBError struct {
	// Action is the API action ("ModifyListener"); Target what it was about.
	Action, Target string
	msg            string
	err            error
}

func (e *CLBError) Error() string {
	s := "clb " + e.Action + " " + e.Target + ": " + e.msg
	if hint := authHint(e.Code(), e.Action); hint != "" {
		s += " (" + hint + ")"
	}
	return s
}

// Is makes a refusal of the credentials or of a CAM permission match core.ErrUnauthenticated.
func (e *CLBError) Is(target error) bool {
	return target == core.ErrUnauthenticated && authHint(e.Code(), e.Action) != ""
}

// authHint says what to check for the cloud's authentication and authorization codes (Tencent
// Cloud API 3.0 common error codes: https://www.tencentcloud.com/document/api/214/30669), or
// "" for any other code.
func authHint(code, action string) string {
	switch code {
	case "AuthFailure.SecretIdNotFound", "AuthFailure.InvalidSecretId":
		return "the SecretId is not known to Tencent Cloud: check the credential's SecretId"
	case "AuthFailure.SignatureFailure":
		return "the signature does not match: check the SecretKey that goes with the SecretId, and that requests are signed for the clb service"
	case "AuthFailure.SignatureExpire":
		return "the request's timestamp is too far from Tencent Cloud's clock: check this machine's time"
	case "AuthFailure.TokenFailure":
		return "the temporary credential's token is invalid or expired: renew it"
	case "AuthFailure.MFAFailure", "AuthFailure.InvalidAuthorization":
		return "the Authorization header was refused: check the credentials and the region"
	case "UnsupportedRegion":
		return "the CLB API does not serve the client's region: check the region the client is configured with (ap-guangzhou, ap-shanghai, ...)"
	case "AuthFailure.UnauthorizedOperation":
		return "the credentials lack the CAM permission for clb:" + action + ": grant it to the sub-account or role"
	}
	return ""
}

// Unwrap returns the SDK's error.
func (e *CLBError) Unwrap() error { return e.err }

// Code is the cloud's error code ("FailedOperation.ResourceInOperating"), or "".
func (e *CLBError) Code() string { return sdkCode(e.err) }

// TaskError is a CLB write whose asynchronous task ended with Status 1 (failed).
type TaskError struct {
	// TaskID is the write's RequestId; Message the task's own explanation.
	TaskID  string
	Target  string
	Message string
}

func (e *TaskError) Error() string {
	return "clb task " + e.TaskID + " (" + e.Target + ") failed: " + e.Message
}

// describeListeners reads listeners of one load balancer: all of them when ids is empty (one
// call), else those IDs, 100 per call (the API's limit).
func (c *clbCaller) describeListeners(ctx context.Context, lbID string, ids []string) ([]*clb.Listener, error) {
	var out []*clb.Listener
	for {
		batch := ids
		if len(batch) > maxListenerIDs {
			batch = ids[:maxListenerIDs]
		}
		var resp *clb.DescribeListenersResponse
		err := c.do(ctx, "DescribeListeners", lbID, func(ctx context.Context) error {
			// A request object is not reused across calls: the SDK keeps state in it.
			req := clb.NewDescribeListenersRequest()
			req.LoadBalancerId = common.StringPtr(lbID)
			if len(batch) > 0 {
				req.ListenerIds = common.StringPtrs(batch)
			}
			var err error
			resp, err = c.api.DescribeListenersWithContext(ctx, req)
			return err
		})
		if err != nil {
			return nil, err
		}
		if resp.Response != nil {
			out = append(out, resp.Response.Listeners...)
		}
		ids = ids[len(batch):]
		if len(ids) == 0 {
			return out, nil
		}
	}
}

// probeTaskID is a task ID no write ever gets; asking for it only shows whether the
// credentials may call DescribeTaskStatus.
const probeTaskID = "00000000-0000-0000-0000-000000000000"

// checkTaskReadable makes sure, before the first write, that the credentials may also call
// DescribeTaskStatus: a write whose task cannot be waited for would be left unverified, and
// the writes after it undone. Only a refusal of the credentials or of the CAM permission is
// an error (core.ErrUnauthenticated, naming clb:DescribeTaskStatus); any other answer, such as
// the unknown task's InvalidParameter, means the call is allowed and is not asked again.
func (c *clbCaller) checkTaskReadable(ctx context.Context, target string) error {
	if c.taskReadable.Load() {
		return nil
	}
	err := c.do(ctx, "DescribeTaskStatus", "(permission check)", func(ctx context.Context) error {
		req := clb.NewDescribeTaskStatusRequest()
		req.TaskId = common.StringPtr(probeTaskID)
		_, err := c.api.DescribeTaskStatusWithContext(ctx, req)
		return err
	})
	if errors.Is(err, core.ErrUnauthenticated) {
		return fmt.Errorf("nothing was written to clb %s: %w", target, err)
	}
	var retry *core.RetryError
	if errors.As(err, &retry) || ctx.Err() != nil {
		return err
	}
	c.taskReadable.Store(true)
	return nil
}

// maxListenerIDs is DescribeListeners' limit on ListenerIds.
const maxListenerIDs = 100

// modifyListener writes the listener's attribute and returns the task ID to wait on. A retry
// never repeats a write that took: once an attempt's answer was lost (a dropped connection, a
// 5xx, an internal error: the write may have been made), every retry reads the listener first
// (settled), also while the load balancer is busy with that write's task, and when the
// listener holds the value the write is done: already is true and there is no task to wait
// on (a listener shows a value once its task succeeded). A retry after a plain refusal
// (throttled, busy) reads nothing more: the read would spend DescribeListeners' quota on each.
func (c *clbCaller) modifyListener(ctx context.Context, w *listenerWrite, settled func(context.Context) (bool, error)) (taskID string, already bool, err error) {
	var maybeTook bool
	var readErr error
	err = c.do(ctx, "ModifyListener", w.target(), func(ctx context.Context) error {
		readErr = nil
		if maybeTook && settled != nil {
			done, err := settled(ctx)
			if err != nil {
				readErr = err
				return err
			}
			if done {
				already = true
				return nil
			}
		}
		req := clb.NewModifyListenerRequest()
		req.LoadBalancerId = common.StringPtr(w.lbID)
		req.ListenerId = common.StringPtr(w.listenerID)
		switch w.attribute {
		case attrSnatEnable:
			req.SnatEnable = common.BoolPtr(!w.off)
		case attrKeepaliveEnable:
			req.KeepaliveEnable = common.Int64Ptr(1)
			if w.off {
				req.KeepaliveEnable = common.Int64Ptr(0)
			}
		}
		resp, err := c.api.ModifyListenerWithContext(ctx, req)
		if err == nil && resp.Response != nil && resp.Response.RequestId != nil {
			taskID = *resp.Response.RequestId
		}
		if classify(err) == failTransient {
			maybeTook = true
		}
		return err
	})
	if err != nil && readErr != nil {
		return "", false, readErr
	}
	if err == nil && !already && taskID == "" {
		return "", false, fmt.Errorf("clb ModifyListener %s: the answer carries no RequestId to wait on", w.target())
	}
	return taskID, already, err
}

// waitTask polls DescribeTaskStatus until the task ends: nil when it succeeded, a *TaskError
// when it failed, a core.RetryError when it still runs after the timeout. The first poll comes
// one poll interval after the write: a task takes its time (about 1–3 s on CLB), and a poll
// sent at once would only spend DescribeTaskStatus' rate limit, which every task shares.
func (c *clbCaller) waitTask(ctx context.Context, taskID, target string) error {
	deadline := time.Now().Add(c.timeout)
	if err := sleep(ctx, c.poll); err != nil {
		return err
	}
	for {
		var status int64 = -1
		var msg string
		err := c.do(ctx, "DescribeTaskStatus", taskID, func(ctx context.Context) error {
			req := clb.NewDescribeTaskStatusRequest()
			req.TaskId = common.StringPtr(taskID)
			resp, err := c.api.DescribeTaskStatusWithContext(ctx, req)
			if err == nil && resp.Response != nil {
				if resp.Response.Status != nil {
					status = *resp.Response.Status
				}
				if resp.Response.Message != nil {
					msg = *resp.Response.Message
				}
			}
			return err
		})
		if err != nil {
			return err
		}
		switch status {
		case taskSucceeded:
			return nil
		case taskFailed:
			return &TaskError{TaskID: taskID, Target: target, Message: c.redact(msg)}
		case taskRunning:
		default:
			return fmt.Errorf("clb DescribeTaskStatus %s: unknown status %d", taskID, status)
		}
		if time.Now().Add(c.poll).After(deadline) {
			return &core.RetryError{After: c.poll, Msg: fmt.Sprintf("clb task %s (%s) is still running after %s", taskID, target, c.timeout)}
		}
		if err := sleep(ctx, c.poll); err != nil {
			return err
		}
	}
}

// DescribeTaskStatus' Status values (docs/sources.md#tke-clb-api).
const (
	taskSucceeded = 0
	taskFailed    = 1
	taskRunning   = 2
)
