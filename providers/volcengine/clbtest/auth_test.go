package clbtest_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/volcengine/volcengine-go-sdk/service/clb"

	"github.com/loopguard/loopguard/providers/volcengine/clbtest"
)

// TestSignatureWithSDK drives the verifier through the official client, so
// a change in what the SDK signs would show up here.
func TestSignatureWithSDK(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		reason     string
		ak, sk     string
		skew       time.Duration // server clock minus real time
		wantCode   string
		wantStatus int
	}{
		"valid": {
			reason: "a request signed with a known key pair is served",
			ak:     testAK, sk: testSK,
		},
		"unknown access key": {
			reason: "the gateway rejects an AK it does not know before checking the signature",
			ak:     "AKLTnobody", sk: testSK,
			wantCode: clbtest.CodeInvalidAccessKey, wantStatus: 401,
		},
		"wrong secret": {
			reason: "a known AK signed with another secret does not match",
			ak:     testAK, sk: "not-the-secret",
			wantCode: clbtest.CodeSignatureDoesNotMatch, wantStatus: 401,
		},
		"X-Date too old": {
			reason: "a signature older than the 15 minute window is expired",
			ak:     testAK, sk: testSK, skew: 16 * time.Minute,
			wantCode: clbtest.CodeInvalidTimestamp, wantStatus: 400,
		},
		"X-Date in the future": {
			reason: "a signing time ahead of the server is rejected too",
			ak:     testAK, sk: testSK, skew: -16 * time.Minute,
			wantCode: clbtest.CodeInvalidTimestamp, wantStatus: 400,
		},
		"X-Date inside the window": {
			reason: "clock skew under the window is tolerated",
			ak:     testAK, sk: testSK, skew: 10 * time.Minute,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := &fakeClock{}
			clock.Advance(tc.skew)
			srv := newServer(t, &clbtest.Options{Now: clock.Now})
			seed(t, srv)
			c := newClient(t, srv, testRegion, tc.ak, tc.sk)
			out, err := c.DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{})
			if tc.wantCode == "" {
				if err != nil {
					t.Fatalf("%s: %v", tc.reason, err)
				}
				if got := len(out.LoadBalancers); got != 2 {
					t.Fatalf("%s: got %d load balancers, want 2", tc.reason, got)
				}
				return
			}
			requestFailure(t, err, tc.wantCode, tc.wantStatus)
			if out.LoadBalancers != nil {
				t.Errorf("%s: a rejected call returned data", tc.reason)
			}
			calls := srv.Calls()
			if len(calls) != 1 || calls[0].ErrorCode != tc.wantCode {
				t.Errorf("%s: call log = %+v, want one call with %s", tc.reason, calls, tc.wantCode)
			}
		})
	}
}

