package clbtest_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"

	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

// roundTripFunc lets a test tamper with a request after the SDK signed it.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSignatureAccepted runs the same read-modify-read through every request shape the
// SDK can produce, so GET query decoding (lists, nested objects, ints, bools) and the
// canonical request variants are all exercised against real SDK signatures.
func TestSignatureAccepted(t *testing.T) {
	cases := map[string]func(*profile.ClientProfile){
		"POST JSON":        func(*profile.ClientProfile) {},
		"GET query":        func(cpf *profile.ClientProfile) { cpf.HttpProfile.ReqMethod = "GET" },
		"unsigned payload": func(cpf *profile.ClientProfile) { cpf.UnsignedPayload = true },
		"endpoint with a path": func(cpf *profile.ClientProfile) {
			cpf.HttpProfile.Endpoint += "/some/prefix" // the canonical URI stays "/"
		},
		"english language": func(cpf *profile.ClientProfile) { cpf.Language = "en-US" },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			srv := start(t, nil)
			seedLB(t, srv, "lb-a")
			seedLB(t, srv, "lb-b")
			cpf := profileFor(srv)
			mutate(cpf)
			c := clientWith(t, cpf, common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey), clbtest.DefaultRegion)

			dlb := clb.NewDescribeLoadBalancersRequest()
			dlb.LoadBalancerIds = common.StringPtrs([]string{"lb-b", "lb-missing"})
			dlb.Limit = common.Int64Ptr(5)
			lbs, err := c.DescribeLoadBalancers(dlb)
			if err != nil {
				t.Fatalf("DescribeLoadBalancers: %v", err)
			}
			if *lbs.Response.TotalCount != 1 || *lbs.Response.LoadBalancerSet[0].LoadBalancerId != "lb-b" {
				t.Fatalf("DescribeLoadBalancers = %s, want only lb-b", lbs.ToJsonString())
			}

			task, err := modify(t, c, "lb-b", "lb-b-tcp", func(r *clb.ModifyListenerRequest) {
				r.ListenerName = common.StringPtr("renamed")
				r.SnatEnable = common.BoolPtr(false)
				r.HealthCheck = &clb.HealthCheck{SourceIpType: common.Int64Ptr(1), HttpCheckPath: common.StringPtr("/healthz")}
			})
			if err != nil {
				t.Fatalf("ModifyListener: %v", err)
			}
			if st := waitTask(t, c, task); *st.Status != 0 {
				t.Fatalf("task status %d", *st.Status)
			}

			dl := clb.NewDescribeListenersRequest()
			dl.LoadBalancerId = common.StringPtr("lb-b")
			dl.ListenerIds = common.StringPtrs([]string{"lb-b-tcp", "lb-b-http"})
			dl.Port = common.Int64Ptr(80)
			dl.Protocol = common.StringPtr("TCP")
			ls, err := c.DescribeListeners(dl)
			if err != nil {
				t.Fatalf("DescribeListeners: %v", err)
			}
			if len(ls.Response.Listeners) != 1 {
				t.Fatalf("DescribeListeners = %s, want the TCP listener only", ls.ToJsonString())
			}
			l := ls.Response.Listeners[0]
			if *l.ListenerName != "renamed" || *l.HealthCheck.SourceIpType != 1 || *l.HealthCheck.HttpCheckPath != "/healthz" {
				t.Errorf("listener not modified: %s", ls.ToJsonString())
			}
		})
	}
}

