package tencent_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	sdkerrors "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

const lbID = "lb-web00001"

// directSetup is a private Service (TCP/80, UDP/53) whose CLB also has a TCP/443 listener that
// is not the Service's, and a Reconciler on a direct-mode driver over the real SDK client.
type directSetup struct {
	cache *core.CapabilityCache
	cloud *cloud
	drv   *tencent.Driver
	rec   *core.Reconciler
	svc   runtime.Object
	c     *core.Cluster
}

func newDirect(t *testing.T, srvOpts *clbtest.Options, o *tencent.DriverOptions, allowlists ...core.Capability) *directSetup {
	t.Helper()
	cl := startCloud(t, srvOpts)
	cl.seedLB(t, lbID, "TCP/80", "UDP/53", "TCP/443")
	if o == nil {
		o = &tencent.DriverOptions{}
	}
	o.Mode = tencent.ModeDirect
	if o.CLB == nil {
		o.CLB = cl.client
	}
	drv := newDriver(t, fastRetries(o))
	svc := privateService("web", map[string]string{tencent.AnnotationLoadBalancerID: lbID}, "TCP/80", "UDP/53")
	cache := &core.CapabilityCache{}
	return &directSetup{
		cache: cache, cloud: cl, drv: drv, svc: svc,
		c:   cluster(t, ipvsProfile(allowlists...), svc),
		rec: core.NewReconciler(core.NewProvider(drv.Dialect(), drv), &core.ReconcilerOptions{Policy: snatPolicy, CapabilityCache: cache}),
	}
}

func (s *directSetup) reconcile(t *testing.T) (*core.Outcome, error) {
	t.Helper()
	return s.rec.Reconcile(context.Background(), s.svc, s.c)
}

// TestDirectL4SNAT: one batched read plans both listeners; each write is waited on and read
// back; the Service's other listener is untouched; a second run reads and writes nothing.
func TestDirectL4SNAT(t *testing.T) {
	s := newDirect(t, &clbtest.Options{Allowlist: []clbtest.Capability{clbtest.L4SNAT}, TaskDuration: 10 * time.Millisecond}, nil, tencent.CapL4SNAT)
	p, err := s.rec.Plan(context.Background(), s.svc, s.c)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.cloud.actions(); !slices.Equal(got, []string{"DescribeListeners"}) {
		t.Errorf("planning called %v, want one DescribeListeners for all listeners", got)
	}
	if len(p.Changes) != 2 || p.Changes[0].By != core.WriterCloud || p.Changes[0].Field != "SnatEnable" || p.Changes[0].From != "false" || p.Changes[0].To != "true" {
		t.Fatalf("plan %v", p)
	}
	if !slices.Contains(noteCodes(p), tencent.CodeDirectCLB) {
		t.Errorf("notes %v lack %s", noteCodes(p), tencent.CodeDirectCLB)
	}
	out, err := s.rec.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Written) != 2 {
		t.Errorf("written %v", out.Written)
	}
	for l, want := range map[string]bool{"TCP/80": true, "UDP/53": true, "TCP/443": false} {
		if got := s.cloud.listener(t, l).SnatEnable; got != want {
			t.Errorf("%s SnatEnable = %v, want %v", l, got, want)
		}
	}
	// Each write: read (already on?), write, poll the task until done, read back.
	for _, w := range s.cloud.srv.Writes() {
		if w.Action != "ModifyListener" || w.Param("SnatEnable") != "true" || w.Param("KeepaliveEnable") != "" {
			t.Errorf("write %+v", w)
		}
	}

	s.cloud.srv.ResetCalls()
	out, err = s.reconcile(t)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Written) != 0 || len(s.cloud.srv.Writes()) != 0 {
		t.Errorf("second run wrote %v (cloud writes %v)", out.Written, s.cloud.srv.Writes())
	}
	if got := s.cloud.actions(); !slices.Equal(got, []string{"DescribeListeners"}) {
		t.Errorf("second run called %v", got)
	}
}

// TestDirectL7: the attribute follows the ingress controller version, like the TkeServiceConfig
// field; the listener is read back through AttrFlags or KeepaliveEnable.
func TestDirectL7(t *testing.T) {
	for _, tc := range []struct {
		version         string
		snat, keepalive bool
	}{{"v2.9.0", true, false}, {"v2.8.3", false, true}} {
		t.Run(tc.version, func(t *testing.T) {
			cl := startCloud(t, &clbtest.Options{Allowlist: []clbtest.Capability{clbtest.L7SNAT, clbtest.KeepAlive}})
			cl.seedLB(t, lbID, "HTTP/80")
			drv := newDriver(t, fastRetries(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: cl.client}))
			ing := privateIngress("web", map[string]string{tencent.AnnotationIngressLoadBalancerID: lbID})
			prof := ipvsProfile(tencent.CapL7SNAT, tencent.CapKeepalive)
			prof.IngressControllerVersion = tc.version
			r := core.NewReconciler(core.NewProvider(drv.Dialect(), drv), nil)
			if _, err := r.Reconcile(context.Background(), ing, cluster(t, prof, ing)); err != nil {
				t.Fatal(err)
			}
			l := cl.listener(t, "HTTP/80")
			if l.SnatEnable != tc.snat || (l.KeepaliveEnable == 1) != tc.keepalive {
				t.Errorf("listener SnatEnable %v KeepaliveEnable %d", l.SnatEnable, l.KeepaliveEnable)
			}
		})
	}
}

