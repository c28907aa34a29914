package clbtest

import (
	"maps"
	"slices"
	"time"
)

// Call is one request the server answered, for tests to assert on (for example that a
// second, idempotent run made no write). It never holds a secret key, a token or a
// signature; certificate material in parameters is redacted.
type Call struct {
	Time      time.Time
	Action    string
	Region    string
	SecretID  string
	RequestID string
	// Params are the request parameters, flattened the way the SDK flattens GET requests
	// ("ListenerIds.0", "HealthCheck.SourceIpType"); values are strings.
	Params map[string]string
	// Write is true for actions that change state (and start a task).
	Write bool
	// ErrorCode is empty when the call succeeded.
	ErrorCode string
	// HTTPStatus is 200 unless a fault injected another status.
	HTTPStatus int
	// Dropped is true when a Drop fault closed the connection instead of answering: the
	// call ran (a write among them was accepted) but the client got no answer.
	Dropped bool
}

// Param returns one parameter, or "".
func (c Call) Param(key string) string { return c.Params[key] }

// Calls returns every call so far, oldest first.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, len(s.calls))
	for i, c := range s.calls {
		c.Params = maps.Clone(c.Params)
		out[i] = c
	}
	return out
}

// Writes returns the write calls the server accepted (each started a task; a task can
// still fail), including those whose answer a Drop fault kept from the client. An
// idempotent second run of a provider should add none.
func (s *Server) Writes() []Call {
	return slices.DeleteFunc(s.Calls(), func(c Call) bool {
		return !c.Write || c.ErrorCode != "" || c.HTTPStatus != 200
	})
}

// ResetCalls forgets the call log.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}
