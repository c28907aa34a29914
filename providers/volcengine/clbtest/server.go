package clbtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// APIVersion is the CLB API version the server speaks (service/clb in
// volcengine-go-sdk v1.1.35).
const APIVersion = "2020-04-01"

// DefaultRegion is the region used when Options.Region is empty.
const DefaultRegion = "cn-beijing"

// DefaultMaxClockSkew is how far X-Date may be from the server's clock.
// Volcengine documents a default signature lifetime (X-Expires) of 900 s
// (volcengine.com/docs/6767/113576); the tolerance for dates in the future
// is UNCONFIRMED and taken to be the same.
const DefaultMaxClockSkew = 15 * time.Minute

// maxBodyBytes bounds what the server reads; CLB queries are tiny.
const maxBodyBytes = 1 << 20

// Options configures a Server. The zero value is usable but accepts no
// credentials, so every call fails with InvalidAccessKey.
type Options struct {
	// Credentials are the access keys the server accepts.
	Credentials []Credential
	// Region is given to load balancers added without one. Load balancers
	// are regional: a call only sees those of its credential-scope region.
	Region string
	// Now is the server's clock, used for X-Date checks, rate limits,
	// request IDs and CreateTime. Default time.Now.
	Now func() time.Time
	// MaxClockSkew bounds |Now - X-Date|. Default DefaultMaxClockSkew.
	MaxClockSkew time.Duration
	// RateLimits maps an action name to its limit; see SetRateLimit.
	RateLimits map[string]RateLimit
	// AllowedActions is the IAM policy of every accepted key: the actions it may call, as
	// "DescribeListeners", "clb:DescribeListeners" or "clb:*". Nil allows every action; an
	// empty, non-nil list none. Any other action is answered with AccessDenied naming it.
	AllowedActions []string
	// Regions are the regions the endpoint serves; a call signed for another region is
	// answered with InvalidRegion. Empty serves every region.
	Regions []string
	// Logger receives one debug record per request (action, region, access
	// key ID, outcome; never a secret). Default: discard.
	Logger *slog.Logger
	// Addr is the listen address. Default "127.0.0.1:0".
	Addr string
}

// String summarises the options without secrets.
func (o Options) String() string {
	ids := make([]string, len(o.Credentials))
	for i, c := range o.Credentials {
		ids[i] = c.AccessKeyID
	}
	return fmt.Sprintf("Options{Credentials: %v (secrets redacted), Region: %q, Addr: %q}", ids, o.Region, o.Addr)
}

// GoString is String, so that %#v cannot print secrets either.
func (o Options) GoString() string { return o.String() }

// Server is an in-process Volcengine CLB OpenAPI endpoint. It is safe for
// concurrent use: state, faults, limits and the call log may be changed
// while clients call it.
type Server struct {
	region  string
	regions []string
	allowed map[string]bool
	now     func() time.Time
	maxSkew time.Duration
	logger  *slog.Logger

	listener  net.Listener
	http      *http.Server
	transport *http.Transport
	closed    chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex
	creds   map[string]string // access key ID -> secret
	lbs     []LoadBalancer
	lbIndex map[string]int
	faults  []*faultEntry
	buckets map[string]*bucket
	calls   []Call
	reqSeq  uint64
	idSeq   uint64
}

