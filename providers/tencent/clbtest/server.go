package clbtest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Defaults for a zero Options.
const (
	// DefaultSecretID and DefaultSecretKey are the credential the server accepts when
	// Options.Credentials is empty. They are test values, not secrets.
	DefaultSecretID  = "AKIDclbtest0000000000000000000000000"
	DefaultSecretKey = "clbtest-secret-key-00000000000000"
	// DefaultRegion is the region of load balancers seeded without one.
	DefaultRegion = "ap-guangzhou"
	// APIVersion is the only version served (clb 2018-03-17).
	APIVersion = "2018-03-17"
)

// maxBodyBytes bounds a request body; larger ones get RequestSizeLimitExceeded.
const maxBodyBytes = 10 << 20

// Options configures a Server. A nil *Options is the zero value: the default credential,
// tasks that complete at once, 20 requests/second per action, no allowlist, synchronous
// denials, time.Now and no logging.
type Options struct {
	// Credentials are the accepted keys; empty means one key, DefaultSecretID and
	// DefaultSecretKey.
	Credentials []Credential

	// Now is the server's clock; nil means time.Now. It decides signature expiry, when
	// tasks complete and rate-limit windows. See ManualClock.
	Now func() time.Time
	// MaxSkew is the allowed distance between X-TC-Timestamp and Now; zero means
	// DefaultMaxSkew.
	MaxSkew time.Duration

	// TaskDuration is how long each write's task runs before its change becomes visible
	// and the load balancer accepts other writes. Zero completes tasks at once (the next
	// request sees them done).
	TaskDuration time.Duration
	// TaskDurationMax, when greater than TaskDuration, makes each write's task run for a
	// uniformly drawn time between TaskDuration and TaskDurationMax: a real CLB's tasks take
	// from about one to a few seconds, not one fixed time.
	TaskDurationMax time.Duration

	// RateLimit is requests per second per action; zero means DefaultRateLimit, Unlimited
	// turns it off. ActionRateLimits overrides it for single actions (zero entries are
	// ignored).
	RateLimit        int
	ActionRateLimits map[string]int

	// Allowlist lists the capabilities the account has been granted. Empty means none,
	// like a fresh account: enabling SNAT or Keep Alive is refused (see Denial).
	Allowlist []Capability
	// Denial says how a refused write fails; the zero value is DenySync with
	// DefaultDenialCode (UNCONFIRMED, see Denial).
	Denial Denial

	// AllowedActions is the CAM policy of every accepted credential: the API actions it may
	// call, as "ModifyListener", "clb:ModifyListener" or "clb:*". Nil allows every action;
	// an empty, non-nil list allows none. Any other action is answered with
	// AuthFailure.UnauthorizedOperation naming the CAM action, before it changes anything.
	AllowedActions []string
	// Regions are the regions the endpoint serves; a call for another region is answered
	// with UnsupportedRegion. Empty serves every region.
	Regions []string

	// Logger receives one debug record per call (action, region, request id, code).
	// Nothing secret is ever logged. Nil discards.
	Logger *slog.Logger
}

// Server is an in-process Tencent Cloud API 3.0 endpoint for the CLB actions a loopguard
// provider uses. It is an http.Handler; Start also serves it on a loopback port. All
// methods are safe for concurrent use.
type Server struct {
	now              func() time.Time
	maxSkew          time.Duration
	creds            map[string]Credential
	log              *slog.Logger
	rateLimit        int
	actionRateLimits map[string]int
	allowedActions   map[string]bool
	regions          []string

	mu           sync.Mutex
	seq          int64
	lbs          map[string]*lbRecord
	listeners    map[string]*listenerRecord
	tasks        map[string]*task
	taskOrder    []string
	taskDuration time.Duration
	taskMax      time.Duration
	allow        map[Capability]bool
	denial       Denial
	windows      map[string]*rateWindow
	faults       map[string][]*scriptedFault
	calls        []Call
	// creating holds, per CreateLoadBalancer task, the instances it creates; clientTokens
	// the IDs a ClientToken was answered with.
	creating     map[string][]LoadBalancer
	clientTokens map[string][]string

	httpServer *http.Server
	listener   net.Listener
	served     chan struct{}
}

