package clbtest_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/volcengine/volc-sdk-golang/base"
	"github.com/volcengine/volcengine-go-sdk/service/clb"
	"github.com/volcengine/volcengine-go-sdk/volcengine"
	"github.com/volcengine/volcengine-go-sdk/volcengine/credentials"
	"github.com/volcengine/volcengine-go-sdk/volcengine/session"
	"github.com/volcengine/volcengine-go-sdk/volcengine/volcengineerr"

	"github.com/loopguard/loopguard/providers/volcengine/clbtest"
)

const (
	testAK = "AKLTloopguardtest"
	// testSK is distinctive so leak checks can search for it.
	testSK     = "sk-MUST-NOT-LEAK-7c1e9b"
	testRegion = clbtest.DefaultRegion
)

// fakeClock is a server clock that follows real time plus an adjustable
// offset: the SDK signs with the real time, so the offset is what separates
// the two clocks.
type fakeClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

func newServer(t *testing.T, opts *clbtest.Options) *clbtest.Server {
	t.Helper()
	if opts == nil {
		opts = &clbtest.Options{}
	}
	if opts.Credentials == nil {
		opts.Credentials = []clbtest.Credential{{AccessKeyID: testAK, SecretAccessKey: testSK}}
	}
	return clbtest.NewTestServer(t, opts)
}

// newClient builds the official SDK client the way loopguard does.
func newClient(t *testing.T, srv *clbtest.Server, region, ak, sk string) *clb.CLB {
	t.Helper()
	c, err := buildClient(srv, region, ak, sk)
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	return c
}

// buildClient is newClient for goroutines, which must not call t.Fatal.
func buildClient(srv *clbtest.Server, region, ak, sk string) (*clb.CLB, error) {
	cfg := volcengine.NewConfig().
		WithRegion(region).
		WithCredentials(credentials.NewStaticCredentials(ak, sk, "")).
		WithEndpoint(srv.Endpoint()).
		WithDisableSSL(true).
		WithMaxRetries(0).
		WithHTTPClient(srv.Client())
	sess, err := session.NewSession(cfg)
	if err != nil {
		return nil, err
	}
	return clb.New(sess), nil
}

func defaultClient(t *testing.T, srv *clbtest.Server) *clb.CLB {
	return newClient(t, srv, testRegion, testAK, testSK)
}

// requestFailure asserts err is the SDK's RequestFailure with code and status.
func requestFailure(t *testing.T, err error, code string, status int) volcengineerr.RequestFailure {
	t.Helper()
	var rf volcengineerr.RequestFailure
	if !errors.As(err, &rf) {
		t.Fatalf("error = %v (%T), want a volcengineerr.RequestFailure with code %s", err, err, code)
	}
	if rf.Code() != code || rf.StatusCode() != status {
		t.Fatalf("error code/status = %s/%d, want %s/%d (message %q)", rf.Code(), rf.StatusCode(), code, status, rf.Message())
	}
	if rf.RequestID() == "" {
		t.Errorf("RequestFailure has no RequestID")
	}
	return rf
}

// rawResponse is the decoded envelope of a raw call.
type rawResponse struct {
	Status           int
	ResponseMetadata struct {
		RequestId, Action, Version, Service, Region string
		Error                                       *struct {
			CodeN   int
			Code    string
			Message string
		}
	}
	Result json.RawMessage
	Body   string
}

// signedRequest builds a GET request signed by the exported signer, for the
// cases the SDK cannot produce (another service, tampering, bad headers).
func signedRequest(t *testing.T, srv *clbtest.Server, q url.Values, cred base.Credentials) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL()+"/?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cred.Sign(req)
}

func testCred() base.Credentials {
	return base.Credentials{AccessKeyID: testAK, SecretAccessKey: testSK, Service: "clb", Region: testRegion}
}

func do(t *testing.T, srv *clbtest.Server, req *http.Request) rawResponse {
	t.Helper()
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out rawResponse
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("body %q is not JSON: %v", b, err)
	}
	out.Status = resp.StatusCode
	out.Body = string(b)
	return out
}

func query(action string, kv ...string) url.Values {
	q := url.Values{"Action": {action}, "Version": {clbtest.APIVersion}}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return q
}

// seed adds a private LB with a PROXY-protocol TCP listener and a server
// group, and a public LB with an HTTP listener.
func seed(t *testing.T, srv *clbtest.Server) (private, public clbtest.LoadBalancer) {
	t.Helper()
	var err error
	private, err = srv.AddLoadBalancer(clbtest.LoadBalancer{
		ID:         "clb-private",
		Name:       "k8s-private",
		Type:       clbtest.TypePrivate,
		VpcID:      "vpc-1",
		EniID:      "eni-1",
		EniAddress: "192.168.0.10",
		ServerGroups: []clbtest.ServerGroup{{
			ID: "rsp-1",
			Servers: []clbtest.BackendServer{
				{ID: "rs-1", Type: "eni", InstanceID: "eni-pod-a", IP: "192.168.1.5", Port: 8080, Weight: 100},
				{ID: "rs-2", Type: "ecs", InstanceID: "i-node-b", IP: "192.168.1.6", Port: 30080, Weight: 50},
			},
		}},
		Listeners: []clbtest.Listener{
			{ID: "lsn-tcp", Protocol: "TCP", Port: 443, ProxyProtocolType: clbtest.ProxyProtocolStandard, ServerGroupID: "rsp-1"},
			{ID: "lsn-udp", Protocol: "UDP", Port: 53, ServerGroupID: "rsp-1"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	public, err = srv.AddLoadBalancer(clbtest.LoadBalancer{
		ID:         "clb-public",
		Type:       clbtest.TypePublic,
		VpcID:      "vpc-1",
		EniAddress: "192.168.0.20",
		EipID:      "eip-1",
		EipAddress: "203.0.113.7",
		Listeners:  []clbtest.Listener{{ID: "lsn-http", Protocol: "HTTP", Port: 80}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return private, public
}
