package clbtest_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/volcengine/volcengine-go-sdk/service/clb"
	"github.com/volcengine/volcengine-go-sdk/volcengine"
	"github.com/volcengine/volcengine-go-sdk/volcengine/credentials"
	"github.com/volcengine/volcengine-go-sdk/volcengine/session"

	"github.com/loopguard/loopguard/providers/volcengine/clbtest"
)

func TestAddLoadBalancerValidation(t *testing.T) {
	t.Parallel()
	ok := func() clbtest.LoadBalancer {
		return clbtest.LoadBalancer{
			ID:           "clb-a",
			Type:         clbtest.TypePrivate,
			ServerGroups: []clbtest.ServerGroup{{ID: "rsp-a"}},
			Listeners:    []clbtest.Listener{{ID: "lsn-a", Protocol: "TCP", Port: 80, ServerGroupID: "rsp-a"}},
		}
	}
	cases := map[string]struct {
		reason string
		mutate func(*clbtest.LoadBalancer)
		want   error
	}{
		"valid":               {reason: "the baseline is accepted", mutate: func(*clbtest.LoadBalancer) {}},
		"type in upper case":  {reason: "the API returns lower-case public/private", mutate: func(lb *clbtest.LoadBalancer) { lb.Type = "PRIVATE" }, want: clbtest.ErrInvalid},
		"no type":             {reason: "every CLB is public or private", mutate: func(lb *clbtest.LoadBalancer) { lb.Type = "" }, want: clbtest.ErrInvalid},
		"bad ENI address":     {reason: "addresses must parse", mutate: func(lb *clbtest.LoadBalancer) { lb.EniAddress = "10.0.0.300" }, want: clbtest.ErrInvalid},
		"bad proxy protocol":  {reason: "only off/standard exist", mutate: func(lb *clbtest.LoadBalancer) { lb.Listeners[0].ProxyProtocolType = "v2" }, want: clbtest.ErrInvalid},
		"bad protocol":        {reason: "CLB listeners are TCP/UDP/HTTP/HTTPS", mutate: func(lb *clbtest.LoadBalancer) { lb.Listeners[0].Protocol = "tcp" }, want: clbtest.ErrInvalid},
		"port out of range":   {reason: "ports are 0-65535", mutate: func(lb *clbtest.LoadBalancer) { lb.Listeners[0].Port = 70000 }, want: clbtest.ErrInvalid},
		"foreign group":       {reason: "a listener forwards to a group of its own LB", mutate: func(lb *clbtest.LoadBalancer) { lb.Listeners[0].ServerGroupID = "rsp-other" }, want: clbtest.ErrInvalid},
		"duplicate LB":        {reason: "IDs are unique", mutate: func(lb *clbtest.LoadBalancer) { lb.ID = "clb-existing" }, want: clbtest.ErrDuplicateID},
		"listener ID reused":  {reason: "listener IDs are unique across LBs", mutate: func(lb *clbtest.LoadBalancer) { lb.Listeners[0].ID = "lsn-existing" }, want: clbtest.ErrDuplicateID},
		"ID shared in one LB": {reason: "a group and a listener cannot share an ID", mutate: func(lb *clbtest.LoadBalancer) { lb.Listeners[0].ID = "rsp-a" }, want: clbtest.ErrDuplicateID},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, nil)
			if _, err := srv.AddLoadBalancer(clbtest.LoadBalancer{ID: "clb-existing", Type: clbtest.TypePublic, Listeners: []clbtest.Listener{{ID: "lsn-existing", Protocol: "TCP", Port: 1}}}); err != nil {
				t.Fatal(err)
			}
			lb := ok()
			tc.mutate(&lb)
			_, err := srv.AddLoadBalancer(lb)
			if !errors.Is(err, tc.want) {
				t.Fatalf("%s: err = %v, want %v", tc.reason, err, tc.want)
			}
			if tc.want != nil && len(srv.Snapshot()) != 1 {
				t.Errorf("%s: a rejected LB was stored", tc.reason)
			}
		})
	}
}

