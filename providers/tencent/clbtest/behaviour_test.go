package clbtest_test

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"

	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

func enableSNAT(r *clb.ModifyListenerRequest) { r.SnatEnable = common.BoolPtr(true) }

// TestTaskLifecycle follows one write through DescribeTaskStatus with a ManualClock: the
// change is invisible and the LB refuses other writes until the task completes
// (DOMAIN.md §3.5).
func TestTaskLifecycle(t *testing.T) {
	clock := clbtest.NewManualClock(time.Now())
	srv := start(t, &clbtest.Options{Now: clock.Now, TaskDuration: 2 * time.Second, Allowlist: []clbtest.Capability{clbtest.L4SNAT}})
	seedLB(t, srv, "lb-a")
	seedLB(t, srv, "lb-b")
	c := client(t, srv)

	task, err := modify(t, c, "lb-a", "lb-a-tcp", enableSNAT)
	if err != nil {
		t.Fatal(err)
	}
	if st := taskStatus(t, c, task); *st.Status != 2 {
		t.Fatalf("status right after the write = %d, want 2 (running)", *st.Status)
	}
	if snatOn(describeListener(t, c, "lb-a", "lb-a-tcp")) {
		t.Error("change visible while the task runs")
	}
	_, err = modify(t, c, "lb-a", "lb-a-http", func(r *clb.ModifyListenerRequest) { r.ListenerName = common.StringPtr("x") })
	if got := codeOf(t, err); got != clbtest.CodeResourceInOperating {
		t.Errorf("second write on the busy LB: code %q, want %q", got, clbtest.CodeResourceInOperating)
	}
	if _, err := modify(t, c, "lb-b", "lb-b-tcp", enableSNAT); err != nil {
		t.Errorf("a write on another LB must not be blocked: %v", err)
	}

	clock.Advance(2*time.Second - time.Millisecond)
	if st := taskStatus(t, c, task); *st.Status != 2 {
		t.Errorf("status just before due = %d, want 2", *st.Status)
	}
	clock.Advance(time.Millisecond)
	st := taskStatus(t, c, task)
	if *st.Status != 0 || *st.Message != "" || common.StringValues(st.LoadBalancerIds)[0] != "lb-a" {
		t.Errorf("status when due = %d %q %v, want 0 for lb-a", *st.Status, *st.Message, common.StringValues(st.LoadBalancerIds))
	}
	if !snatOn(describeListener(t, c, "lb-a", "lb-a-tcp")) {
		t.Error("change not visible after the task completed")
	}
	if _, err := modify(t, c, "lb-a", "lb-a-http", func(r *clb.ModifyListenerRequest) { r.ListenerName = common.StringPtr("x") }); err != nil {
		t.Errorf("write after the task completed: %v", err)
	}

	got, ok := srv.Task(task)
	if !ok || got.Status != clbtest.TaskSucceeded || got.Action != "ModifyListener" || !got.Due.Equal(got.Started.Add(2*time.Second)) {
		t.Errorf("Task(%s) = %+v, %v", task, got, ok)
	}

	t.Run("unknown task", func(t *testing.T) {
		req := clb.NewDescribeTaskStatusRequest()
		req.TaskId = common.StringPtr("00000000-0000-4000-8000-000000000000")
		_, err := c.DescribeTaskStatus(req)
		if got := codeOf(t, err); got != clbtest.CodeInvalidParameter {
			t.Errorf("code = %q, want %q", got, clbtest.CodeInvalidParameter)
		}
	})
	t.Run("a read is not a task", func(t *testing.T) {
		resp, err := c.DescribeLoadBalancers(clb.NewDescribeLoadBalancersRequest())
		if err != nil {
			t.Fatal(err)
		}
		req := clb.NewDescribeTaskStatusRequest()
		req.TaskId = resp.Response.RequestId
		if _, err := c.DescribeTaskStatus(req); codeOf(t, err) != clbtest.CodeInvalidParameter {
			t.Errorf("DescribeTaskStatus(read RequestId) = %v, want InvalidParameter", err)
		}
	})
}