// New returns a Server that is only an http.Handler: mount it on your own listener or
// httptest.Server. Use Start for one that listens by itself.
func New(opts *Options) *Server {
	if opts == nil {
		opts = &Options{}
	}
	s := &Server{
		now:              opts.Now,
		maxSkew:          opts.MaxSkew,
		creds:            map[string]Credential{},
		log:              opts.Logger,
		rateLimit:        opts.RateLimit,
		actionRateLimits: map[string]int{},
		allowedActions:   allowedActionSet(opts.AllowedActions),
		regions:          append([]string(nil), opts.Regions...),
		lbs:              map[string]*lbRecord{},
		listeners:        map[string]*listenerRecord{},
		tasks:            map[string]*task{},
		taskDuration:     max(opts.TaskDuration, 0),
		taskMax:          opts.TaskDurationMax,
		allow:            map[Capability]bool{},
		denial:           opts.Denial,
		windows:          map[string]*rateWindow{},
		faults:           map[string][]*scriptedFault{},
		creating:         map[string][]LoadBalancer{},
		clientTokens:     map[string][]string{},
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.maxSkew <= 0 {
		s.maxSkew = DefaultMaxSkew
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.rateLimit == 0 {
		s.rateLimit = DefaultRateLimit
	}
	for action, n := range opts.ActionRateLimits {
		s.actionRateLimits[action] = n
	}
	creds := opts.Credentials
	if len(creds) == 0 {
		creds = []Credential{{SecretID: DefaultSecretID, SecretKey: DefaultSecretKey}}
	}
	for _, c := range creds {
		s.creds[c.SecretID] = c
	}
	for _, c := range opts.Allowlist {
		s.allow[c] = true
	}
	return s
}

// Start returns a Server listening on 127.0.0.1 on a free port. Point the SDK at it with
// HttpProfile.Endpoint = s.Endpoint() and HttpProfile.Scheme = "HTTP". Close stops it.
func Start(opts *Options) (*Server, error) {
	s := New(opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.listener = ln
	s.httpServer = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.served = make(chan struct{})
	go func() {
		defer close(s.served)
		_ = s.httpServer.Serve(ln)
	}()
	return s, nil
}

// Endpoint is "127.0.0.1:PORT" for a started Server and "" for one made by New.
func (s *Server) Endpoint() string {
	if s.listener == nil {
		return ""
	}
	return s.listener.Addr().String()
}

// Close stops a started Server and waits for it; it is a no-op for one made by New.
func (s *Server) Close() error {
	if s.httpServer == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.httpServer.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.httpServer.Close()
	}
	<-s.served
	return err
}

// SetTaskDuration changes how long the next writes' tasks run: d each, with no spread
// (Options.TaskDurationMax no longer applies).
func (s *Server) SetTaskDuration(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taskDuration = max(d, 0)
	s.taskMax = 0
}

// request is what a handler sees of one call.
type request struct {
	action    string
	region    string
	requestID string
	now       time.Time
	fault     *Fault
	drop      bool // a Drop fault: serve, then close the connection unanswered
}

// ServeHTTP answers one API 3.0 call. Every answer is HTTP 200 with a JSON body
// {"Response":{...,"RequestId"}} (errors inside "Error"), except injected HTTP faults.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := &request{
		action:    r.Header.Get("X-TC-Action"),
		region:    r.Header.Get("X-TC-Region"),
		requestID: newRequestID(),
		now:       s.now(),
	}
	call := Call{Time: req.now, Action: req.action, Region: req.region, RequestID: req.requestID, Write: writeActions[req.action], HTTPStatus: http.StatusOK}

	result, apiErr, fault := s.serve(r, req, &call)
	if req.drop {
		call.Dropped = true
		if apiErr != nil {
			call.ErrorCode = apiErr.Code
		}
		s.record(call)
		dropConnection(w)
		return
	}
	switch {
	case fault != nil:
		call.HTTPStatus = fault.HTTPStatus
		body := fault.HTTPBody
		if body == "" {
			body = faultBody(fault.HTTPStatus)
			w.Header().Set("Content-Type", "application/json")
		} else {
			w.Header().Set("Content-Type", http.DetectContentType([]byte(body)))
		}
		w.WriteHeader(fault.HTTPStatus)
		_, _ = io.WriteString(w, body)
	case apiErr != nil:
		call.ErrorCode = apiErr.Code
		writeJSON(w, map[string]any{"Response": map[string]any{
			"Error":     map[string]string{"Code": apiErr.Code, "Message": apiErr.Message},
			"RequestId": req.requestID,
		}})
	default:
		writeJSON(w, map[string]any{"Response": result})
	}

	s.record(call)
}

