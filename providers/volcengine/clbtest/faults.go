package clbtest

import (
	"net/http"
	"time"
)

// Fault scripts one misbehaviour of the cloud. Faults apply to requests that
// passed signature verification (a bad signature is always answered as the
// cloud answers it) and name a known action, in the order they were
// injected; the first one whose Action matches is used.
//
// What the server sends:
//   - Body != nil: Body as is, with Status (default 502) and Content-Type
//     text/html, as a proxy in front of the API would; the SDK then fails to
//     decode it and returns a plain error, not a RequestFailure.
//   - Code != "": the cloud's error envelope with Code, Message (default: the
//     code's usual message) and Status (default HTTPStatus(Code)). A Status
//     below 300 reproduces the "HTTP 200 with Error.Code" shape, which the
//     SDK also turns into a RequestFailure.
//   - Status != 0 alone: the envelope with the gateway code for that status
//     (429 FlowLimitExceeded, 500 InternalError, 502 InternalServiceError,
//     503 ServiceUnavailableTemp, 504 InternalServiceTimeout).
//   - none of these: only Delay; the call then succeeds normally.
//
// Delay is waited before answering, whatever the answer; it ends early when
// the client gives up or the server closes.
type Fault struct {
	Action  string // "" matches every action
	Code    string
	Message string
	Status  int
	Body    []byte
	Delay   time.Duration
	Times   int // how many calls it applies to; 0 means until removed
}

type faultEntry struct {
	Fault
	used int
}

// InjectFault adds f and returns a function that removes it.
func (s *Server) InjectFault(f Fault) (remove func()) {
	e := &faultEntry{Fault: f}
	if f.Body != nil {
		e.Body = append([]byte{}, f.Body...) // the caller may reuse its slice
	}
	s.mu.Lock()
	s.faults = append(s.faults, e)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, x := range s.faults {
			if x == e {
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
				return
			}
		}
	}
}

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

// takeFault returns the fault for action, using up one of its Times.
func (s *Server) takeFault(action string) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range s.faults {
		if e.Action != "" && e.Action != action {
			continue
		}
		e.used++
		if e.Times > 0 && e.used >= e.Times {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
		}
		return e.Fault, true
	}
	return Fault{}, false
}

// faultError is the envelope error f asks for, or nil for latency-only and
// raw-body faults.
func faultError(f Fault) *apiError {
	switch {
	case f.Body != nil:
		return nil
	case f.Code != "":
		e := &apiError{status: HTTPStatus(f.Code), code: f.Code, message: f.Code}
		if info, known := codes[f.Code]; known {
			e.codeN = info.codeN
			// A template with verbs needs arguments a fault does not carry.
			if !containsVerb(info.message) {
				e.message = info.message
			}
		}
		if f.Message != "" {
			e.message = f.Message
		}
		if f.Status != 0 {
			e.status = f.Status
		}
		return e
	case f.Status != 0:
		e := faultError(Fault{Code: codeForStatus(f.Status), Message: f.Message})
		e.status = f.Status
		return e
	}
	return nil
}

func containsVerb(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '%' && s[i+1] != '%' {
			return true
		}
	}
	return false
}

// RateLimit is a token bucket: PerSecond tokens are added each second, up to
// Burst (at least 1), and each call takes one. The bucket runs on the
// server's clock (Options.Now), so a test with a fake clock controls refill.
// A call that finds the bucket empty is refused with Code (default
// CodeAccountFlowLimitExceeded, the per-account per-API limit).
type RateLimit struct {
	PerSecond float64
	Burst     int
	Code      string
}

type bucket struct {
	limit  RateLimit
	tokens float64
	last   time.Time
}

// SetRateLimit limits calls of action; PerSecond <= 0 removes the limit.
func (s *Server) SetRateLimit(action string, l RateLimit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setRateLimitLocked(action, l)
}

func (s *Server) setRateLimitLocked(action string, l RateLimit) {
	if l.PerSecond <= 0 {
		delete(s.buckets, action)
		return
	}
	if l.Burst < 1 {
		l.Burst = 1
	}
	if l.Code == "" {
		l.Code = CodeAccountFlowLimitExceeded
	}
	s.buckets[action] = &bucket{limit: l, tokens: float64(l.Burst), last: s.now()}
}

// allow takes a token for action, or returns the throttling error.
func (s *Server) allow(action string) *apiError {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.buckets[action]
	if !ok {
		return nil
	}
	now := s.now()
	if elapsed := now.Sub(b.last).Seconds(); elapsed > 0 {
		b.tokens += elapsed * b.limit.PerSecond
		if max := float64(b.limit.Burst); b.tokens > max {
			b.tokens = max
		}
	}
	b.last = now
	if b.tokens < 1 {
		if b.limit.Code == CodeAccountFlowLimitExceeded {
			return newAPIError(CodeAccountFlowLimitExceeded, action)
		}
		return faultError(Fault{Code: b.limit.Code})
	}
	b.tokens--
	return nil
}

// sleep waits d, or less if the request is cancelled or the server closes.
func (s *Server) sleep(r *http.Request, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	case <-s.closed:
	}
}