// TestDirectFaults: throttling, a busy CLB, 5xx and failed tasks, each scripted on the server
// and met by the driver's unchanged code through the real SDK client.
func TestDirectFaults(t *testing.T) {
	tests := map[string]struct {
		reason string
		inject func(*clbtest.Server)
		// wantErr is nil when the driver rides the fault out.
		wantErr  error
		wantCode string
		wantSeen string
	}{
		"throttled": {
			reason:   "RequestLimitExceeded is retried with backoff",
			inject:   func(s *clbtest.Server) { s.InjectFault("ModifyListener", 2, clbtest.ThrottleFault("")) },
			wantSeen: "ModifyListener:RequestLimitExceeded",
		},
		"throttled sub-code": {
			reason: "the SDK retries only the exact code; the driver retries the sub-codes too",
			inject: func(s *clbtest.Server) {
				s.InjectFault("DescribeListeners", 1, clbtest.ThrottleFault(clbtest.CodeUinLimitExceeded))
			},
			wantSeen: "DescribeListeners:RequestLimitExceeded.UinLimitExceeded",
		},
		"busy": {
			reason: "FailedOperation.ResourceInOperating is retried with backoff",
			inject: func(s *clbtest.Server) {
				s.InjectFault("ModifyListener", 3, clbtest.ErrorFault(clbtest.CodeResourceInOperating, "The specified resource is currently being operated."))
			},
			wantSeen: "ModifyListener:FailedOperation.ResourceInOperating",
		},
		"busy beyond the budget": {
			reason: "a CLB that stays busy past the backoff budget is a RetryError, with the SDK error inside",
			inject: func(s *clbtest.Server) {
				s.InjectFault("ModifyListener", 0, clbtest.ErrorFault(clbtest.CodeResourceInOperating, "The specified resource is currently being operated."))
			},
			wantErr:  core.ErrRetryLater,
			wantCode: clbtest.CodeResourceInOperating,
		},
		"5xx": {
			reason:   "an HTTP 503 is transient",
			inject:   func(s *clbtest.Server) { s.InjectFault("DescribeListeners", 2, clbtest.HTTPFault(503)) },
			wantSeen: "DescribeListeners:503",
		},
		"5xx beyond the budget": {
			reason:   "a 503 that does not end is a RetryError",
			inject:   func(s *clbtest.Server) { s.InjectFault("DescribeTaskStatus", 0, clbtest.HTTPFault(502)) },
			wantErr:  core.ErrRetryLater,
			wantCode: "ClientError.HttpStatusCodeError",
		},
		"4xx": {
			reason:   "an HTTP 403 from a proxy is not retried",
			inject:   func(s *clbtest.Server) { s.InjectFault("DescribeListeners", 0, clbtest.HTTPFault(403)) },
			wantErr:  errAny,
			wantCode: "ClientError.HttpStatusCodeError",
		},
		"failed task": {
			reason: "a task that fails for another reason is a *tencent.TaskError",
			inject: func(s *clbtest.Server) {
				s.InjectFault("ModifyListener", 1, clbtest.FailedTaskFault("backend service internal error"))
			},
			wantErr: errTask,
		},
		"slow": {
			reason:   "latency within the SDK's timeout is just slow",
			inject:   func(s *clbtest.Server) { s.InjectFault("ModifyListener", 1, clbtest.DelayFault(50*time.Millisecond)) },
			wantSeen: "ModifyListener",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newDirect(t, &clbtest.Options{Allowlist: []clbtest.Capability{clbtest.L4SNAT}},
				&tencent.DriverOptions{Backoff: tencent.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond, Budget: 100 * time.Millisecond}}, tencent.CapL4SNAT)
			tc.inject(s.cloud.srv)
			_, err := s.reconcile(t)
			switch {
			case tc.wantErr == nil:
				if err != nil {
					t.Fatalf("%s: %v", tc.reason, err)
				}
				if !s.cloud.listener(t, "TCP/80").SnatEnable || !s.cloud.listener(t, "UDP/53").SnatEnable {
					t.Errorf("%s: SNAT not on after the faults", tc.reason)
				}
				if !slices.Contains(s.cloud.actions(), tc.wantSeen) {
					t.Errorf("%s: calls %v never saw %s", tc.reason, s.cloud.actions(), tc.wantSeen)
				}
			case tc.wantErr == errTask:
				var te *tencent.TaskError
				if !errors.As(err, &te) || te.Message != "backend service internal error" || errors.Is(err, core.ErrNotAllowlisted) {
					t.Errorf("%s: error %v", tc.reason, err)
				}
			case tc.wantErr == errAny:
				if err == nil || errors.Is(err, core.ErrRetryLater) {
					t.Errorf("%s: error %v", tc.reason, err)
				}
			default:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("%s: error %v, want %v", tc.reason, err, tc.wantErr)
				}
				var re *core.RetryError
				if !errors.As(err, &re) || re.After <= 0 {
					t.Errorf("%s: %v is not a RetryError with a delay", tc.reason, err)
				}
			}
			if tc.wantCode != "" {
				var sdk *sdkerrors.TencentCloudSDKError
				if !errors.As(err, &sdk) || sdk.GetCode() != tc.wantCode {
					t.Errorf("%s: SDK error not reachable with code %s: %v", tc.reason, tc.wantCode, err)
				}
			}
		})
	}
}