func TestSignatureRejected(t *testing.T) {
	goodCred := common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey)
	describe := func(c *clb.Client) error {
		_, err := c.DescribeLoadBalancers(clb.NewDescribeLoadBalancersRequest())
		return err
	}
	withClock := func(offset time.Duration) *clbtest.Options {
		return &clbtest.Options{Now: clbtest.NewManualClock(time.Now().Add(offset)).Now}
	}
	tokenOpts := &clbtest.Options{Credentials: []clbtest.Credential{
		{SecretID: "AKIDtemp", SecretKey: "temp-key", Token: "session-token"},
		{SecretID: "AKIDperm", SecretKey: "perm-key"},
	}}
	tamper := func(fn func(*http.Request)) func(*profile.ClientProfile, *clb.Client) {
		return func(_ *profile.ClientProfile, c *clb.Client) {
			c.WithHttpTransport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
				fn(r)
				return http.DefaultTransport.RoundTrip(r)
			}))
		}
	}

	cases := map[string]struct {
		opts  *clbtest.Options
		cred  common.CredentialIface
		setup func(*profile.ClientProfile, *clb.Client)
		want  string
	}{
		"unknown SecretId":  {cred: common.NewCredential("AKIDnobody", clbtest.DefaultSecretKey), want: clbtest.CodeSecretIDNotFound},
		"wrong key":         {cred: common.NewCredential(clbtest.DefaultSecretID, "not-the-key"), want: clbtest.CodeSignatureFailure},
		"server 6 min late": {opts: withClock(6 * time.Minute), want: clbtest.CodeSignatureExpire},
		"server 6 min early": {
			opts: withClock(-6 * time.Minute), want: clbtest.CodeSignatureExpire,
		},
		"4m50s skew is fine": {opts: withClock(4*time.Minute + 50*time.Second), want: ""},
		"max skew option": {
			opts: &clbtest.Options{Now: clbtest.NewManualClock(time.Now().Add(90 * time.Second)).Now, MaxSkew: time.Minute},
			want: clbtest.CodeSignatureExpire,
		},
		"right token":      {opts: tokenOpts, cred: common.NewTokenCredential("AKIDtemp", "temp-key", "session-token"), want: ""},
		"wrong token":      {opts: tokenOpts, cred: common.NewTokenCredential("AKIDtemp", "temp-key", "stolen"), want: clbtest.CodeTokenFailure},
		"missing token":    {opts: tokenOpts, cred: common.NewCredential("AKIDtemp", "temp-key"), want: clbtest.CodeTokenFailure},
		"unexpected token": {opts: tokenOpts, cred: common.NewTokenCredential("AKIDperm", "perm-key", "x"), want: clbtest.CodeTokenFailure},
		"second credential": {
			opts: tokenOpts, cred: common.NewCredential("AKIDperm", "perm-key"), want: "",
		},
		"v1 HmacSHA256 signature": {
			setup: func(cpf *profile.ClientProfile, c *clb.Client) { c.WithSignatureMethod("HmacSHA256") },
			want:  clbtest.CodeInvalidAuthorization,
		},
		"body changed after signing": {
			setup: tamper(func(r *http.Request) {
				r.Body = io.NopCloser(strings.NewReader(`{"Limit":1}`))
				r.ContentLength = int64(len(`{"Limit":1}`))
			}),
			want: clbtest.CodeSignatureFailure,
		},
		"host changed after signing": {
			setup: tamper(func(r *http.Request) { r.Host = "clb.tencentcloudapi.com" }),
			want:  clbtest.CodeSignatureFailure,
		},
		"content type changed after signing": {
			setup: tamper(func(r *http.Request) { r.Header.Set("Content-Type", "application/json; charset=utf-8") }),
			want:  clbtest.CodeSignatureFailure,
		},
		"authorization removed": {
			setup: tamper(func(r *http.Request) { r.Header.Del("Authorization") }),
			want:  clbtest.CodeInvalidAuthorization,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := start(t, tc.opts)
			cpf := profileFor(srv)
			cred := tc.cred
			if cred == nil {
				cred = goodCred
			}
			c := clientWith(t, cpf, cred, clbtest.DefaultRegion)
			if tc.setup != nil {
				tc.setup(cpf, c)
			}
			if got := codeOf(t, describe(c)); got != tc.want {
				t.Errorf("code = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestQueryChangedAfterSigning covers GET: the query string is part of the signature.
func TestQueryChangedAfterSigning(t *testing.T) {
	srv := start(t, nil)
	seedLB(t, srv, "lb-a")
	cpf := profileFor(srv)
	cpf.HttpProfile.ReqMethod = "GET"
	c := clientWith(t, cpf, common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey), clbtest.DefaultRegion)
	c.WithHttpTransport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "lb-a", "lb-b", 1)
		return http.DefaultTransport.RoundTrip(r)
	}))
	req := clb.NewDescribeListenersRequest()
	req.LoadBalancerId = common.StringPtr("lb-a")
	_, err := c.DescribeListeners(req)
	if got := codeOf(t, err); got != clbtest.CodeSignatureFailure {
		t.Errorf("code = %q, want %q", got, clbtest.CodeSignatureFailure)
	}
}

