package campaign_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	tcclbtest "github.com/loopguard/loopguard/providers/tencent/clbtest"
	vkeclbtest "github.com/loopguard/loopguard/providers/volcengine/clbtest"
)

// dice is the campaign's one source of randomness, seeded, shared by every transport. The
// campaign runs one call at a time, so the sequence of draws, and with it the run, follows
// from the seed.
type dice struct {
	mu sync.Mutex
	r  *rand.Rand
}

func newDice(seed uint64) *dice {
	return &dice{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// chance reports true with probability p.
func (d *dice) chance(p float64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.r.Float64() < p
}

// intn returns a number in [0, n).
func (d *dice) intn(n int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.r.IntN(n)
}

// timeoutError is what a client sees when the API server does not answer in time.
type timeoutError struct{ after bool }

func (e timeoutError) Error() string {
	if e.after {
		return "campaign: the answer timed out after the request was sent"
	}
	return "campaign: the request timed out before it reached the server"
}
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// tally counts what the campaign did and saw. Only the test goroutine and the transports it
// calls touch it, one call at a time; the mutex keeps the race detector content anyway.
type tally struct {
	mu sync.Mutex

	reconciles, restarts, converged int
	hostFailures                    int

	cloudFaults map[string]int
	kubeFaults  map[string]int

	// Writes that reached a server and took (kube: a 2xx answer; CLB: accepted).
	kubeWrites, cloudWrites int
	// Writes the fleet needs: from each object's first plan, plus a write after each
	// failed task.
	needed int
	// Ambiguous: a write made whose answer the client did not get, or a stop right after a
	// write (the next run cannot know whether it took before it looks).
	ambiguous int
}

func newTally() *tally {
	return &tally{cloudFaults: map[string]int{}, kubeFaults: map[string]int{}}
}

func (t *tally) add(f func(*tally)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f(t)
}

func (t *tally) faults() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, v := range t.cloudFaults {
		n += v
	}
	for _, v := range t.kubeFaults {
		n += v
	}
	return n
}

// stopper cancels the running incarnation of the reconciler right after a write, at random:
// "stopped between two writes". The next reconcile then starts from scratch.
type stopper struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	p      float64
	dice   *dice
	tally  *tally
	off    bool
}

func (s *stopper) set(cancel context.CancelFunc) {
	s.mu.Lock()
	s.cancel = cancel
	s.mu.Unlock()
}

// afterWrite is called by the transports once a write took; it reports whether it stopped
// the reconciler.
func (s *stopper) afterWrite() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off || s.cancel == nil || !s.dice.chance(s.p) {
		return false
	}
	s.cancel()
	s.cancel = nil
	return true
}

// ---- the API server ----

// kubeFaults wraps loopguard's transport to the API server: it counts loopguard's writes,
// times requests out (before sending, or after a write was made), and lets the concurrent
// writer race loopguard's writes.
type kubeFaults struct {
	next    http.RoundTripper
	dice    *dice
	tally   *tally
	stop    *stopper
	foreign *foreignWriter
	// on is false while the campaign measures or checks: then requests pass untouched.
	on *bool
	// pBefore, pAfter: timeout probabilities per request; pRace: a foreign edit just
	// before a write of a fleet object.
	pBefore, pAfter, pRace float64
}