// TestSetTaskDuration shows tasks with a real clock: a provider's polling loop waits a
// few milliseconds, not seconds.
func TestSetTaskDuration(t *testing.T) {
	srv := start(t, &clbtest.Options{Allowlist: []clbtest.Capability{clbtest.L4SNAT}})
	seedLB(t, srv, "lb-a")
	srv.SetTaskDuration(30 * time.Millisecond)
	c := client(t, srv)
	began := time.Now()
	task, err := modify(t, c, "lb-a", "lb-a-tcp", enableSNAT)
	if err != nil {
		t.Fatal(err)
	}
	if st := waitTask(t, c, task); *st.Status != 0 {
		t.Fatalf("status %d", *st.Status)
	}
	if elapsed := time.Since(began); elapsed < 30*time.Millisecond {
		t.Errorf("task finished after %v, want at least 30ms", elapsed)
	}
}

// TestTaskDurationSpread: with TaskDurationMax each task runs a drawn time within the range,
// and the draws differ; SetTaskDuration goes back to one fixed time.
func TestTaskDurationSpread(t *testing.T) {
	clock := clbtest.NewManualClock(time.Now())
	srv := start(t, &clbtest.Options{Now: clock.Now, TaskDuration: time.Second, TaskDurationMax: 3 * time.Second,
		RateLimit: clbtest.Unlimited, Allowlist: []clbtest.Capability{clbtest.L4SNAT}})
	c := client(t, srv)
	seen := map[time.Duration]bool{}
	for i := range 20 {
		lb := fmt.Sprintf("lb-%02d", i)
		seedLB(t, srv, lb)
		id, err := modify(t, c, lb, lb+"-tcp", enableSNAT)
		if err != nil {
			t.Fatal(err)
		}
		task, _ := srv.Task(id)
		d := task.Due.Sub(task.Started)
		if d < time.Second || d > 3*time.Second {
			t.Fatalf("task %d runs %v, want within [1s, 3s]", i, d)
		}
		seen[d] = true
	}
	if len(seen) < 2 {
		t.Errorf("20 tasks all ran %v: no spread", seen)
	}
	srv.SetTaskDuration(2 * time.Second)
	seedLB(t, srv, "lb-fixed")
	id, err := modify(t, c, "lb-fixed", "lb-fixed-tcp", enableSNAT)
	if err != nil {
		t.Fatal(err)
	}
	if task, _ := srv.Task(id); task.Due.Sub(task.Started) != 2*time.Second {
		t.Errorf("after SetTaskDuration a task runs %v, want 2s", task.Due.Sub(task.Started))
	}
}

