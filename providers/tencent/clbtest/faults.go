package clbtest

import (
	"fmt"
	"net/http"
	"time"
)

// AnyAction makes InjectFault match every action. Faults for a named action are used
// before AnyAction faults.
const AnyAction = "*"

// Fault is a scripted misbehaviour for the next calls of an action. It applies after the
// signature is verified, so a faulted call is one the cloud accepted and then failed.
// The fields combine: Delay is waited first, then the first set of HTTPStatus, Code and
// FailTask decides the answer. A Fault with only Delay set slows a call that then runs
// normally. A fault is used up by the call it applies to, whatever that call's outcome
// (a FailTask fault spent on a write refused for a bad parameter is gone).
type Fault struct {
	// Delay is real (wall-clock) time to wait before answering; the SDK's own timeout
	// (HttpProfile.ReqTimeout) applies to it.
	Delay time.Duration
	// HTTPStatus, when non-zero, answers with this status instead of an API response.
	// HTTPBody is the body sent with it; empty means a JSON object without an "Error",
	// for which SDK v1.3.156 reports ClientError.HttpStatusCodeError (docs/sources.md#cloud-apis).
	// The SDK parses the body before it looks at the status (common/ratelimitretry.go
	// TryReadErr), so a non-JSON body, such as a proxy's HTML error page, surfaces as
	// ClientError.ParseJsonError instead, and a JSON body with an "Error" surfaces as that
	// error's code whatever the status.
	HTTPStatus int
	HTTPBody   string
	// Code and Message answer with an API error inside an HTTP 200 body.
	Code    string
	Message string
	// FailTask makes a write succeed synchronously and its task end with Status 1 and
	// this message; nothing is applied. It has no effect on read actions.
	FailTask string
	// Drop runs the call to the end, as it would without the fault (a write is accepted and
	// its task started), and then closes the connection without sending the answer, as a
	// dropped connection or a proxy timing out does. The SDK reports
	// ClientError.NetworkError; the client cannot tell whether the write happened. The call
	// is recorded with Dropped set. It applies only when no other field answers instead.
	Drop bool
}

// ErrorFault answers with an API error code.
func ErrorFault(code, message string) Fault { return Fault{Code: code, Message: message} }

// ThrottleFault answers as an exceeded frequency limit. code is RequestLimitExceeded or
// one of its sub-codes (CodeUinLimitExceeded, ...); empty means RequestLimitExceeded.
// The SDK retries only the exact code RequestLimitExceeded, and only when
// ClientProfile.RateLimitExceededMaxRetries > 0 (docs/sources.md#tke-clb-api).
func ThrottleFault(code string) Fault {
	if code == "" {
		code = CodeRequestLimitExceeded
	}
	return Fault{Code: code, Message: throttleMessage(DefaultRateLimit+1, DefaultRateLimit)}
}

// HTTPFault answers with an HTTP status (typically 5xx) instead of an API response; the
// SDK reports ClientError.HttpStatusCodeError.
func HTTPFault(status int) Fault { return Fault{HTTPStatus: status} }

// DelayFault waits d before answering normally.
func DelayFault(d time.Duration) Fault { return Fault{Delay: d} }

// DropFault answers nothing: the call runs, then the connection is closed (see Fault.Drop).
func DropFault() Fault { return Fault{Drop: true} }

// FailedTaskFault makes the next writes' tasks fail with message.
func FailedTaskFault(message string) Fault { return Fault{FailTask: message} }

type scriptedFault struct {
	fault Fault
	left  int // < 0: until ClearFaults
}

// InjectFault scripts f for the next times calls of action (or AnyAction). times <= 0
// means every call until ClearFaults. Faults queue in the order they were injected.
func (s *Server) InjectFault(action string, times int, f Fault) {
	if times <= 0 {
		times = -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[action] = append(s.faults[action], &scriptedFault{fault: f, left: times})
}

// ClearFaults drops every scripted fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.faults)
}

// takeFaultLocked consumes one use of the first fault scripted for action.
func (s *Server) takeFaultLocked(action string) *Fault {
	for _, key := range []string{action, AnyAction} {
		q := s.faults[key]
		if len(q) == 0 {
			continue
		}
		sf := q[0]
		f := sf.fault
		if sf.left > 0 {
			sf.left--
			if sf.left == 0 {
				s.faults[key] = q[1:]
			}
		}
		return &f
	}
	return nil
}

// faultBody is the default body of an injected HTTP status: JSON the SDK can parse but
// that holds no error code, so the status is what it reports.
func faultBody(status int) string {
	return fmt.Sprintf(`{"clbtest":"injected HTTP %d %s"}`, status, http.StatusText(status))
}
