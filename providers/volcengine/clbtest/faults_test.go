package clbtest_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/volcengine/volcengine-go-sdk/service/clb"
	"github.com/volcengine/volcengine-go-sdk/volcengine"
	"github.com/volcengine/volcengine-go-sdk/volcengine/volcengineerr"

	"github.com/loopguard/loopguard/providers/volcengine/clbtest"
)

func TestFaults(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		reason      string
		fault       clbtest.Fault
		wantCode    string
		wantStatus  int
		wantMessage string
	}{
		"throttling": {
			reason:   "the account flow limit, with the status it is sent with",
			fault:    clbtest.Fault{Code: clbtest.CodeAccountFlowLimitExceeded},
			wantCode: clbtest.CodeAccountFlowLimitExceeded, wantStatus: 429,
		},
		"arbitrary code and message": {
			reason:   "any code a test needs, with the default 400",
			fault:    clbtest.Fault{Code: "OperationDenied.Custom", Message: "scripted"},
			wantCode: "OperationDenied.Custom", wantStatus: 400, wantMessage: "scripted",
		},
		"error with HTTP 200": {
			reason:   "the SDK also fails a 200 whose envelope carries Error.Code",
			fault:    clbtest.Fault{Code: clbtest.CodeInternalError, Status: 200},
			wantCode: clbtest.CodeInternalError, wantStatus: 200,
		},
		"bare 503": {
			reason:   "a status alone gets the gateway's code for it",
			fault:    clbtest.Fault{Status: 503},
			wantCode: clbtest.CodeServiceUnavailableTemp, wantStatus: 503,
		},
		"bare 500": {
			reason:   "500 is InternalError with its documented message",
			fault:    clbtest.Fault{Status: 500},
			wantCode: clbtest.CodeInternalError, wantStatus: 500,
			wantMessage: "Service has some internal Error. Pls Contact With Admin.",
		},
		"not found for an existing LB": {
			reason:   "e.g. the LB is deleted between list and describe",
			fault:    clbtest.Fault{Code: clbtest.CodeLoadBalancerNotFound},
			wantCode: clbtest.CodeLoadBalancerNotFound, wantStatus: 404,
			wantMessage: "The specified LoadBalancer does not exist.",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, nil)
			seed(t, srv)
			c := defaultClient(t, srv)
			srv.InjectFault(tc.fault)
			_, err := c.DescribeLoadBalancerAttributes(&clb.DescribeLoadBalancerAttributesInput{LoadBalancerId: volcengine.String("clb-private")})
			rf := requestFailure(t, err, tc.wantCode, tc.wantStatus)
			if tc.wantMessage != "" && rf.Message() != tc.wantMessage {
				t.Errorf("%s: message %q, want %q", tc.reason, rf.Message(), tc.wantMessage)
			}
			if calls := srv.Calls(); len(calls) != 1 || calls[0].ErrorCode != tc.wantCode || calls[0].StatusCode != tc.wantStatus {
				t.Errorf("%s: call log %+v", tc.reason, calls)
			}
		})
	}
}

// TestFaultNonJSONBody: a proxy's HTML error page is not an API error; the
// SDK reports a decoding failure, which loopguard must not mistake for a
// cloud error code.
func TestFaultNonJSONBody(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	c := defaultClient(t, srv)
	srv.InjectFault(clbtest.Fault{Body: []byte("<html>502 Bad Gateway</html>"), Times: 1})
	_, err := c.DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{})
	if err == nil {
		t.Fatal("no error for an HTML 502")
	}
	var rf volcengineerr.RequestFailure
	if errors.As(err, &rf) {
		t.Fatalf("HTML body decoded as a cloud error %s", rf.Code())
	}
	if calls := srv.Calls(); len(calls) != 1 || calls[0].StatusCode != http.StatusBadGateway {
		t.Errorf("call log %+v", calls)
	}
	if _, err := c.DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{}); err != nil {
		t.Errorf("Times: 1 fault applied twice: %v", err)
	}
}

func TestFaultScoping(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	seed(t, srv)
	c := defaultClient(t, srv)

	remove := srv.InjectFault(clbtest.Fault{Action: "DescribeListeners", Code: clbtest.CodeAccountFlowLimitExceeded, Times: 2})
	if _, err := c.DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{}); err != nil {
		t.Fatalf("a DescribeListeners fault hit DescribeLoadBalancers: %v", err)
	}
	for range 2 {
		_, err := c.DescribeListeners(&clb.DescribeListenersInput{})
		requestFailure(t, err, clbtest.CodeAccountFlowLimitExceeded, 429)
	}
	if _, err := c.DescribeListeners(&clb.DescribeListenersInput{}); err != nil {
		t.Fatalf("fault outlived Times: %v", err)
	}
	remove() // removing a used-up fault is harmless

	remove = srv.InjectFault(clbtest.Fault{Status: 500})
	_, err := c.DescribeServerGroups(&clb.DescribeServerGroupsInput{})
	requestFailure(t, err, clbtest.CodeInternalError, 500)
	remove()
	if _, err := c.DescribeServerGroups(&clb.DescribeServerGroupsInput{}); err != nil {
		t.Fatalf("removed fault still applies: %v", err)
	}

	srv.InjectFault(clbtest.Fault{Status: 503})
	srv.InjectFault(clbtest.Fault{Status: 504})
	_, err = c.DescribeServerGroups(&clb.DescribeServerGroupsInput{})
	requestFailure(t, err, clbtest.CodeServiceUnavailableTemp, 503) // first injected wins
	srv.ClearFaults()
	if _, err := c.DescribeServerGroups(&clb.DescribeServerGroupsInput{}); err != nil {
		t.Fatalf("ClearFaults left a fault: %v", err)
	}

	// Authentication comes first: a fault does not mask a bad signature.
	srv.InjectFault(clbtest.Fault{Status: 503})
	_, err = newClient(t, srv, testRegion, testAK, "wrong").DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{})
	requestFailure(t, err, clbtest.CodeSignatureDoesNotMatch, 401)
}