func TestRateLimit(t *testing.T) {
	describe := func(c *clb.Client) error {
		_, err := c.DescribeLoadBalancers(clb.NewDescribeLoadBalancersRequest())
		return err
	}
	listeners := func(c *clb.Client) error {
		req := clb.NewDescribeListenersRequest()
		req.LoadBalancerId = common.StringPtr("lb-a")
		_, err := c.DescribeListeners(req)
		return err
	}

	t.Run("default 20 per second per action", func(t *testing.T) {
		clock := clbtest.NewManualClock(time.Now())
		srv := start(t, &clbtest.Options{Now: clock.Now})
		seedLB(t, srv, "lb-a")
		c := client(t, srv)
		for i := range clbtest.DefaultRateLimit {
			if err := describe(c); err != nil {
				t.Fatalf("call %d: %v", i+1, err)
			}
		}
		err := describe(c)
		if got := codeOf(t, err); got != clbtest.CodeRequestLimitExceeded {
			t.Fatalf("call 21: code %q, want %q", got, clbtest.CodeRequestLimitExceeded)
		}
		if !strings.Contains(messageOf(err), "`21` in a second") || !strings.Contains(messageOf(err), "frequency limit `20`") {
			t.Errorf("message %q", messageOf(err))
		}
		if err := listeners(c); err != nil {
			t.Errorf("another action has its own budget: %v", err)
		}
		clock.Advance(time.Second)
		if err := describe(c); err != nil {
			t.Errorf("next second: %v", err)
		}
	})

	t.Run("per action override and unlimited", func(t *testing.T) {
		clock := clbtest.NewManualClock(time.Now())
		srv := start(t, &clbtest.Options{Now: clock.Now, RateLimit: clbtest.Unlimited, ActionRateLimits: map[string]int{"DescribeListeners": 2}})
		seedLB(t, srv, "lb-a")
		c := client(t, srv)
		for i := range 50 {
			if err := describe(c); err != nil {
				t.Fatalf("unlimited action, call %d: %v", i+1, err)
			}
		}
		for i := range 2 {
			if err := listeners(c); err != nil {
				t.Fatalf("call %d: %v", i+1, err)
			}
		}
		if got := codeOf(t, listeners(c)); got != clbtest.CodeRequestLimitExceeded {
			t.Errorf("third call: code %q", got)
		}
	})

	// The SDK retries exactly RequestLimitExceeded, and only when asked to
	// (DOMAIN.md §3.5); the sub-codes surface to the caller.
	t.Run("SDK retry against scripted throttling", func(t *testing.T) {
		srv := start(t, nil)
		cpf := profileFor(srv)
		cpf.RateLimitExceededMaxRetries = 2
		cpf.RateLimitExceededRetryDuration = profile.ConstantDurationFunc(time.Millisecond)
		c := clientWith(t, cpf, common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey), clbtest.DefaultRegion)

		srv.InjectFault("DescribeLoadBalancers", 2, clbtest.ThrottleFault(""))
		if err := describe(c); err != nil {
			t.Errorf("with 2 retries, 2 throttled answers must be absorbed: %v", err)
		}
		if n := len(srv.Calls()); n != 3 {
			t.Errorf("calls = %d, want 3", n)
		}

		srv.ResetCalls()
		srv.InjectFault("DescribeLoadBalancers", 1, clbtest.ThrottleFault(clbtest.CodeUinLimitExceeded))
		if got := codeOf(t, describe(c)); got != clbtest.CodeUinLimitExceeded {
			t.Errorf("code %q, want %q", got, clbtest.CodeUinLimitExceeded)
		}
		if n := len(srv.Calls()); n != 1 {
			t.Errorf("the SDK retried a sub-code: %d calls", n)
		}
	})
}