var (
	errAny  = errors.New("any error")
	errTask = errors.New("task error")
)

// TestDirectRealBusyLB: another client's write keeps the CLB busy (its task runs); the driver's
// write meets the real ResourceInOperating and goes through once the task is done.
func TestDirectRealBusyLB(t *testing.T) {
	// The other write's task runs until the driver has met the busy CLB once (a manual clock
	// the transport steps), so a slow machine cannot let the driver arrive after it.
	clock := clbtest.NewManualClock(time.Now())
	s := newDirect(t, &clbtest.Options{Now: clock.Now, Allowlist: []clbtest.Capability{clbtest.L4SNAT}, TaskDuration: time.Minute}, nil, tencent.CapL4SNAT)
	s.cloud.client.WithHttpTransport(&onBusy{next: http.DefaultTransport, busy: func() {
		clock.Advance(time.Minute + time.Second)
		s.cloud.srv.SetTaskDuration(0)
	}})
	other := clb.NewModifyListenerRequest()
	other.LoadBalancerId = common.StringPtr(lbID)
	other.ListenerId = common.StringPtr(listenerID("TCP/443"))
	other.ListenerName = common.StringPtr("someone-else")
	if _, err := s.cloud.client.ModifyListener(other); err != nil {
		t.Fatal(err)
	}
	if _, err := s.reconcile(t); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s.cloud.actions(), "ModifyListener:"+clbtest.CodeResourceInOperating) {
		t.Errorf("calls %v: the driver never met the busy CLB", s.cloud.actions())
	}
	if !s.cloud.listener(t, "TCP/80").SnatEnable || s.cloud.listener(t, "TCP/443").Name != "someone-else" {
		t.Errorf("listeners after the busy period: %+v %+v", s.cloud.listener(t, "TCP/80"), s.cloud.listener(t, "TCP/443"))
	}
}

// TestDirectLostAnswerNotRepeated: a ModifyListener whose answer is lost after the CLB
// accepted it (the connection dropped) is not made again: the driver reads the listener before
// it retries, and a write that took is done, also when its task still runs at the first look
// and the retry meets the busy CLB.
//
// The still-running case is deterministic: the server's clock is manual, so the lost write's
// task runs until the client has been refused as busy once (the transport steps the clock
// before the driver sees that answer). With real time, a task that ends between the retry's
// read and its write lets that write through, which is the race the server cannot rule out
// either, and no longer what this test is about.
func TestDirectLostAnswerNotRepeated(t *testing.T) {
	for name, running := range map[string]bool{"task done at once": false, "task still running": true} {
		t.Run(name, func(t *testing.T) {
			clock := clbtest.NewManualClock(time.Now())
			opts := &clbtest.Options{Now: clock.Now, Allowlist: []clbtest.Capability{clbtest.L4SNAT}}
			if running {
				opts.TaskDuration = time.Minute
			}
			s := newDirect(t, opts, &tencent.DriverOptions{TaskPollInterval: 5 * time.Millisecond,
				Backoff: tencent.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, Budget: 2 * time.Second}}, tencent.CapL4SNAT)
			// The driver holds this client: its transport sees every answer first.
			s.cloud.client.WithHttpTransport(&onBusy{next: http.DefaultTransport, busy: func() {
				// The lost write's task ends, and the writes after it complete at once.
				clock.Advance(time.Minute + time.Second)
				s.cloud.srv.SetTaskDuration(0)
			}})
			s.cloud.srv.InjectFault("ModifyListener", 1, clbtest.DropFault())
			out, err := s.reconcile(t)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Written) != 2 {
				t.Errorf("written %v, want both listeners", out.Written)
			}
			writes := s.cloud.srv.Writes()
			if len(writes) != 2 || !writes[0].Dropped {
				t.Errorf("%d writes (%+v), want one per listener, the first one's answer dropped", len(writes), writes)
			}
			if met := slices.Contains(s.cloud.actions(), "ModifyListener:"+clbtest.CodeResourceInOperating); met != running {
				t.Errorf("calls %v: met the busy CLB %v, want %v", s.cloud.actions(), met, running)
			}
			if !s.cloud.listener(t, "TCP/80").SnatEnable || !s.cloud.listener(t, "UDP/53").SnatEnable {
				t.Error("SNAT not on")
			}
		})
	}
}