func TestFaultLatency(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	seed(t, srv)
	c := defaultClient(t, srv)

	const delay = 150 * time.Millisecond
	srv.InjectFault(clbtest.Fault{Action: "DescribeLoadBalancers", Delay: delay, Times: 1})
	start := time.Now()
	out, err := c.DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{})
	if err != nil || len(out.LoadBalancers) != 2 {
		t.Fatalf("a latency-only fault must still answer: %+v, %v", out, err)
	}
	if took := time.Since(start); took < delay {
		t.Fatalf("call took %v, want at least %v", took, delay)
	}

	// A client deadline ends the wait; the server does not hold the call.
	srv.InjectFault(clbtest.Fault{Delay: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = c.DescribeLoadBalancersWithContext(ctx, &clb.DescribeLoadBalancersInput{})
	if err == nil {
		t.Fatal("no error past the deadline")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("deadline ignored: %v", took)
	}
	srv.ClearFaults()

	// Close ends pending delays instead of waiting them out.
	srv.InjectFault(clbtest.Fault{Delay: time.Minute})
	done := make(chan struct{})
	go func() {
		_, _ = c.DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{})
		close(done)
	}()
	time.Sleep(50 * time.Millisecond)
	_ = srv.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the delayed call")
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{}
	srv := newServer(t, &clbtest.Options{
		Now:        clock.Now,
		RateLimits: map[string]clbtest.RateLimit{"DescribeLoadBalancerAttributes": {PerSecond: 1, Burst: 2}},
	})
	seed(t, srv)
	c := defaultClient(t, srv)
	describe := func() error {
		_, err := c.DescribeLoadBalancerAttributes(&clb.DescribeLoadBalancerAttributesInput{LoadBalancerId: volcengine.String("clb-private")})
		return err
	}
	for i := range 2 {
		if err := describe(); err != nil {
			t.Fatalf("call %d within the burst: %v", i+1, err)
		}
	}
	rf := requestFailure(t, describe(), clbtest.CodeAccountFlowLimitExceeded, 429)
	if rf.Message() == "" {
		t.Error("throttling error has no message")
	}
	if _, err := c.DescribeListeners(&clb.DescribeListenersInput{}); err != nil {
		t.Fatalf("the limit is per action, yet DescribeListeners was refused: %v", err)
	}

	clock.Advance(time.Second) // one token back on the server's clock
	if err := describe(); err != nil {
		t.Fatalf("after refill: %v", err)
	}
	requestFailure(t, describe(), clbtest.CodeAccountFlowLimitExceeded, 429)

	srv.SetRateLimit("DescribeLoadBalancerAttributes", clbtest.RateLimit{})
	for range 5 {
		if err := describe(); err != nil {
			t.Fatalf("limit removed, still refused: %v", err)
		}
	}

	srv.SetRateLimit("DescribeListeners", clbtest.RateLimit{PerSecond: 0.001, Code: clbtest.CodeFlowLimitExceeded})
	if _, err := c.DescribeListeners(&clb.DescribeListenersInput{}); err != nil {
		t.Fatal(err)
	}
	_, err := c.DescribeListeners(&clb.DescribeListenersInput{})
	requestFailure(t, err, clbtest.CodeFlowLimitExceeded, 429)

	var throttled int
	for _, call := range srv.Calls() {
		if call.ErrorCode == clbtest.CodeAccountFlowLimitExceeded || call.ErrorCode == clbtest.CodeFlowLimitExceeded {
			throttled++
		}
	}
	if throttled != 3 {
		t.Errorf("call log holds %d throttled calls, want 3", throttled)
	}
}

func TestHTTPStatus(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]int{
		clbtest.CodeInvalidAccessKey:         401,
		clbtest.CodeSignatureDoesNotMatch:    401,
		clbtest.CodeInvalidTimestamp:         400,
		clbtest.CodeAccountFlowLimitExceeded: 429,
		clbtest.CodeLoadBalancerNotFound:     404,
		"Something.Else":                     400,
	} {
		if got := clbtest.HTTPStatus(code); got != want {
			t.Errorf("HTTPStatus(%s) = %d, want %d", code, got, want)
		}
	}
}