func TestAllowlist(t *testing.T) {
	type want struct {
		code       string // of the write
		taskStatus int64  // when the write was accepted
		snat       bool
		keepalive  int64
	}
	cases := map[string]struct {
		allow    []clbtest.Capability
		denial   clbtest.Denial
		listener string
		mutate   func(*clb.ModifyListenerRequest)
		want     want
	}{
		"L4 SNAT allowlisted": {
			allow: []clbtest.Capability{clbtest.L4SNAT}, listener: "lb-a-tcp", mutate: enableSNAT,
			want: want{snat: true},
		},
		"L4 SNAT without allowlist: default denial": {
			allow: []clbtest.Capability{clbtest.L7SNAT, clbtest.KeepAlive}, listener: "lb-a-tcp", mutate: enableSNAT,
			want: want{code: clbtest.DefaultDenialCode},
		},
		"L7 SNAT needs its own allowlist": {
			allow: []clbtest.Capability{clbtest.L4SNAT}, listener: "lb-a-http", mutate: enableSNAT,
			want: want{code: clbtest.DefaultDenialCode},
		},
		"L7 SNAT allowlisted": {
			allow: []clbtest.Capability{clbtest.L7SNAT}, listener: "lb-a-http", mutate: enableSNAT,
			want: want{snat: true},
		},
		"keepalive without allowlist": {
			allow: []clbtest.Capability{clbtest.L7SNAT}, listener: "lb-a-http",
			mutate: func(r *clb.ModifyListenerRequest) { r.KeepaliveEnable = common.Int64Ptr(1) },
			want:   want{code: clbtest.DefaultDenialCode},
		},
		"turning SNAT off needs nothing": {
			listener: "lb-a-snat", mutate: func(r *clb.ModifyListenerRequest) { r.SnatEnable = common.BoolPtr(false) },
			want: want{snat: false},
		},
		"keepalive 0 needs nothing": {
			listener: "lb-a-http", mutate: func(r *clb.ModifyListenerRequest) { r.KeepaliveEnable = common.Int64Ptr(0) },
			want: want{},
		},
		"denial as another code": {
			denial: clbtest.Denial{Code: clbtest.CodeUnsupportedOperation, Message: "not in whitelist"}, listener: "lb-a-tcp", mutate: enableSNAT,
			want: want{code: clbtest.CodeUnsupportedOperation},
		},
		"denial as a failed task": {
			denial: clbtest.Denial{Mode: clbtest.DenyInTask}, listener: "lb-a-tcp", mutate: enableSNAT,
			want: want{taskStatus: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := start(t, &clbtest.Options{Allowlist: tc.allow, Denial: tc.denial})
			seedLB(t, srv, "lb-a")
			// Seeding bypasses the allowlist: an account can hold SNAT from before.
			if _, err := srv.AddListener(clbtest.Listener{LoadBalancerID: "lb-a", ID: "lb-a-snat", Protocol: clbtest.ProtocolUDP, Port: 53, SnatEnable: true}); err != nil {
				t.Fatal(err)
			}
			c := client(t, srv)
			task, err := modify(t, c, "lb-a", tc.listener, tc.mutate)
			if got := codeOf(t, err); got != tc.want.code {
				t.Fatalf("code = %q (%v), want %q", got, err, tc.want.code)
			}
			if err == nil {
				st := waitTask(t, c, task)
				if *st.Status != tc.want.taskStatus {
					t.Fatalf("task status %d %q, want %d", *st.Status, *st.Message, tc.want.taskStatus)
				}
				if *st.Status == 1 && !strings.Contains(*st.Message, "白名单") {
					t.Errorf("failed-task message %q does not name the whitelist", *st.Message)
				}
			} else if tc.denial.Message == "" && (!strings.Contains(messageOf(err), "whitelist") || !strings.Contains(messageOf(err), "白名单")) {
				t.Errorf("denial message %q must mention whitelist and 白名单", messageOf(err))
			}
			l := describeListener(t, c, "lb-a", tc.listener)
			if snatOn(l) != tc.want.snat || *l.KeepaliveEnable != tc.want.keepalive {
				t.Errorf("listener after the write: SNAT %v keepalive %d, want %v %d", snatOn(l), *l.KeepaliveEnable, tc.want.snat, tc.want.keepalive)
			}
		})
	}

	t.Run("granted and revoked at run time", func(t *testing.T) {
		srv := start(t, nil)
		seedLB(t, srv, "lb-a")
		c := client(t, srv)
		if _, err := modify(t, c, "lb-a", "lb-a-tcp", enableSNAT); codeOf(t, err) != clbtest.DefaultDenialCode {
			t.Fatalf("before the ticket: %v", err)
		}
		srv.Allow(clbtest.L4SNAT)
		if _, err := modify(t, c, "lb-a", "lb-a-tcp", enableSNAT); err != nil {
			t.Fatalf("after Allow: %v", err)
		}
		srv.Revoke(clbtest.L4SNAT)
		if _, err := modify(t, c, "lb-a", "lb-a-tcp", enableSNAT); codeOf(t, err) != clbtest.DefaultDenialCode {
			t.Errorf("after Revoke: %v", err)
		}
		if !snatOn(describeListener(t, c, "lb-a", "lb-a-tcp")) {
			t.Error("Revoke must not undo what is configured")
		}
	})
}