// onBusy is a client transport that calls busy once, when the first answer refusing a write as
// busy (ResourceInOperating) arrives, before the SDK reads that answer.
type onBusy struct {
	next http.RoundTripper
	busy func()
	once sync.Once
}

func (o *onBusy) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := o.next.RoundTrip(r)
	if err != nil || r.Header.Get("X-TC-Action") != "ModifyListener" {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if bytes.Contains(body, []byte(clbtest.CodeResourceInOperating)) {
		o.once.Do(o.busy)
	}
	return resp, nil
}

// TestDirectTaskTimeout: a task still running after TaskTimeout is a RetryError; the next run
// converges without writing twice.
func TestDirectTaskTimeout(t *testing.T) {
	// The server's clock is manual: the task runs until the test moves it, however slow the
	// machine.
	clock := clbtest.NewManualClock(time.Now())
	s := newDirect(t, &clbtest.Options{Now: clock.Now, Allowlist: []clbtest.Capability{clbtest.L4SNAT}, TaskDuration: time.Minute},
		&tencent.DriverOptions{}, tencent.CapL4SNAT)
	s.drv = newDriver(t, &tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: s.cloud.client, TaskPollInterval: 5 * time.Millisecond, TaskTimeout: 30 * time.Millisecond,
		Backoff: tencent.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond, Budget: 50 * time.Millisecond}})
	s.rec = core.NewReconciler(core.NewProvider(s.drv.Dialect(), s.drv), &core.ReconcilerOptions{Policy: snatPolicy})
	_, err := s.reconcile(t)
	if !errors.Is(err, core.ErrRetryLater) {
		t.Fatalf("error %v, want a RetryError for the running task", err)
	}
	clock.Advance(time.Minute + time.Second)
	s.cloud.srv.SetTaskDuration(0)
	if _, err := s.reconcile(t); err != nil {
		t.Fatal(err)
	}
	if n := len(s.cloud.srv.Writes()); n != 2 {
		t.Errorf("%d writes, want one per listener", n)
	}
}

// TestDirectAllowlistDenied: the account lacks CLB L4 SNAT although the profile says it has
// it. The cloud's refusal (each shape DOMAIN.md §3.5 lists) becomes a *core.AllowlistError with
// the SDK error inside; the driver remembers it, and the next plan is refused before any write.
func TestDirectAllowlistDenied(t *testing.T) {
	tests := map[string]struct {
		denial  clbtest.Denial
		allowed bool // the error is not an allowlist refusal
	}{
		"InvalidParameter 白名单 (clbtest default)": {},
		"UnsupportedOperation":                   {denial: clbtest.Denial{Code: clbtest.CodeUnsupportedOperation, Message: "not supported"}},
		"OperationDenied":                        {denial: clbtest.Denial{Code: clbtest.CodeOperationDenied, Message: "denied"}},
		"UnauthorizedOperation":                  {denial: clbtest.Denial{Code: clbtest.CodeUnauthorizedOperation, Message: "no"}},
		"InvalidParameterValue 内测":               {denial: clbtest.Denial{Code: clbtest.CodeInvalidParameterValue, Message: "SnatEnable 功能内测中"}},
		"InvalidParameter whitelist":             {denial: clbtest.Denial{Code: clbtest.CodeInvalidParameter, Message: "user not in whitelist"}},
		"failed task":                            {denial: clbtest.Denial{Mode: clbtest.DenyInTask}},
		"plain InvalidParameter":                 {denial: clbtest.Denial{Code: clbtest.CodeInvalidParameter, Message: "ListenerId is malformed"}, allowed: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newDirect(t, &clbtest.Options{Denial: tc.denial}, nil, tencent.CapL4SNAT)
			_, err := s.reconcile(t)
			var ae *core.AllowlistError
			if tc.allowed {
				if err == nil || errors.As(err, &ae) {
					t.Fatalf("error %v, want a plain CLB error", err)
				}
				return
			}
			if !errors.As(err, &ae) || ae.Capability != tencent.CapL4SNAT || ae.Ask != "CLB Layer 4 SNAT capability" {
				t.Fatalf("error %v, want an AllowlistError for %s", err, tencent.CapL4SNAT)
			}
			if tc.denial.Mode == clbtest.DenyInTask {
				var te *tencent.TaskError
				if !errors.As(err, &te) {
					t.Errorf("the failed task is not reachable: %v", err)
				}
			} else {
				var sdk *sdkerrors.TencentCloudSDKError
				if !errors.As(err, &sdk) || sdk.GetCode() != tc.denial.Code && !(tc.denial.Code == "" && sdk.GetCode() == clbtest.DefaultDenialCode) {
					t.Errorf("the SDK error is not reachable: %v", err)
				}
			}
			if _, refused := s.cache.Refused(tencent.CapL4SNAT); !refused {
				t.Error("the Reconciler's CapabilityCache did not remember the refusal")
			}
			// The next run is refused before any write.
			s.cloud.srv.ResetCalls()
			_, err = s.reconcile(t)
			if !errors.As(err, &ae) {
				t.Fatalf("second run: %v", err)
			}
			if slices.Contains(s.cloud.actions(), "ModifyListener") || len(s.cloud.srv.Writes()) != 0 {
				t.Errorf("second run called %v", s.cloud.actions())
			}
		})
	}
}