func TestSignatureRaw(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	seed(t, srv)
	cases := map[string]struct {
		reason     string
		req        func(t *testing.T) *http.Request
		wantCode   string
		wantStatus int
		wantCodeN  int
	}{
		"baseline": {
			reason: "the exported signer produces what the server accepts",
			req: func(t *testing.T) *http.Request {
				return signedRequest(t, srv, query("DescribeLoadBalancers"), testCred())
			},
		},
		"wrong service in scope": {
			reason: "a request signed for ecs is not a CLB request",
			req: func(t *testing.T) *http.Request {
				c := testCred()
				c.Service = "ecs"
				return signedRequest(t, srv, query("DescribeLoadBalancers"), c)
			},
			wantCode: clbtest.CodeServiceNotFound, wantStatus: 404, wantCodeN: 100007,
		},
		"query changed after signing": {
			reason: "the signature covers the query string",
			req: func(t *testing.T) *http.Request {
				r := signedRequest(t, srv, query("DescribeLoadBalancers", "LoadBalancerIds.1", "clb-private"), testCred())
				r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "clb-private", "clb-public", 1)
				return r
			},
			wantCode: clbtest.CodeSignatureDoesNotMatch, wantStatus: 401, wantCodeN: 100010,
		},
		"signed header changed": {
			reason: "the signature covers X-Date",
			req: func(t *testing.T) *http.Request {
				r := signedRequest(t, srv, query("DescribeLoadBalancers"), testCred())
				d, _ := time.Parse("20060102T150405Z", r.Header.Get("X-Date"))
				r.Header.Set("X-Date", d.Add(-time.Second).Format("20060102T150405Z"))
				return r
			},
			wantCode: clbtest.CodeSignatureDoesNotMatch, wantStatus: 401, wantCodeN: 100010,
		},
		"scope region differs from signing region": {
			reason: "the region in Credential is part of the signing key",
			req: func(t *testing.T) *http.Request {
				r := signedRequest(t, srv, query("DescribeLoadBalancers"), testCred())
				r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "/"+testRegion+"/", "/cn-shanghai/", 1))
				return r
			},
			wantCode: clbtest.CodeSignatureDoesNotMatch, wantStatus: 401, wantCodeN: 100010,
		},
		"no Authorization": {
			reason: "an unsigned request has no token",
			req: func(t *testing.T) *http.Request {
				r, _ := http.NewRequest(http.MethodGet, srv.URL()+"/?"+query("DescribeLoadBalancers").Encode(), nil)
				return r
			},
			wantCode: clbtest.CodeMissingAuthenticationToken, wantStatus: 401, wantCodeN: 100003,
		},
		"other algorithm": {
			reason: "only HMAC-SHA256 is spoken",
			req: func(t *testing.T) *http.Request {
				r := signedRequest(t, srv, query("DescribeLoadBalancers"), testCred())
				r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "HMAC-SHA256", "TC3-HMAC-SHA256", 1))
				return r
			},
			wantCode: clbtest.CodeInvalidAuthorization, wantStatus: 400,
		},
		"malformed credential": {
			reason: "the scope needs five parts ending in request",
			req: func(t *testing.T) *http.Request {
				r := signedRequest(t, srv, query("DescribeLoadBalancers"), testCred())
				r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "/request,", "/req,", 1))
				return r
			},
			wantCode: clbtest.CodeInvalidCredential, wantStatus: 400,
		},
		"no signature": {
			reason: "an Authorization without Signature is missing the signature",
			req: func(t *testing.T) *http.Request {
				r := signedRequest(t, srv, query("DescribeLoadBalancers"), testCred())
				h := r.Header.Get("Authorization")
				r.Header.Set("Authorization", h[:strings.Index(h, ", Signature=")])
				return r
			},
			wantCode: clbtest.CodeMissingSignature, wantStatus: 401, wantCodeN: 100005,
		},
		"no X-Date": {
			reason: "the signing time is required",
			req: func(t *testing.T) *http.Request {
				r := signedRequest(t, srv, query("DescribeLoadBalancers"), testCred())
				r.Header.Del("X-Date")
				return r
			},
			wantCode: clbtest.CodeMissingRequestInfo, wantStatus: 400, wantCodeN: 100004,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := do(t, srv, tc.req(t))
			md := got.ResponseMetadata
			if md.RequestId == "" || md.Service != "clb" || md.Version != clbtest.APIVersion || md.Action != "DescribeLoadBalancers" {
				t.Errorf("%s: ResponseMetadata = %+v, want RequestId, Service clb, Version and Action set", tc.reason, md)
			}
			if tc.wantCode == "" {
				if got.Status != 200 || md.Error != nil || len(got.Result) == 0 {
					t.Fatalf("%s: status %d body %s", tc.reason, got.Status, got.Body)
				}
				return
			}
			if got.Status != tc.wantStatus || md.Error == nil || md.Error.Code != tc.wantCode || md.Error.CodeN != tc.wantCodeN {
				t.Fatalf("%s: status %d body %s, want %d %s CodeN %d", tc.reason, got.Status, got.Body, tc.wantStatus, tc.wantCode, tc.wantCodeN)
			}
			if len(got.Result) != 0 {
				t.Errorf("%s: an error response carries a Result: %s", tc.reason, got.Body)
			}
		})
	}
}