func TestFaults(t *testing.T) {
	describe := func(c *clb.Client) error {
		_, err := c.DescribeLoadBalancers(clb.NewDescribeLoadBalancersRequest())
		return err
	}

	t.Run("error code for the next N calls", func(t *testing.T) {
		srv := start(t, nil)
		c := client(t, srv)
		srv.InjectFault("DescribeLoadBalancers", 2, clbtest.ErrorFault(clbtest.CodeInternalError, "boom"))
		for i, want := range []string{clbtest.CodeInternalError, clbtest.CodeInternalError, ""} {
			err := describe(c)
			if got := codeOf(t, err); got != want {
				t.Errorf("call %d: code %q, want %q", i+1, got, want)
			}
			if want != "" && messageOf(err) != "boom" {
				t.Errorf("call %d: message %q", i+1, messageOf(err))
			}
		}
	})

	t.Run("HTTP 5xx", func(t *testing.T) {
		for name, tc := range map[string]struct {
			fault clbtest.Fault
			want  string
		}{
			"default JSON body": {fault: clbtest.HTTPFault(503), want: "ClientError.HttpStatusCodeError"},
			// SDK v1.3.156 parses the body before it checks the status.
			"gateway HTML page": {fault: clbtest.Fault{HTTPStatus: 502, HTTPBody: "<html>502 Bad Gateway</html>"}, want: "ClientError.ParseJsonError"},
		} {
			t.Run(name, func(t *testing.T) {
				srv := start(t, nil)
				c := client(t, srv)
				srv.InjectFault("DescribeLoadBalancers", 1, tc.fault)
				if got := codeOf(t, describe(c)); got != tc.want {
					t.Errorf("code %q, want %q", got, tc.want)
				}
				if calls := srv.Calls(); calls[0].HTTPStatus != tc.fault.HTTPStatus {
					t.Errorf("call log HTTPStatus = %d", calls[0].HTTPStatus)
				}
				if err := describe(c); err != nil {
					t.Errorf("after the fault: %v", err)
				}
			})
		}
	})

	t.Run("latency", func(t *testing.T) {
		srv := start(t, nil)
		c := client(t, srv)
		srv.InjectFault("DescribeLoadBalancers", 1, clbtest.DelayFault(40*time.Millisecond))
		began := time.Now()
		if err := describe(c); err != nil {
			t.Fatal(err)
		}
		if elapsed := time.Since(began); elapsed < 40*time.Millisecond {
			t.Errorf("answered after %v, want at least 40ms", elapsed)
		}
	})

	t.Run("failed task", func(t *testing.T) {
		srv := start(t, &clbtest.Options{Allowlist: []clbtest.Capability{clbtest.L4SNAT}})
		seedLB(t, srv, "lb-a")
		c := client(t, srv)
		srv.InjectFault("ModifyListener", 1, clbtest.FailedTaskFault("backend busy"))
		task, err := modify(t, c, "lb-a", "lb-a-tcp", enableSNAT)
		if err != nil {
			t.Fatal(err)
		}
		if st := waitTask(t, c, task); *st.Status != 1 || *st.Message != "backend busy" {
			t.Errorf("task = %d %q, want 1 \"backend busy\"", *st.Status, *st.Message)
		}
		if snatOn(describeListener(t, c, "lb-a", "lb-a-tcp")) {
			t.Error("a failed task applied its change")
		}
		task, err = modify(t, c, "lb-a", "lb-a-tcp", enableSNAT)
		if err != nil {
			t.Fatal(err)
		}
		if st := waitTask(t, c, task); *st.Status != 0 || !snatOn(describeListener(t, c, "lb-a", "lb-a-tcp")) {
			t.Errorf("retry after the failed task: status %d", *st.Status)
		}
	})

	t.Run("a dropped answer after an accepted write", func(t *testing.T) {
		srv := start(t, &clbtest.Options{Allowlist: []clbtest.Capability{clbtest.L4SNAT}})
		seedLB(t, srv, "lb-a")
		c := client(t, srv)
		srv.InjectFault("ModifyListener", 1, clbtest.DropFault())
		_, err := modify(t, c, "lb-a", "lb-a-tcp", enableSNAT)
		if got := codeOf(t, err); got != "ClientError.NetworkError" {
			t.Fatalf("dropped write: %v (code %q), want ClientError.NetworkError", err, got)
		}
		if !snatOn(describeListener(t, c, "lb-a", "lb-a-tcp")) {
			t.Error("the write whose answer was dropped was not applied")
		}
		writes := srv.Writes()
		if len(writes) != 1 || !writes[0].Dropped || writes[0].Action != "ModifyListener" {
			t.Errorf("writes %+v, want the one dropped ModifyListener", writes)
		}
		// The next call is answered: the fault was used up.
		if _, err := modify(t, c, "lb-a", "lb-a-tcp", enableSNAT); err != nil {
			t.Errorf("after the drop: %v", err)
		}
	})

	t.Run("any action, until cleared, after the signature", func(t *testing.T) {
		srv := start(t, nil)
		seedLB(t, srv, "lb-a")
		c := client(t, srv)
		srv.InjectFault(clbtest.AnyAction, 0, clbtest.ErrorFault(clbtest.CodeFailedOperation, ""))
		srv.InjectFault("DescribeListeners", 1, clbtest.ErrorFault(clbtest.CodeResourceInUse, ""))

		bad := clientWith(t, profileFor(srv), common.NewCredential(clbtest.DefaultSecretID, "wrong"), clbtest.DefaultRegion)
		if got := codeOf(t, describe(bad)); got != clbtest.CodeSignatureFailure {
			t.Errorf("unsigned call got %q: faults must apply only to accepted calls", got)
		}
		req := clb.NewDescribeListenersRequest()
		req.LoadBalancerId = common.StringPtr("lb-a")
		for i, want := range []string{clbtest.CodeResourceInUse, clbtest.CodeFailedOperation, clbtest.CodeFailedOperation} {
			_, err := c.DescribeListeners(req)
			if got := codeOf(t, err); got != want {
				t.Errorf("DescribeListeners %d: %q, want %q", i+1, got, want)
			}
		}
		if got := codeOf(t, describe(c)); got != clbtest.CodeFailedOperation {
			t.Errorf("DescribeLoadBalancers: %q", got)
		}
		srv.ClearFaults()
		if err := describe(c); err != nil {
			t.Errorf("after ClearFaults: %v", err)
		}
	})
}