// TestRequestShapeRejected covers what the gateway checks once the signature is good.
func TestRequestShapeRejected(t *testing.T) {
	cases := map[string]struct {
		service, version, action string
		params                   map[string]any
		want                     string
	}{
		"other service in the credential scope": {service: "cvm", version: clbtest.APIVersion, action: "DescribeLoadBalancers", want: clbtest.CodeSignatureFailure},
		"unknown version":                       {service: "clb", version: "2017-03-12", action: "DescribeLoadBalancers", want: clbtest.CodeNoSuchVersion},
		"unknown action":                        {service: "clb", version: clbtest.APIVersion, action: "DescribeEverything", want: clbtest.CodeInvalidAction},
		"real action not modelled":              {service: "clb", version: clbtest.APIVersion, action: "DeleteListener", want: clbtest.CodeInvalidAction},
		"unknown parameter":                     {service: "clb", version: clbtest.APIVersion, action: "DescribeListeners", params: map[string]any{"LoadBalancerId": "lb-a", "Bogus": 1}, want: clbtest.CodeUnknownParameter},
		"parameter of the wrong type":           {service: "clb", version: clbtest.APIVersion, action: "DescribeListeners", params: map[string]any{"LoadBalancerId": "lb-a", "Port": "80"}, want: clbtest.CodeFormatError},
		"list given as a scalar":                {service: "clb", version: clbtest.APIVersion, action: "DescribeListeners", params: map[string]any{"LoadBalancerId": "lb-a", "ListenerIds": "lbl-1"}, want: clbtest.CodeFormatError},
		"missing required parameter":            {service: "clb", version: clbtest.APIVersion, action: "DescribeListeners", want: clbtest.CodeMissingParameter},
		"filter not modelled":                   {service: "clb", version: clbtest.APIVersion, action: "DescribeLoadBalancers", params: map[string]any{"Filters": []any{map[string]any{"Name": "tag-key", "Values": []any{"x"}}}}, want: clbtest.CodeInvalidFilter},
		"parameter not modelled":                {service: "clb", version: clbtest.APIVersion, action: "DescribeLoadBalancers", params: map[string]any{"BackendPrivateIps": []any{"10.0.0.2"}}, want: clbtest.CodeUnsupportedOperation},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := start(t, nil)
			seedLB(t, srv, "lb-a")
			err := sendCommon(srv, profileFor(srv), tc.service, tc.version, tc.action, tc.params)
			if got := codeOf(t, err); got != tc.want {
				t.Errorf("code = %q (%v), want %q", got, err, tc.want)
			}
		})
	}
}

func TestMissingRegion(t *testing.T) {
	srv := start(t, nil)
	c := clientWith(t, profileFor(srv), common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey), "")
	_, err := c.DescribeLoadBalancers(clb.NewDescribeLoadBalancersRequest())
	if got := codeOf(t, err); got != clbtest.CodeMissingParameter {
		t.Errorf("code = %q, want %q", got, clbtest.CodeMissingParameter)
	}
}

// TestSecretsNeverLeak drives failing and succeeding calls and looks for key material in
// everything the server hands back: answers, the call log and the log.
func TestSecretsNeverLeak(t *testing.T) {
	const key, token = "very-secret-key-value", "very-secret-token-value"
	var logs bytes.Buffer
	srv := start(t, &clbtest.Options{
		Credentials: []clbtest.Credential{{SecretID: "AKIDleak", SecretKey: key, Token: token}},
		Logger:      slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	seedLB(t, srv, "lb-a")
	var answers []string
	for _, cred := range []common.CredentialIface{
		common.NewTokenCredential("AKIDleak", key, token),
		common.NewTokenCredential("AKIDleak", key+"x", token),
		common.NewTokenCredential("AKIDleak", key, token+"x"),
		common.NewCredential("AKIDleak", key),
		common.NewTokenCredential("AKIDother", key, token),
	} {
		c := clientWith(t, profileFor(srv), cred, clbtest.DefaultRegion)
		req := clb.NewDescribeListenersRequest()
		req.LoadBalancerId = common.StringPtr("lb-a")
		resp, err := c.DescribeListeners(req)
		if err != nil {
			answers = append(answers, err.Error())
		} else {
			answers = append(answers, resp.ToJsonString())
		}
	}
	if !strings.Contains(logs.String(), "DescribeListeners") {
		t.Fatalf("expected the calls to be logged, got %q", logs.String())
	}
	everything := strings.Join(answers, "\n") + logs.String() + fmt.Sprintf("%+v", srv.Calls())
	for _, secret := range []string{key, token} {
		if strings.Contains(everything, secret) {
			t.Errorf("secret %q leaked:\n%s", secret, everything)
		}
	}
}
