package clbtest

import "fmt"

// DefaultRateLimit is CLB's default frequency limit: 20 requests per second per API
// action (docs/sources.md#tke-clb-api, Tencent API docs 214/33789).
const DefaultRateLimit = 20

// Unlimited turns a rate limit off (Options.RateLimit, Options.ActionRateLimits).
const Unlimited = -1

// rateWindow counts one action's requests in one clock second. The real message says
// "in a second", and a fixed window keyed on the injectable clock is deterministic.
type rateWindow struct {
	second int64
	count  int
}

func (s *Server) limitFor(action string) int {
	if n, ok := s.actionRateLimits[action]; ok && n != 0 {
		return n
	}
	return s.rateLimit
}

// throttleLocked counts a request and reports whether it exceeds the limit.
func (s *Server) throttleLocked(action string, unix int64) *apiError {
	limit := s.limitFor(action)
	if limit < 0 {
		return nil
	}
	w := s.windows[action]
	if w == nil || w.second != unix {
		w = &rateWindow{second: unix}
		s.windows[action] = w
	}
	w.count++
	if w.count > limit {
		return &apiError{Code: CodeRequestLimitExceeded, Message: throttleMessage(w.count, limit)}
	}
	return nil
}

// throttleMessage is the wording real API 3.0 responses carry (seen in public logs, e.g.
// "Your current request times equals to `21` in a second, which exceeds the frequency
// limit `20` for a second. Please reduce the frequency of calls.").
func throttleMessage(count, limit int) string {
	return fmt.Sprintf("Your current request times equals to `%d` in a second, which exceeds the frequency limit `%d` for a second. Please reduce the frequency of calls.", count, limit)
}