// ensureSNAT is the shape of an idempotent provider step: read, write only if needed.
func ensureSNAT(t *testing.T, c *clb.Client, lbID, listenerID string) {
	t.Helper()
	if snatOn(describeListener(t, c, lbID, listenerID)) {
		return
	}
	task, err := modify(t, c, lbID, listenerID, enableSNAT)
	if err != nil {
		t.Fatal(err)
	}
	if st := waitTask(t, c, task); *st.Status != 0 {
		t.Fatalf("task %d", *st.Status)
	}
}

func TestCallLog(t *testing.T) {
	clock := clbtest.NewManualClock(time.Now())
	srv := start(t, &clbtest.Options{Now: clock.Now, Allowlist: []clbtest.Capability{clbtest.L4SNAT}})
	seedLB(t, srv, "lb-a")
	c := client(t, srv)

	ensureSNAT(t, c, "lb-a", "lb-a-tcp")
	ensureSNAT(t, c, "lb-a", "lb-a-tcp")

	writes := srv.Writes()
	if len(writes) != 1 {
		t.Fatalf("writes = %+v, want exactly one: the second run must not write", writes)
	}
	w := writes[0]
	if w.Action != "ModifyListener" || w.Region != clbtest.DefaultRegion || w.SecretID != clbtest.DefaultSecretID ||
		w.Param("LoadBalancerId") != "lb-a" || w.Param("ListenerId") != "lb-a-tcp" || w.Param("SnatEnable") != "true" ||
		!w.Time.Equal(clock.Now()) || w.RequestID == "" {
		t.Errorf("write = %+v", w)
	}
	var actions []string
	for _, call := range srv.Calls() {
		actions = append(actions, call.Action)
	}
	if got := strings.Join(actions, ","); got != "DescribeListeners,ModifyListener,DescribeTaskStatus,DescribeListeners" {
		t.Errorf("actions = %s", got)
	}
	if calls := srv.Calls(); calls[0].Param("ListenerIds.0") != "lb-a-tcp" {
		t.Errorf("list parameters are flattened like the SDK's GET form: %v", calls[0].Params)
	}

	t.Run("certificate material is redacted", func(t *testing.T) {
		if _, err := srv.AddListener(clbtest.Listener{LoadBalancerID: "lb-a", ID: "lb-a-https", Protocol: clbtest.ProtocolHTTPS, Port: 443}); err != nil {
			t.Fatal(err)
		}
		srv.ResetCalls()
		_, err := modify(t, c, "lb-a", "lb-a-https", func(r *clb.ModifyListenerRequest) {
			r.Certificate = &clb.CertificateInput{SSLMode: common.StringPtr("UNIDIRECTIONAL"), CertKey: common.StringPtr("-----BEGIN PRIVATE KEY-----")}
		})
		if err != nil {
			t.Fatal(err)
		}
		calls := srv.Calls()
		if len(calls) != 1 || calls[0].Param("Certificate.CertKey") != "REDACTED" || calls[0].Param("Certificate.SSLMode") != "REDACTED" {
			t.Errorf("calls = %+v", calls)
		}
	})
}