// TestDirectAllowlistUndeclared: no allowlist declared anywhere: refused before any write.
func TestDirectAllowlistUndeclared(t *testing.T) {
	s := newDirect(t, nil, nil)
	_, err := s.reconcile(t)
	var ae *core.AllowlistError
	if !errors.As(err, &ae) || ae.Capability != tencent.CapL4SNAT || ae.Err != nil {
		t.Fatalf("error %v, want an AllowlistError from the plan", err)
	}
	for _, c := range s.cloud.srv.Calls() {
		if c.Action != "DescribeListeners" {
			t.Errorf("called %s before refusing", c.Action)
		}
	}
}

// revertingCLB reverts the listener after its task succeeds, as another controller would.
type revertingCLB struct {
	*clb.Client
	srv *clbtest.Server
}

func (r revertingCLB) DescribeTaskStatusWithContext(ctx context.Context, req *clb.DescribeTaskStatusRequest) (*clb.DescribeTaskStatusResponse, error) {
	resp, err := r.Client.DescribeTaskStatusWithContext(ctx, req)
	if err == nil && resp.Response.Status != nil && *resp.Response.Status == 0 {
		_ = r.srv.UpdateListener(listenerID("TCP/80"), func(l *clbtest.Listener) { l.SnatEnable = false })
	}
	return resp, err
}

// TestDirectVerifies: a write whose task succeeds but whose listener does not show the change
// is not success.
func TestDirectVerifies(t *testing.T) {
	cl := startCloud(t, &clbtest.Options{Allowlist: []clbtest.Capability{clbtest.L4SNAT}})
	cl.seedLB(t, lbID, "TCP/80")
	drv := newDriver(t, fastRetries(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: revertingCLB{cl.client, cl.srv}}))
	svc := privateService("web", map[string]string{tencent.AnnotationLoadBalancerID: lbID}, "TCP/80")
	_, err := core.NewReconciler(core.NewProvider(drv.Dialect(), drv), &core.ReconcilerOptions{Policy: snatPolicy}).Reconcile(context.Background(), svc, cluster(t, ipvsProfile(tencent.CapL4SNAT), svc))
	if !errors.Is(err, core.ErrConflict) || !strings.Contains(err.Error(), "CLB Layer 4 SNAT capability") {
		t.Fatalf("error %v, want a conflict naming the allowlist to check", err)
	}
}