func (s *Server) record(call Call) {
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.mu.Unlock()
	s.log.Debug("clbtest call", "action", call.Action, "region", call.Region, "secret_id", call.SecretID,
		"request_id", call.RequestID, "code", call.ErrorCode, "http_status", call.HTTPStatus, "dropped", call.Dropped)
}

// dropConnection closes the client's connection without an answer. Where the connection
// cannot be taken over (a ResponseWriter without http.Hijacker), the handler aborts, which
// net/http's server also answers by closing the connection.
func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "clbtest: cannot encode response", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// serve runs the pipeline: protocol, body, signature, version/action/region, parameters,
// scripted faults, rate limit, then the action itself.
// The third result is set when a fault replaces the API response with an HTTP status.
func (s *Server) serve(r *http.Request, req *request, call *Call) (any, *apiError, *Fault) {
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		return nil, errorf(CodeUnsupportedProtocol, "Only GET and POST requests are supported."), nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, errorf(CodeInternalError, "clbtest could not read the request body."), nil
	}
	if len(body) > maxBodyBytes {
		return nil, errorf(CodeRequestSizeLimitExceeded, "The request body is larger than %d bytes.", maxBodyBytes), nil
	}
	call.Params = flattenForLog(r.Method, body, r.URL.Query())

	secretID, apiErr := s.authenticate(r, body, req.now)
	call.SecretID = secretID
	if apiErr != nil {
		return nil, apiErr, nil
	}

	switch version := r.Header.Get("X-TC-Version"); {
	case req.action == "":
		return nil, missing("Action"), nil
	case version == "":
		return nil, missing("Version"), nil
	case version != APIVersion:
		return nil, errorf(CodeNoSuchVersion, "The API version `%s` does not exist; clb serves %s.", version, APIVersion), nil
	}
	h, ok := handlers[req.action]
	if !ok {
		return nil, errorf(CodeInvalidAction, "The action `%s` is not implemented by clbtest (clb %s).", req.action, APIVersion), nil
	}
	if req.region == "" {
		return nil, missing("Region"), nil
	}
	if apiErr := s.authorize(req); apiErr != nil {
		return nil, apiErr, nil
	}
	if r.Method == http.MethodPost && !isJSON(r.Header.Get("Content-Type")) {
		return nil, errorf(CodeInvalidParameter, "POST requests must carry Content-Type application/json."), nil
	}
	params := h.newParams()
	if apiErr := decodeParams(r.Method, body, r.URL.Query(), params); apiErr != nil {
		return nil, apiErr, nil
	}

	s.mu.Lock()
	fault := s.takeFaultLocked(req.action)
	s.mu.Unlock()
	if fault != nil {
		if fault.Delay > 0 {
			t := time.NewTimer(fault.Delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
			}
		}
		switch {
		case fault.HTTPStatus != 0:
			return nil, nil, fault
		case fault.Code != "":
			return nil, &apiError{Code: fault.Code, Message: fault.Message}, nil
		case fault.FailTask != "":
			req.fault = fault
		case fault.Drop:
			req.drop = true
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if apiErr := s.throttleLocked(req.action, req.now.Unix()); apiErr != nil {
		return nil, apiErr, nil
	}
	s.settleLocked()
	result, apiErr := h.serve(s, req, params)
	return result, apiErr, nil
}

func isJSON(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.TrimSpace(mt) == "application/json"
}