func TestSeeding(t *testing.T) {
	srv := clbtest.New(nil) // no listener needed to seed and read state
	if _, err := srv.AddLoadBalancer(clbtest.LoadBalancer{ID: "lb-a"}); err == nil {
		t.Error("a load balancer without Type must be refused")
	}
	if _, err := srv.AddLoadBalancer(clbtest.LoadBalancer{ID: "lb-a", Type: clbtest.LoadBalancerOpen}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.AddLoadBalancer(clbtest.LoadBalancer{ID: "lb-a", Type: clbtest.LoadBalancerOpen}); !errors.Is(err, clbtest.ErrConflict) {
		t.Errorf("duplicate ID: %v, want ErrConflict", err)
	}
	if _, err := srv.AddListener(clbtest.Listener{LoadBalancerID: "lb-x", Protocol: "TCP", Port: 80}); !errors.Is(err, clbtest.ErrNotFound) {
		t.Errorf("unknown LB: %v, want ErrNotFound", err)
	}
	l, err := srv.AddListener(clbtest.Listener{LoadBalancerID: "lb-a", Protocol: "TCP", Port: 80, AttrFlags: []string{"SnatEnable"}})
	if err != nil {
		t.Fatal(err)
	}
	if !l.SnatEnable || len(l.AttrFlags) != 0 || l.HealthCheck == nil || !strings.HasPrefix(l.ID, "lbl-") {
		t.Errorf("seeded listener = %+v", l)
	}
	if _, err := srv.AddListener(clbtest.Listener{LoadBalancerID: "lb-a", Protocol: "HTTPS", Port: 80}); !errors.Is(err, clbtest.ErrConflict) {
		t.Errorf("port taken: %v, want ErrConflict", err)
	}
	if _, err := srv.AddListener(clbtest.Listener{LoadBalancerID: "lb-a", Protocol: "TCP", Port: 81, KeepaliveEnable: 1}); err == nil {
		t.Error("KeepaliveEnable on TCP must be refused")
	}
	if err := srv.UpdateListener(l.ID, func(l *clbtest.Listener) { l.SnatEnable = false; l.ID = "hijack" }); err != nil {
		t.Fatal(err)
	}
	got, ok := srv.Listener(l.ID)
	if !ok || got.SnatEnable {
		t.Errorf("after UpdateListener: %+v %v", got, ok)
	}
	// Snapshots are copies.
	snap := srv.Snapshot()
	snap.Listeners[0].HealthCheck.SourceIPType = 1
	if again, _ := srv.Listener(l.ID); again.HealthCheck.SourceIPType != 0 {
		t.Error("mutating a snapshot changed the server")
	}
	if srv.Endpoint() != "" || srv.Close() != nil {
		t.Error("a handler-only server has no endpoint and closes as a no-op")
	}
}

// TestMountedHandler: New gives a plain http.Handler users can serve their own way.
func TestMountedHandler(t *testing.T) {
	srv := clbtest.New(nil)
	seedLB(t, srv, "lb-a")
	ts := httptest.NewServer(srv)
	defer ts.Close()
	cpf := profile.NewClientProfile()
	cpf.HttpProfile.Endpoint = strings.TrimPrefix(ts.URL, "http://")
	cpf.HttpProfile.Scheme = "HTTP"
	c := clientWith(t, cpf, common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey), clbtest.DefaultRegion)
	if l := describeListener(t, c, "lb-a", "lb-a-tcp"); *l.Port != 80 {
		t.Errorf("listener = %+v", l)
	}
}