// NewServer starts a server on a local port. Close it when done.
func NewServer(opts *Options) (*Server, error) {
	if opts == nil {
		opts = &Options{}
	}
	s := &Server{
		region:  opts.Region,
		regions: append([]string(nil), opts.Regions...),
		allowed: allowedActionSet(opts.AllowedActions),
		now:     opts.Now,
		maxSkew: opts.MaxClockSkew,
		logger:  opts.Logger,
		closed:  make(chan struct{}),
		creds:   map[string]string{},
		lbIndex: map[string]int{},
		buckets: map[string]*bucket{},
	}
	if s.region == "" {
		s.region = DefaultRegion
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.maxSkew <= 0 {
		s.maxSkew = DefaultMaxClockSkew
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	for _, c := range opts.Credentials {
		if err := s.AddCredential(c); err != nil {
			return nil, err
		}
	}
	for action, l := range opts.RateLimits {
		s.setRateLimitLocked(action, l)
	}
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("clbtest: listen: %w", err)
	}
	s.listener = ln
	s.http = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	// Proxy stays nil: the fake is local, and HTTP(S)_PROXY must not
	// capture calls to it.
	s.transport = &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
	go func() { _ = s.http.Serve(ln) }()
	return s, nil
}

// TB is the part of testing.TB that NewTestServer uses (*testing.T and *testing.B have it),
// declared here so that programs linking the server (the CLI's demo) do not link the testing
// package.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// NewTestServer is NewServer for tests: it fails tb on error and closes the
// server when the test ends.
func NewTestServer(tb TB, opts *Options) *Server {
	tb.Helper()
	s, err := NewServer(opts)
	if err != nil {
		tb.Fatalf("clbtest.NewServer: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// Close stops the server, ending any injected delays. It is idempotent.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.closed)
		err = s.http.Close()
		s.transport.CloseIdleConnections()
	})
	return err
}

// Endpoint is the host:port to pass to volcengine.Config.WithEndpoint
// (together with WithDisableSSL(true)).
func (s *Server) Endpoint() string { return s.listener.Addr().String() }

// URL is the server's base URL, http://host:port.
func (s *Server) URL() string { return "http://" + s.Endpoint() }

// Client returns an *http.Client for volcengine.Config.WithHTTPClient that
// reaches the server directly.
//
// Why not a plain http.Client: in volcengine-go-sdk v1.1.35,
// session.ClientConfig (run by every clb.New) writes into the configured
// client: it sets a Transport when there is none and, when the Transport is
// an *http.Transport, overwrites its Proxy with HTTP_PROXY/HTTPS_PROXY,
// ignoring NO_PROXY. This client's Transport is another type, so the SDK
// leaves it alone; that also avoids a data race when clients are built
// concurrently.
func (s *Server) Client() *http.Client {
	return &http.Client{Transport: directTransport{s.transport}}
}

type directTransport struct{ t *http.Transport }

func (d directTransport) RoundTrip(r *http.Request) (*http.Response, error) { return d.t.RoundTrip(r) }

// AddCredential makes the server accept another access key; adding an
// existing ID replaces its secret (key rotation).
func (s *Server) AddCredential(c Credential) error {
	if c.AccessKeyID == "" || c.SecretAccessKey == "" {
		return errors.New("clbtest: credential needs an access key ID and a secret")
	}
	s.mu.Lock()
	s.creds[c.AccessKeyID] = c.SecretAccessKey
	s.mu.Unlock()
	return nil
}

// RemoveCredential stops accepting the access key; later calls signed with
// it fail with InvalidAccessKey.
func (s *Server) RemoveCredential(accessKeyID string) {
	s.mu.Lock()
	delete(s.creds, accessKeyID)
	s.mu.Unlock()
}

func (s *Server) secret(accessKeyID string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sk, ok := s.creds[accessKeyID]
	return sk, ok
}

// Call is one entry of the call log: every request the server answered,
// including rejected ones.
type Call struct {
	Time        time.Time
	Method      string
	Action      string
	Version     string
	Region      string // credential-scope region; "" if unparsable
	AccessKeyID string // the access key ID only, never the secret
	// Params are the request parameters without Action, Version and any
	// signing parameter (X-*), e.g. LoadBalancerIds.1=clb-x.
	Params     url.Values
	StatusCode int
	ErrorCode  string // "" on success
	RequestID  string
}

// Calls returns a copy of the call log in arrival order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, len(s.calls))
	for i, c := range s.calls {
		c.Params = cloneValues(c.Params)
		out[i] = c
	}
	return out
}

// CallsTo returns the logged calls of one action.
func (s *Server) CallsTo(action string) []Call {
	var out []Call
	for _, c := range s.Calls() {
		if c.Action == action {
			out = append(out, c)
		}
	}
	return out
}

// ResetCalls empties the call log.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	s.calls = nil
	s.mu.Unlock()
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// publicParams drops Action, Version and signing parameters, so the log
// never holds a signature or a security token.
func publicParams(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		if k == "Action" || k == "Version" || strings.HasPrefix(k, "X-") {
			continue
		}
		out[k] = append([]string(nil), vs...)
	}
	return out
}