func isWrite(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

func (k *kubeFaults) RoundTrip(req *http.Request) (*http.Response, error) {
	write := isWrite(req.Method)
	if !*k.on {
		resp, err := k.next.RoundTrip(req)
		if err == nil && write && resp.StatusCode < 300 {
			k.tally.add(func(t *tally) { t.kubeWrites++ })
		}
		return resp, err
	}
	if write && k.dice.chance(k.pRace) && k.foreign.race(req.Context(), req.URL.Path) {
		k.tally.add(func(t *tally) { t.kubeFaults["concurrent write"]++ })
	}
	if k.dice.chance(k.pBefore) {
		k.tally.add(func(t *tally) { t.kubeFaults["timeout before sending"]++ })
		return nil, timeoutError{}
	}
	resp, err := k.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	took := write && resp.StatusCode < 300
	if took {
		k.tally.add(func(t *tally) { t.kubeWrites++ })
	}
	if k.dice.chance(k.pAfter) {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		k.tally.add(func(t *tally) {
			t.kubeFaults["timeout after sending"]++
			if took {
				t.ambiguous++
			}
		})
		return nil, timeoutError{after: true}
	}
	if took && k.stop.afterWrite() {
		k.tally.add(func(t *tally) { t.ambiguous++ })
	}
	return resp, nil
}

// ---- the Tencent CLB API ----

// tencentWrites are the clbtest actions that write (and start a task).
var tencentWrites = map[string]bool{"ModifyListener": true, "CreateListener": true, "CreateLoadBalancer": true, "DeleteLoadBalancer": true}

// tencentFaults wraps the SDK client's transport: before a call it scripts, at random, one
// fault for exactly that call on the server (InjectFault, once), and after it counts the
// writes the server accepted.
type tencentFaults struct {
	next  http.RoundTripper
	srv   *tcclbtest.Server
	dice  *dice
	tally *tally
	stop  *stopper
	on    *bool
	p     float64
}

func (f *tencentFaults) RoundTrip(req *http.Request) (*http.Response, error) {
	action := req.Header.Get("X-TC-Action")
	write := tencentWrites[action]
	if *f.on && f.dice.chance(f.p) {
		name, fault := f.pick(write)
		f.srv.InjectFault(action, 1, fault)
		f.tally.add(func(t *tally) {
			t.cloudFaults[name]++
			if write && fault.FailTask != "" {
				t.needed++ // the write is accepted, its task fails: one more is needed
			}
		})
	}
	before := len(f.srv.Writes())
	resp, err := f.next.RoundTrip(req)
	accepted := len(f.srv.Writes()) - before
	if accepted > 0 {
		// A write the client got no answer to, or a stop right after it, is ambiguous: the
		// next attempt cannot know it took before it looks.
		stopped := f.stop.afterWrite()
		f.tally.add(func(t *tally) {
			t.cloudWrites += accepted
			if err != nil || stopped {
				t.ambiguous++
			}
		})
	}
	return resp, err
}

// pick chooses a fault kind. Half of the faults of a write are the ones only writes have: a
// failed task, a busy load balancer, an answer lost after the write was accepted.
func (f *tencentFaults) pick(write bool) (string, tcclbtest.Fault) {
	if write && f.dice.chance(0.5) {
		switch f.dice.intn(3) {
		case 0:
			return "dropped connection", tcclbtest.DropFault()
		case 1:
			return "failed task", tcclbtest.FailedTaskFault("the backend could not apply the change")
		default:
			return "resource in operating", tcclbtest.ErrorFault(tcclbtest.CodeResourceInOperating, "The specified resource is currently being operated. Please try again later.")
		}
	}
	switch f.dice.intn(5) {
	case 0:
		return "throttled", tcclbtest.ThrottleFault("")
	case 1:
		status := []int{500, 502, 503}[f.dice.intn(3)]
		return "HTTP 5xx", tcclbtest.HTTPFault(status)
	case 2:
		return "internal error", tcclbtest.ErrorFault("InternalError", "An internal error has occurred. Retry your request.")
	case 3:
		return "latency", tcclbtest.DelayFault(time.Duration(1+f.dice.intn(10)) * time.Millisecond)
	default:
		return "dropped connection", tcclbtest.DropFault()
	}
}

// ---- the Volcengine CLB API ----

// volcengineFaults is tencentFaults for the Volcengine server, whose calls (all reads) carry
// the action in the query.
type volcengineFaults struct {
	next  http.RoundTripper
	srv   *vkeclbtest.Server
	dice  *dice
	tally *tally
	on    *bool
	p     float64
}

func (f *volcengineFaults) RoundTrip(req *http.Request) (*http.Response, error) {
	action := req.URL.Query().Get("Action")
	if *f.on && f.dice.chance(f.p) {
		var name string
		fault := vkeclbtest.Fault{Action: action, Times: 1}
		switch f.dice.intn(3) {
		case 0:
			name, fault.Code = "throttled", "FlowLimitExceeded"
		case 1:
			name, fault.Status = "HTTP 5xx", []int{500, 502, 503, 504}[f.dice.intn(4)]
		default:
			name, fault.Delay = "latency", time.Duration(1+f.dice.intn(10))*time.Millisecond
		}
		f.srv.InjectFault(fault)
		f.tally.add(func(t *tally) { t.cloudFaults[name]++ })
	}
	return f.next.RoundTrip(req)
}

// summary lists counts by kind, largest first then by name, for the test log.
func summary(m map[string]int) string {
	type kv struct {
		k string
		v int
	}
	var kvs []kv
	for k, v := range m {
		kvs = append(kvs, kv{k, v})
	}
	for i := range kvs {
		for j := i + 1; j < len(kvs); j++ {
			if kvs[j].v > kvs[i].v || kvs[j].v == kvs[i].v && kvs[j].k < kvs[i].k {
				kvs[i], kvs[j] = kvs[j], kvs[i]
			}
		}
	}
	parts := make([]string, len(kvs))
	for i, e := range kvs {
		parts[i] = fmt.Sprintf("%d %s", e.v, e.k)
	}
	return strings.Join(parts, ", ")
}