// TestDirectCredentialsNeverShown: with a wrong key, and with an error message that echoes the
// credential, neither the errors nor the logs carry the SecretId or the SecretKey.
func TestDirectCredentialsNeverShown(t *testing.T) {
	const id, key = "AKIDsecretid0123456789abcdefghijklmn", "very-secret-key-0123456789abcdefg"
	cl := startCloud(t, &clbtest.Options{Credentials: []clbtest.Credential{{SecretID: id, SecretKey: key}}, Allowlist: []clbtest.Capability{clbtest.L4SNAT}})
	cl.seedLB(t, lbID, "TCP/80", "UDP/53")
	logger, logs := logBuffer()
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		for _, secret := range []string{id, key} {
			if strings.Contains(err.Error(), secret) || strings.Contains(logs.String(), secret) {
				t.Errorf("%s: a credential shows in the error %q or the logs", what, err)
			}
		}
	}

	wrong := newDriver(t, fastRetries(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: sdkClient(t, cl.srv, id, "wrong-"+key), Logger: logger}))
	svc := privateService("web", map[string]string{tencent.AnnotationLoadBalancerID: lbID}, "TCP/80")
	c := cluster(t, ipvsProfile(tencent.CapL4SNAT), svc)
	_, err := core.NewReconciler(core.NewProvider(wrong.Dialect(), wrong), &core.ReconcilerOptions{Policy: snatPolicy}).Reconcile(context.Background(), svc, c)
	check("wrong key", err)
	var sdk *sdkerrors.TencentCloudSDKError
	if !errors.As(err, &sdk) || sdk.GetCode() != clbtest.CodeSignatureFailure {
		t.Errorf("the SDK's AuthFailure is not reachable: %v", err)
	}

	right := newDriver(t, fastRetries(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: sdkClient(t, cl.srv, id, key), Logger: logger}))
	cl.srv.InjectFault("ModifyListener", 1, clbtest.ErrorFault(clbtest.CodeFailedOperation, "signed by "+id+" with "+key))
	_, err = core.NewReconciler(core.NewProvider(right.Dialect(), right), &core.ReconcilerOptions{Policy: snatPolicy}).Reconcile(context.Background(), svc, c)
	check("echoing error", err)
	if !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("error %q: the echoed credential was not redacted", err)
	}
	if logs.Len() == 0 {
		t.Error("the driver logged nothing; the check proves little")
	}
}

// TestDirectRateLimit: the client-side limiter keeps each action under the cloud's limit, so a
// burst of plans is never throttled.
func TestDirectRateLimit(t *testing.T) {
	cl := startCloud(t, &clbtest.Options{ActionRateLimits: map[string]int{"DescribeListeners": 10}})
	cl.seedLB(t, lbID, "TCP/80")
	drv := newDriver(t, fastRetries(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: cl.client, ActionRateLimits: map[string]float64{"DescribeListeners": 8}}))
	svc := privateService("web", map[string]string{tencent.AnnotationLoadBalancerID: lbID}, "TCP/80")
	c := cluster(t, ipvsProfile(tencent.CapL4SNAT), svc)
	res, err := core.Evaluate(drv.Dialect(), svc, c, snatPolicy)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	const n = 12
	for range n {
		if _, err := drv.Plan(context.Background(), &core.PlanRequest{Object: svc, Cluster: c, Result: res}); err != nil {
			t.Fatal(err)
		}
	}
	if elapsed := time.Since(start); elapsed < (n-1)*time.Second/8-50*time.Millisecond {
		t.Errorf("%d reads took %s: the limiter did not pace them at 8/s", n, elapsed)
	}
	for _, a := range cl.actions() {
		if a != "DescribeListeners" {
			t.Errorf("call %s: throttled despite the limiter", a)
		}
	}
}

// TestDirectNoCLBYet: a Service whose CLB TKE has not created yet is a RetryError, not a guess.
func TestDirectNoCLBYet(t *testing.T) {
	cl := startCloud(t, nil)
	drv := newDriver(t, fastRetries(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: cl.client}))
	svc := privateService("web", nil, "TCP/80")
	p, _ := planFor(t, drv, svc, cluster(t, ipvsProfile(tencent.CapL4SNAT), svc), snatPolicy, nil)
	if !errors.Is(p.Blocked.Err(), core.ErrRetryLater) || len(cl.srv.Calls()) != 0 {
		t.Errorf("Blocked %v after %d calls", p.Blocked, len(cl.srv.Calls()))
	}
	// A listener the CLB does not have yet is the same.
	cl.seedLB(t, lbID, "TCP/443")
	svc.Annotations[tencent.AnnotationLoadBalancerID] = lbID
	p, _ = planFor(t, drv, svc, cluster(t, ipvsProfile(tencent.CapL4SNAT), svc), snatPolicy, nil)
	if !errors.Is(p.Blocked.Err(), core.ErrRetryLater) || !strings.Contains(p.Blocked.Err().Error(), "TCP:80") {
		t.Errorf("Blocked %v", p.Blocked)
	}
}

// TestDirectReadsLiveCLBID: the host's copy of the Service predates TKE's loadbalance-id
// annotation; the plan reads the live Service and finds the CLB.
func TestDirectReadsLiveCLBID(t *testing.T) {
	cl := startCloud(t, nil)
	cl.seedLB(t, lbID, "TCP/80")
	drv := newDriver(t, fastRetries(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: cl.client}))
	stale := privateService("web", nil, "TCP/80")
	fresh := stale.DeepCopy()
	fresh.Annotations[tencent.AnnotationLoadBalancerID] = lbID
	p, _ := planFor(t, drv, stale, cluster(t, ipvsProfile(tencent.CapL4SNAT), stale), snatPolicy, newMemCluster(toUnstructured(t, fresh)))
	if p.Blocked != nil || len(p.Changes) != 1 || p.Changes[0].Params[tencent.ParamLoadBalancerID] != lbID {
		t.Errorf("plan %v, blocked %v", p, p.Blocked)
	}
}