type responseMetadata struct {
	RequestId string
	Action    string
	Version   string
	Service   string
	Region    string
	Error     *errorBody `json:",omitempty"`
}

type errorBody struct {
	CodeN   int `json:",omitempty"`
	Code    string
	Message string
}

type envelope struct {
	ResponseMetadata responseMetadata
	Result           any `json:",omitempty"`
}

func (s *Server) nextRequestID() string {
	s.mu.Lock()
	s.reqSeq++
	n := s.reqSeq
	s.mu.Unlock()
	// The cloud's IDs look like 2021081115332201042142000A01EA****: a
	// timestamp followed by hex.
	return fmt.Sprintf("%s%018X", s.now().UTC().Format("20060102150405"), n)
}

// ServeHTTP answers one OpenAPI request. The SDK sends GET with every
// parameter in the query (volcenginequery.Build; lists as Name.N from 1);
// POST with a form body is accepted too because the same encoder uses it
// for POST operations.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	requestID := s.nextRequestID()
	call := Call{Time: s.now(), Method: r.Method, RequestID: requestID}

	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes))
	params := r.URL.Query()
	var apiErr *apiError
	if err != nil {
		apiErr = newAPIError(CodeInvalidParameter, "body")
	} else if r.Method == http.MethodPost {
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/x-www-form-urlencoded" {
			form, ferr := url.ParseQuery(string(body))
			if ferr != nil {
				apiErr = newAPIError(CodeInvalidParameter, "body")
			}
			for k, vs := range form {
				params[k] = append(params[k], vs...)
			}
		}
	}
	call.Action, call.Version, call.Params = params.Get("Action"), params.Get("Version"), publicParams(params)

	var result any
	var fault Fault
	var faulted bool
	if apiErr == nil && r.Method != http.MethodGet && r.Method != http.MethodPost {
		apiErr = newAPIError(CodeMethodNotAllowed, r.Method)
	}
	if apiErr == nil {
		call.AccessKeyID, call.Region, apiErr = s.authenticate(r, body)
	}
	handler := actions[call.Action]
	if apiErr == nil {
		switch {
		case call.Action == "":
			apiErr = newAPIError(CodeMissingParameter, "Action")
		case call.Version == "":
			apiErr = newAPIError(CodeMissingParameter, "Version")
		case handler == nil || call.Version != APIVersion:
			apiErr = newAPIError(CodeInvalidActionOrVersion, call.Action, call.Version)
		}
	}
	if apiErr == nil {
		apiErr = s.authorize(call.Action, call.Region)
	}
	if apiErr == nil {
		fault, faulted = s.takeFault(call.Action)
		if faulted {
			s.sleep(r, fault.Delay)
			apiErr = faultError(fault)
		}
	}
	if apiErr == nil && faulted && fault.Body != nil {
		status := fault.Status
		if status == 0 {
			status = http.StatusBadGateway
		}
		call.StatusCode = status
		s.record(call)
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		_, _ = w.Write(fault.Body)
		return
	}
	if apiErr == nil {
		apiErr = s.allow(call.Action)
	}
	if apiErr == nil {
		result, apiErr = handler(s, call.Region, params, requestID)
	}

	region := call.Region
	if region == "" {
		region = s.region
	}
	env := envelope{ResponseMetadata: responseMetadata{
		RequestId: requestID,
		Action:    call.Action,
		Version:   call.Version,
		Service:   serviceName,
		Region:    region,
	}}
	call.StatusCode = http.StatusOK
	if apiErr != nil {
		env.ResponseMetadata.Error = &errorBody{CodeN: apiErr.codeN, Code: apiErr.code, Message: apiErr.message}
		call.StatusCode, call.ErrorCode = apiErr.status, apiErr.code
	} else {
		env.Result = result
	}
	s.record(call)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(call.StatusCode)
	_ = json.NewEncoder(w).Encode(env)
}

func (s *Server) record(c Call) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
	s.logger.Debug("clbtest request",
		"action", c.Action,
		"region", c.Region,
		"access_key_id", c.AccessKeyID,
		"status", c.StatusCode,
		"error_code", c.ErrorCode,
		"request_id", c.RequestID)
}
