package cloudprovider

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/lru"
)

// The service controller syncs a Service on every change of it, on every restart and on node
// changes; a decorator that recorded its Events on every sync would repeat the same advice
// over and over. So the decorator records each Event once per change, the way the upstream
// event correlator keys an Event (k8s.io/client-go tools/record events_cache.go getEventKey:
// the object, its UID, the type, the reason and the message) and keeps at most
// maxLruCacheEntries objects in an LRU cache (the same bound):
//   - an EnsureLoadBalancer sync sees the whole decision: the Events it would record that the
//     Service's previous sync recorded are not recorded again, and an Event the previous sync
//     recorded that this one does not is forgotten (its condition cleared), so it is recorded
//     anew should the condition come back;
//   - an UpdateLoadBalancer sync (the nodes changed) sees only the load-balancer part, so it
//     forgets nothing;
//   - deleting the Service forgets it.
//
// The host's recorder still runs its own correlator over what is recorded.
const maxEventLogEntries = 4096

// eventLog remembers, per Service, the Events its last syncs recorded.
type eventLog struct {
	mu   sync.Mutex
	last *lru.Cache // serviceID → map[eventKey]struct{}
}

func newEventLog() *eventLog { return &eventLog{last: lru.New(maxEventLogEntries)} }

// serviceID names one Service object: a Service deleted and created again under the same
// name is another object (another UID), whose Events start afresh.
type serviceID struct{ ns, name, uid string }

func idOf(svc *corev1.Service) serviceID {
	return serviceID{svc.Namespace, svc.Name, string(svc.UID)}
}

// eventKey is what makes two Events of one Service the same.
type eventKey struct{ typ, reason, msg string }

// syncEvents records the Events of one sync of one Service.
type syncEvents struct {
	c     *cloud
	svc   *corev1.Service
	full  bool // an EnsureLoadBalancer sync: it sees every Event the decision gives
	prior map[eventKey]struct{}
	seen  map[eventKey]struct{}
}

// begin starts a sync of svc; full is true for EnsureLoadBalancer.
func (c *cloud) begin(svc *corev1.Service, full bool) *syncEvents {
	s := &syncEvents{c: c, svc: svc, full: full, seen: map[eventKey]struct{}{}}
	l := c.events
	l.mu.Lock()
	if v, ok := l.last.Get(idOf(svc)); ok {
		s.prior = v.(map[eventKey]struct{})
	}
	l.mu.Unlock()
	return s
}

// event records an Event unless the Service's previous syncs recorded it already.
func (s *syncEvents) event(typ, reason, msg string) {
	k := eventKey{typ, reason, msg}
	if _, done := s.seen[k]; done {
		return
	}
	s.seen[k] = struct{}{}
	if _, before := s.prior[k]; before {
		return
	}
	if r := s.c.opts.recorder; r != nil {
		r.Event(s.svc, typ, reason, msg)
	}
}

// end remembers what this sync recorded: in place of the previous sync's Events after a full
// sync, beside them after a partial one.
func (s *syncEvents) end() {
	next := s.seen
	if !s.full {
		next = make(map[eventKey]struct{}, len(s.prior)+len(s.seen))
		for k := range s.prior {
			next[k] = struct{}{}
		}
		for k := range s.seen {
			next[k] = struct{}{}
		}
	}
	l := s.c.events
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(next) == 0 {
		l.last.Remove(idOf(s.svc))
		return
	}
	l.last.Add(idOf(s.svc), next)
}

// forget drops what the Service's syncs recorded (it is being deleted).
func (c *cloud) forget(svc *corev1.Service) {
	c.events.mu.Lock()
	c.events.last.Remove(idOf(svc))
	c.events.mu.Unlock()
}