// TestCredentialRotation: keys can be added and withdrawn while clients run.
func TestCredentialRotation(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	c := defaultClient(t, srv)
	if _, err := c.DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{}); err != nil {
		t.Fatal(err)
	}
	srv.RemoveCredential(testAK)
	_, err := c.DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{})
	requestFailure(t, err, clbtest.CodeInvalidAccessKey, 401)

	if err := srv.AddCredential(clbtest.Credential{AccessKeyID: testAK, SecretAccessKey: "rotated"}); err != nil {
		t.Fatal(err)
	}
	_, err = c.DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{})
	requestFailure(t, err, clbtest.CodeSignatureDoesNotMatch, 401)
	if _, err := newClient(t, srv, testRegion, testAK, "rotated").DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{}); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	if err := srv.AddCredential(clbtest.Credential{AccessKeyID: "AK"}); err == nil {
		t.Error("AddCredential accepted an empty secret")
	}
}

// TestRequestRouting covers Action/Version checks, POST forms and methods.
func TestRequestRouting(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	seed(t, srv)
	cases := map[string]struct {
		reason     string
		req        func(t *testing.T) *http.Request
		wantStatus int
		wantCode   string
	}{
		"unknown action": {
			reason: "an action this server does not implement is unknown to it",
			req: func(t *testing.T) *http.Request {
				return signedRequest(t, srv, query("CreateLoadBalancer"), testCred())
			},
			wantStatus: 404, wantCode: clbtest.CodeInvalidActionOrVersion,
		},
		"other version": {
			reason: "only 2020-04-01 exists",
			req: func(t *testing.T) *http.Request {
				q := query("DescribeLoadBalancers")
				q.Set("Version", "2017-11-01")
				return signedRequest(t, srv, q, testCred())
			},
			wantStatus: 404, wantCode: clbtest.CodeInvalidActionOrVersion,
		},
		"no Action": {
			reason: "Action is a required common parameter",
			req: func(t *testing.T) *http.Request {
				return signedRequest(t, srv, url.Values{"Version": {clbtest.APIVersion}}, testCred())
			},
			wantStatus: 400, wantCode: clbtest.CodeMissingParameter,
		},
		"no Version": {
			reason: "Version is a required common parameter",
			req: func(t *testing.T) *http.Request {
				return signedRequest(t, srv, url.Values{"Action": {"DescribeLoadBalancers"}}, testCred())
			},
			wantStatus: 400, wantCode: clbtest.CodeMissingParameter,
		},
		"POST form": {
			reason: "the SDK's query encoder puts parameters in a form body for POST",
			req: func(t *testing.T) *http.Request {
				form := url.Values{"LoadBalancerId": {"clb-private"}}
				r, _ := http.NewRequest(http.MethodPost, srv.URL()+"/?Action=DescribeLoadBalancerAttributes&Version="+clbtest.APIVersion, strings.NewReader(form.Encode()))
				r.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
				return testCred().Sign(r)
			},
			wantStatus: 200,
		},
		"PUT": {
			reason: "the OpenAPI is GET/POST only",
			req: func(t *testing.T) *http.Request {
				r, _ := http.NewRequest(http.MethodPut, srv.URL()+"/?"+query("DescribeLoadBalancers").Encode(), nil)
				return testCred().Sign(r)
			},
			wantStatus: 405, wantCode: clbtest.CodeMethodNotAllowed,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := do(t, srv, tc.req(t))
			code := ""
			if got.ResponseMetadata.Error != nil {
				code = got.ResponseMetadata.Error.Code
			}
			if got.Status != tc.wantStatus || code != tc.wantCode {
				t.Fatalf("%s: got %d %q (%s), want %d %q", tc.reason, got.Status, code, got.Body, tc.wantStatus, tc.wantCode)
			}
		})
	}
}