func TestDefaultsAndSnapshot(t *testing.T) {
	t.Parallel()
	srv := newServer(t, &clbtest.Options{Region: "cn-guangzhou"})
	got, err := srv.AddLoadBalancer(clbtest.LoadBalancer{
		Type:         clbtest.TypePublic,
		ServerGroups: []clbtest.ServerGroup{{Servers: []clbtest.BackendServer{{IP: "10.0.0.1", Port: 80}}}},
		Listeners:    []clbtest.Listener{{Protocol: "TCP", Port: 8443}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID == "" || got.Listeners[0].ID == "" || got.ServerGroups[0].ID == "" || got.ServerGroups[0].Servers[0].ID == "" {
		t.Fatalf("IDs not generated: %+v", got)
	}
	l := got.Listeners[0]
	if got.Region != "cn-guangzhou" || got.Status != "Active" || got.AddressIPVersion != "ipv4" || got.Name != got.ID ||
		l.Name != "TCP-8443" || l.ProxyProtocolType != clbtest.ProxyProtocolOff || l.Enabled != "on" || got.ServerGroups[0].Type != "instance" || got.CreateTime.IsZero() {
		t.Errorf("defaults not filled: %+v", got)
	}

	// Snapshot and AddLoadBalancer's result are copies.
	got.Listeners[0].ProxyProtocolType = clbtest.ProxyProtocolStandard
	snap := srv.Snapshot()
	snap[0].ServerGroups[0].Servers[0].IP = "10.9.9.9"
	stored, _ := srv.LoadBalancer(got.ID)
	if stored.Listeners[0].ProxyProtocolType != clbtest.ProxyProtocolOff || stored.ServerGroups[0].Servers[0].IP != "10.0.0.1" {
		t.Errorf("stored state aliased by a returned copy: %+v", stored)
	}

	// UpdateLoadBalancer validates and is all-or-nothing.
	err = srv.UpdateLoadBalancer(got.ID, func(lb *clbtest.LoadBalancer) {
		lb.Listeners[0].ProxyProtocolType = clbtest.ProxyProtocolStandard
		lb.Type = "internal"
	})
	if !errors.Is(err, clbtest.ErrInvalid) {
		t.Fatalf("invalid update: %v", err)
	}
	if after, _ := srv.LoadBalancer(got.ID); after.Listeners[0].ProxyProtocolType != clbtest.ProxyProtocolOff {
		t.Error("a rejected update changed state")
	}
	if err := srv.UpdateLoadBalancer(got.ID, func(lb *clbtest.LoadBalancer) { lb.ID = "clb-renamed" }); !errors.Is(err, clbtest.ErrInvalid) {
		t.Errorf("ID change: %v", err)
	}
	if err := srv.UpdateLoadBalancer("clb-none", func(*clbtest.LoadBalancer) {}); !errors.Is(err, clbtest.ErrNotFound) {
		t.Errorf("unknown LB: %v", err)
	}
	if err := srv.UpdateLoadBalancer(got.ID, func(lb *clbtest.LoadBalancer) {
		lb.Listeners = append(lb.Listeners, clbtest.Listener{Protocol: "UDP", Port: 53})
	}); err != nil {
		t.Fatal(err)
	}
	if after, _ := srv.LoadBalancer(got.ID); len(after.Listeners) != 2 || after.Listeners[1].ID == "" {
		t.Errorf("added listener: %+v", after.Listeners)
	}
	if srv.RemoveLoadBalancer("clb-none") {
		t.Error("RemoveLoadBalancer of an unknown ID reported true")
	}
}

func TestCallLog(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	seed(t, srv)
	c := defaultClient(t, srv)
	if _, err := c.DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{LoadBalancerIds: volcengine.StringSlice([]string{"clb-private", "clb-public"}), PageSize: volcengine.Int64(20)}); err != nil {
		t.Fatal(err)
	}
	_, _ = newClient(t, srv, "cn-shanghai", testAK, "wrong").DescribeListenerAttributes(&clb.DescribeListenerAttributesInput{ListenerId: volcengine.String("lsn-tcp")})

	type entry struct {
		Action, Version, Region, AK, Code string
		Status                            int
		Params                            map[string][]string
	}
	var got []entry
	for _, call := range srv.Calls() {
		if call.RequestID == "" || call.Time.IsZero() || call.Method != http.MethodGet {
			t.Errorf("incomplete call %+v", call)
		}
		got = append(got, entry{call.Action, call.Version, call.Region, call.AccessKeyID, call.ErrorCode, call.StatusCode, call.Params})
	}
	want := []entry{
		{"DescribeLoadBalancers", clbtest.APIVersion, testRegion, testAK, "", 200,
			map[string][]string{"LoadBalancerIds.1": {"clb-private"}, "LoadBalancerIds.2": {"clb-public"}, "PageSize": {"20"}}},
		{"DescribeListenerAttributes", clbtest.APIVersion, "cn-shanghai", testAK, clbtest.CodeSignatureDoesNotMatch, 401,
			map[string][]string{"ListenerId": {"lsn-tcp"}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("call log -want +got:\n%s", diff)
	}
	if n := len(srv.CallsTo("DescribeListenerAttributes")); n != 1 {
		t.Errorf("CallsTo = %d calls", n)
	}
	calls := srv.Calls()
	calls[0].Params.Set("PageSize", "1")
	if srv.Calls()[0].Params.Get("PageSize") != "20" {
		t.Error("Calls returned an alias of the log")
	}
	srv.ResetCalls()
	if len(srv.Calls()) != 0 {
		t.Error("ResetCalls left entries")
	}
}

// TestSecretsStayHidden runs accepted and rejected calls and searches every
// surface a secret could leak through.
func TestSecretsStayHidden(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	var logMu sync.Mutex
	opts := &clbtest.Options{
		Credentials: []clbtest.Credential{{AccessKeyID: testAK, SecretAccessKey: testSK}},
		Logger:      slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	srv := newServer(t, opts)
	seed(t, srv)

	var bodies []string
	bodies = append(bodies, do(t, srv, signedRequest(t, srv, query("DescribeLoadBalancers"), testCred())).Body)
	wrong := testCred()
	wrong.SecretAccessKey = testSK + "x"
	bodies = append(bodies, do(t, srv, signedRequest(t, srv, query("DescribeLoadBalancers"), wrong)).Body)
	other := testCred()
	other.Service = "ecs"
	bodies = append(bodies, do(t, srv, signedRequest(t, srv, query("DescribeLoadBalancers"), other)).Body)
	srv.InjectFault(clbtest.Fault{Status: 500, Times: 1})
	bodies = append(bodies, do(t, srv, signedRequest(t, srv, query("DescribeLoadBalancerAttributes", "LoadBalancerId", "clb-private"), testCred())).Body)
	_, sdkErr := newClient(t, srv, testRegion, testAK, testSK+"y").DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{})

	logMu.Lock()
	logText := logs.String()
	logMu.Unlock()
	if !strings.Contains(logText, "DescribeLoadBalancers") || !strings.Contains(logText, testAK) {
		t.Fatalf("logger got no records: %q", logText)
	}
	surfaces := map[string]string{
		"bodies":         strings.Join(bodies, "\n"),
		"logs":           logText,
		"call log":       fmt.Sprintf("%+v", srv.Calls()),
		"SDK error":      fmt.Sprint(sdkErr),
		"Options %v":     fmt.Sprintf("%v", *opts),
		"Options %+v":    fmt.Sprintf("%+v", opts),
		"Options %#v":    fmt.Sprintf("%#v", *opts),
		"Credential %#v": fmt.Sprintf("%#v", opts.Credentials[0]),
	}
	for name, text := range surfaces {
		if strings.Contains(text, testSK) {
			t.Errorf("the secret leaks through %s: %s", name, text)
		}
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestClientIgnoresProxyEnvironment pins the SDK trap Client works around:
// session.ClientConfig points an *http.Transport at HTTP_PROXY even for a
// local endpoint. Not parallel: it sets the environment.
func TestClientIgnoresProxyEnvironment(t *testing.T) {
	srv := newServer(t, nil)
	seed(t, srv)
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1") // nothing listens on port 1
	t.Setenv("NO_PROXY", "127.0.0.1")

	build := func(hc *http.Client) *clb.CLB {
		cfg := volcengine.NewConfig().WithRegion(testRegion).
			WithCredentials(credentials.NewStaticCredentials(testAK, testSK, "")).
			WithEndpoint(srv.Endpoint()).WithDisableSSL(true).WithMaxRetries(0).WithHTTPClient(hc)
		sess, err := session.NewSession(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return clb.New(sess)
	}
	if _, err := build(srv.Client()).DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{}); err != nil {
		t.Fatalf("Server.Client went through HTTP_PROXY: %v", err)
	}
	plain := &http.Client{Transport: &http.Transport{}}
	if _, err := build(plain).DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{}); err == nil {
		t.Log("the SDK no longer forces HTTP_PROXY onto *http.Transport; Server.Client's wrapper may be unnecessary")
	} else if len(srv.Calls()) != 1 {
		t.Errorf("the proxied call reached the server")
	}
}

// TestConcurrentUse runs SDK clients, built concurrently, against state,
// faults and limits that change underneath them. Run with -race.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	seed(t, srv)
	const workers, perWorker = 16, 10

	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := buildClient(srv, testRegion, testAK, testSK) // concurrent session construction
			if err != nil {
				errs <- err
				return
			}
			for i := range perWorker {
				switch (w + i) % 3 {
				case 0:
					out, err := c.DescribeListenerAttributes(&clb.DescribeListenerAttributesInput{ListenerId: volcengine.String("lsn-udp")})
					if err == nil && *out.ProxyProtocolType != "off" && *out.ProxyProtocolType != "standard" {
						err = fmt.Errorf("torn ProxyProtocolType %q", *out.ProxyProtocolType)
					}
					errs <- err
				case 1:
					out, err := c.DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{})
					if err == nil && len(out.LoadBalancers) < 2 {
						err = fmt.Errorf("saw %d LBs", len(out.LoadBalancers))
					}
					errs <- err
				default:
					_, err := c.DescribeServerGroupAttributes(&clb.DescribeServerGroupAttributesInput{ServerGroupId: volcengine.String("rsp-1")})
					errs <- err
				}
			}
		}()
	}
	stop := make(chan struct{})
	var mutator sync.WaitGroup
	mutator.Add(1)
	go func() {
		defer mutator.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			pp := clbtest.ProxyProtocolOff
			if i%2 == 0 {
				pp = clbtest.ProxyProtocolStandard
			}
			_ = srv.UpdateLoadBalancer("clb-private", func(lb *clbtest.LoadBalancer) { lb.Listeners[1].ProxyProtocolType = pp })
			remove := srv.InjectFault(clbtest.Fault{Action: "DescribeServerGroupAttributes", Code: clbtest.CodeAccountFlowLimitExceeded, Times: 1})
			if i < 50 { // bounded, so listing stays cheap
				_, _ = srv.AddLoadBalancer(clbtest.LoadBalancer{Type: clbtest.TypePrivate})
			}
			_ = srv.Snapshot()
			_ = srv.Calls()
			srv.SetRateLimit("DescribeListeners", clbtest.RateLimit{PerSecond: 1000, Burst: 1000})
			remove()
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	close(stop)
	mutator.Wait()
	close(errs)

	var throttled int
	for err := range errs {
		switch {
		case err == nil:
		case strings.Contains(err.Error(), clbtest.CodeAccountFlowLimitExceeded):
			throttled++
		default:
			t.Error(err)
		}
	}
	if got := len(srv.Calls()); got != workers*perWorker {
		t.Errorf("call log has %d entries, want %d", got, workers*perWorker)
	}
	t.Logf("%d calls, %d throttled by injected faults", workers*perWorker, throttled)
}