// TestApplyCloudRejectsForeignChanges: ApplyCloud takes only changes the driver planned.
func TestApplyCloudRejectsForeignChanges(t *testing.T) {
	cl := startCloud(t, nil)
	drv := newDriver(t, &tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: cl.client})
	for name, ch := range map[string]*core.Change{
		"cluster change":  {By: core.WriterCluster},
		"no ids":          {By: core.WriterCloud, Params: map[string]string{tencent.ParamAttribute: "SnatEnable", tencent.ParamValue: "true"}},
		"a bad value":     {By: core.WriterCloud, Params: map[string]string{tencent.ParamLoadBalancerID: lbID, tencent.ParamListenerID: "lbl-1", tencent.ParamPort: "80", tencent.ParamAttribute: "SnatEnable", tencent.ParamValue: "yes"}},
		"other attribute": {By: core.WriterCloud, Params: map[string]string{tencent.ParamLoadBalancerID: lbID, tencent.ParamListenerID: "lbl-1", tencent.ParamPort: "80", tencent.ParamAttribute: "ProxyProtocol", tencent.ParamValue: "true"}},
	} {
		if _, err := drv.ApplyCloud(context.Background(), ch); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if n := len(cl.srv.Calls()); n != 0 {
		t.Errorf("%d calls", n)
	}
	cfgOnly := newDriver(t, nil)
	if _, err := cfgOnly.ApplyCloud(context.Background(), &core.Change{By: core.WriterCloud}); !errors.Is(err, core.ErrUnsupported) {
		t.Errorf("without a CLB client: %v", err)
	}
}

// TestDirectRefusalForgotten: once support grants the allowlist, CapabilityCache.Forget lets
// the declared allowlist count again (the TTL is tested in core).
func TestDirectRefusalForgotten(t *testing.T) {
	s := newDirect(t, nil, nil, tencent.CapL4SNAT)
	var ae *core.AllowlistError
	if _, err := s.reconcile(t); !errors.As(err, &ae) {
		t.Fatalf("first run: %v", err)
	}
	s.cloud.srv.Allow(clbtest.L4SNAT) // the ticket is granted
	if _, err := s.reconcile(t); !errors.As(err, &ae) {
		t.Fatalf("before Forget the remembered refusal stands: %v", err)
	}
	s.cache.Forget(tencent.CapL4SNAT)
	if _, err := s.reconcile(t); err != nil {
		t.Fatalf("after the grant: %v", err)
	}
	if !s.cloud.listener(t, "TCP/80").SnatEnable {
		t.Error("SNAT not on")
	}
}

// TestDirectAuthenticationErrors: credentials the cloud refuses reach the user as
// core.ErrUnauthenticated naming what to check, before anything is written, and the error
// never carries the secret.
func TestDirectAuthenticationErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		id, key string
		skew    time.Duration
		// region, when set, is the client's region (the server serves DefaultRegion only);
		// service, when set, is the service the client's requests are signed for.
		region, service string
		want            string
	}{
		"wrong key":         {id: clbtest.DefaultSecretID, key: "not-the-key-0123456789", want: "check the SecretKey"},
		"unknown id":        {id: "AKIDnobody0000000000", key: clbtest.DefaultSecretKey, want: "check the credential's SecretId"},
		"expired timestamp": {id: clbtest.DefaultSecretID, key: clbtest.DefaultSecretKey, skew: 10 * time.Minute, want: "check this machine's time"},
		"wrong region":      {id: clbtest.DefaultSecretID, key: clbtest.DefaultSecretKey, region: "ap-nowhere-1", want: "check the region"},
		"wrong service":     {id: clbtest.DefaultSecretID, key: clbtest.DefaultSecretKey, service: "cvm", want: "signed for the clb service"},
	} {
		t.Run(name, func(t *testing.T) {
			opts := &clbtest.Options{Allowlist: []clbtest.Capability{clbtest.L4SNAT}, Regions: []string{clbtest.DefaultRegion}}
			if tc.skew != 0 {
				clock := clbtest.NewManualClock(time.Now().Add(tc.skew))
				opts.Now = clock.Now
			}
			cl := startCloud(t, opts)
			cl.seedLB(t, lbID, "TCP/80")
			client := sdkClient(t, cl.srv, tc.id, tc.key)
			if tc.region != "" {
				client = sdkClientIn(t, cl.srv, tc.id, tc.key, tc.region)
			}
			if tc.service != "" {
				client.WithHttpTransport(signedFor(tc.service))
			}
			drv := newDriver(t, fastRetries(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: client}))
			svc := privateService("web", map[string]string{tencent.AnnotationLoadBalancerID: lbID}, "TCP/80")
			_, err := core.NewReconciler(core.NewProvider(drv.Dialect(), drv), &core.ReconcilerOptions{Policy: snatPolicy}).Reconcile(context.Background(), svc, cluster(t, ipvsProfile(tencent.CapL4SNAT), svc))
			if !errors.Is(err, core.ErrUnauthenticated) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v: want core.ErrUnauthenticated saying %q", err, tc.want)
			}
			if core.BlockerOf(err).Kind != "unauthenticated" {
				t.Errorf("kind %s", core.BlockerOf(err).Kind)
			}
			if strings.Contains(err.Error(), tc.key) || strings.Contains(err.Error(), clbtest.DefaultSecretKey) {
				t.Errorf("the error carries a secret: %v", err)
			}
			if w := cl.srv.Writes(); len(w) != 0 {
				t.Errorf("wrote %v", w)
			}
		})
	}
}

// TestDirectOneWritePerCLB: concurrent writes on one CLB wait for each other on the driver's
// side instead of being refused as ResourceInOperating, while writes on another CLB go ahead.
func TestDirectOneWritePerCLB(t *testing.T) {
	cl := startCloud(t, &clbtest.Options{Allowlist: []clbtest.Capability{clbtest.L4SNAT}, TaskDuration: 20 * time.Millisecond})
	cl.seedLB(t, "lb-a", "TCP/80", "TCP/81", "TCP/82")
	cl.seedLB(t, "lb-b", "TCP/90", "TCP/91")
	drv := newDriver(t, fastRetries(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: cl.client}))
	var changes []core.Change
	for _, svc := range []runtime.Object{
		privateService("a", map[string]string{tencent.AnnotationLoadBalancerID: "lb-a"}, "TCP/80", "TCP/81", "TCP/82"),
		privateService("b", map[string]string{tencent.AnnotationLoadBalancerID: "lb-b"}, "TCP/90", "TCP/91"),
	} {
		p, _ := planFor(t, drv, svc, cluster(t, ipvsProfile(tencent.CapL4SNAT), svc), snatPolicy, nil)
		changes = append(changes, p.Changes...)
	}
	if len(changes) != 5 {
		t.Fatalf("planned %d changes, want 5", len(changes))
	}
	cl.srv.ResetCalls()
	errs := make(chan error, len(changes))
	for i := range changes {
		go func() {
			_, err := drv.ApplyCloud(context.Background(), &changes[i])
			errs <- err
		}()
	}
	for range changes {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	var order []string // the CLB of each accepted write, in order
	for _, c := range cl.srv.Calls() {
		if c.ErrorCode == clbtest.CodeResourceInOperating {
			t.Errorf("a write was refused as busy: %+v", c)
		}
		if c.Action == "ModifyListener" && c.ErrorCode == "" {
			order = append(order, c.Param("LoadBalancerId"))
		}
	}
	if len(order) != 5 {
		t.Fatalf("accepted writes on %v, want 5", order)
	}
	// lb-a's three writes take three tasks one after the other; lb-b's first write does not
	// wait for them.
	lastA := 0
	for i, lb := range order {
		if lb == "lb-a" {
			lastA = i
		}
	}
	if slices.Index(order, "lb-b") > lastA {
		t.Errorf("writes on lb-b waited for lb-a's: %v", order)
	}
	for _, l := range []string{"TCP/80", "TCP/81", "TCP/82", "TCP/90", "TCP/91"} {
		if !cl.listener(t, l).SnatEnable {
			t.Errorf("%s: SNAT off", l)
		}
	}
}

// TestDirectOnCall: OnCall hears every request the driver sends, retries included, with the
// cloud's error code when one failed: the same calls clbtest answered.
func TestDirectOnCall(t *testing.T) {
	var mu sync.Mutex
	var heard []string
	s := newDirect(t, &clbtest.Options{Allowlist: []clbtest.Capability{clbtest.L4SNAT}, TaskDuration: time.Millisecond},
		&tencent.DriverOptions{OnCall: func(action, code string) {
			mu.Lock()
			defer mu.Unlock()
			if code != "" {
				action += ":" + code
			}
			heard = append(heard, action)
		}}, tencent.CapL4SNAT)
	s.cloud.srv.InjectFault("ModifyListener", 1, clbtest.ThrottleFault(""))
	if _, err := s.reconcile(t); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := s.cloud.actions(); !slices.Equal(heard, want) {
		t.Errorf("OnCall heard %v\nclbtest answered %v", heard, want)
	}
	if !slices.Contains(heard, "ModifyListener:RequestLimitExceeded") || !slices.Contains(heard, "ModifyListener") {
		t.Errorf("the throttled write and its retry are not both heard: %v", heard)
	}
}
