package clbtest

import (
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Values of LoadBalancer.Type (docs/sources.md#tke-clb-api: LoadBalancerType OPEN | INTERNAL).
const (
	LoadBalancerOpen     = "OPEN"
	LoadBalancerInternal = "INTERNAL"
)

// Listener protocols the CLB API accepts (clb 2018-03-17 CreateListener.Protocol).
const (
	ProtocolTCP    = "TCP"
	ProtocolUDP    = "UDP"
	ProtocolHTTP   = "HTTP"
	ProtocolHTTPS  = "HTTPS"
	ProtocolTCPSSL = "TCP_SSL"
	ProtocolQUIC   = "QUIC"
)

// AttrFlagSnatEnable is the AttrFlags entry DescribeListeners reports for a listener with
// SNAT on. The Listener model has no SnatEnable field on the read side (docs/sources.md#tke-clb-api;
// terraform-provider-tencentcloud resource_tc_clb_listener.go reads it this way).
const AttrFlagSnatEnable = "SnatEnable"

// LoadBalancer is one CLB instance as the fake cloud holds it. Seed it with
// Server.AddLoadBalancer; read it back with Server.LoadBalancer or Server.Snapshot.
type LoadBalancer struct {
	// ID is the LoadBalancerId ("lb-xxxxxxxx"); generated when empty.
	ID string
	// Name is LoadBalancerName.
	Name string
	// Region is the region the instance lives in; requests see only their own region's
	// instances. Empty means DefaultRegion.
	Region string
	// Type is LoadBalancerOpen or LoadBalancerInternal. Required: whether an LB is private
	// is what decides if in-cluster clients can loop through it (docs/sources.md#loopback).
	Type string
	// VIPs is LoadBalancerVips.
	VIPs []string
	// VpcID and SubnetID are VpcId and SubnetId.
	VpcID    string
	SubnetID string
	// Domain is LoadBalancerDomain.
	Domain string
	// SnatPro is cross-region binding 2.0, NOT listener SNAT (docs/sources.md#tke-clb-api).
	SnatPro bool
	// SnatIPs are the SNAT IPs that come with SnatPro.
	SnatIPs []SnatIP
	// PassToTarget is LoadBalancerPassToTarget: backends accept the LB's traffic without
	// security-group rules (docs/sources.md#tke-fixes, fix 3).
	PassToTarget bool
	// CreateTime is when the instance was created; the server's clock at seeding when zero.
	// DescribeLoadBalancers orders by it (newest first) unless told otherwise.
	CreateTime time.Time
}

// SnatIP is one entry of LoadBalancer.SnatIps.
type SnatIP struct {
	SubnetID string
	IP       string
}

// Listener is one CLB listener. Seed it with Server.AddListener.
type Listener struct {
	// LoadBalancerID is the instance the listener belongs to; required.
	LoadBalancerID string
	// ID is the ListenerId ("lbl-xxxxxxxx"); generated when empty.
	ID string
	// Name is ListenerName.
	Name string
	// Protocol is one of the Protocol* constants.
	Protocol string
	// Port is the listener port, 1..65535.
	Port int64
	// SnatEnable is the listener's source-IP replacement. DescribeListeners reports it only
	// as AttrFlagSnatEnable inside AttrFlags (docs/sources.md#tke-clb-api).
	SnatEnable bool
	// KeepaliveEnable is 0 or 1, HTTP/HTTPS listeners only (docs/sources.md#tke-clb-api).
	KeepaliveEnable int64
	// ProxyProtocol applies to TCP_SSL/QUIC listeners only (docs/sources.md#tke-clb-api). It is kept in
	// state but not reported by DescribeListeners: how the cloud reports it is UNCONFIRMED.
	ProxyProtocol bool
	// HealthCheck is the listener-level health check. Layer-4 listeners get a default one
	// when nil; HTTP/HTTPS listeners keep health checks on their rules, so it stays nil.
	HealthCheck *HealthCheck
	// Scheduler (WRR, LEAST_CONN, IP_HASH) and SessionExpireTime are kept and reported.
	Scheduler         string
	SessionExpireTime int64
	// AttrFlags are other flags to report verbatim. An AttrFlagSnatEnable entry here is
	// folded into SnatEnable when the listener is seeded.
	AttrFlags []string
	// CreateTime is the server's clock at seeding when zero.
	CreateTime time.Time
}

// HealthCheck mirrors the fields of the API's HealthCheck object that a loop remedy can
// touch; SourceIPType is the one that matters (0 = probe from the VIP, 1 = from the
// 100.64 range; docs/sources.md#tke-fixes, fix 1).
type HealthCheck struct {
	HealthSwitch    int64
	TimeOut         int64
	IntervalTime    int64
	HealthNum       int64
	UnHealthNum     int64
	HTTPCode        int64
	HTTPCheckPath   string
	HTTPCheckDomain string
	HTTPCheckMethod string
	CheckPort       int64
	CheckType       string
	HTTPVersion     string
	SourceIPType    int64
}

// TaskStatus is DescribeTaskStatus' Status (docs/sources.md#tke-clb-api).
type TaskStatus int64

// Values of TaskStatus.
const (
	TaskSucceeded TaskStatus = 0
	TaskFailed    TaskStatus = 1
	TaskRunning   TaskStatus = 2
)

func (s TaskStatus) String() string {
	switch s {
	case TaskSucceeded:
		return "succeeded"
	case TaskFailed:
		return "failed"
	case TaskRunning:
		return "running"
	}
	return fmt.Sprintf("TaskStatus(%d)", int64(s))
}

// Task is one asynchronous write. Its ID is the RequestId the write answered with.
type Task struct {
	ID              string
	Action          string
	Region          string
	LoadBalancerIDs []string
	Status          TaskStatus
	// Message explains a failed task.
	Message string
	// Started is when the write was accepted; Due when it completes.
	Started time.Time
	Due     time.Time
}

// State is a deep copy of everything the server holds, in creation order.
type State struct {
	LoadBalancers []LoadBalancer
	Listeners     []Listener
	Tasks         []Task
}

// ErrNotFound is returned by the seeding methods when a referenced object does not exist.
var ErrNotFound = errors.New("clbtest: not found")

// ErrConflict is returned by the seeding methods when an ID or a listener port is taken.
var ErrConflict = errors.New("clbtest: conflict")

type lbRecord struct {
	lb  LoadBalancer
	seq int64
}

type listenerRecord struct {
	l   Listener
	seq int64
}

func defaultHealthCheck() *HealthCheck {
	// The console's defaults for a layer-4 listener; only their presence matters here.
	return &HealthCheck{HealthSwitch: 1, TimeOut: 2, IntervalTime: 5, HealthNum: 3, UnHealthNum: 3, CheckType: "TCP"}
}

func isLayer7(protocol string) bool { return protocol == ProtocolHTTP || protocol == ProtocolHTTPS }

func validProtocol(p string) bool {
	switch p {
	case ProtocolTCP, ProtocolUDP, ProtocolHTTP, ProtocolHTTPS, ProtocolTCPSSL, ProtocolQUIC:
		return true
	}
	return false
}

// transport groups protocols that compete for the same port: a TCP and an HTTP listener
// cannot share a port, a TCP and a UDP one can. UNCONFIRMED for QUIC (assumed UDP).
func transport(protocol string) string {
	if protocol == ProtocolUDP || protocol == ProtocolQUIC {
		return "udp"
	}
	return "tcp"
}

func randomID(prefix string) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return prefix + string(b)
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func cloneLB(lb LoadBalancer) LoadBalancer {
	lb.VIPs = slices.Clone(lb.VIPs)
	lb.SnatIPs = slices.Clone(lb.SnatIPs)
	return lb
}

func cloneListener(l Listener) Listener {
	l.AttrFlags = slices.Clone(l.AttrFlags)
	if l.HealthCheck != nil {
		hc := *l.HealthCheck
		l.HealthCheck = &hc
	}
	return l
}

// AddLoadBalancer seeds a load balancer and returns it with defaults filled in (ID,
// Region, CreateTime). It bypasses the API: no signature, task, rate limit or allowlist.
func (s *Server) AddLoadBalancer(lb LoadBalancer) (LoadBalancer, error) {
	if lb.Type != LoadBalancerOpen && lb.Type != LoadBalancerInternal {
		return LoadBalancer{}, fmt.Errorf("clbtest: load balancer Type must be %q or %q, got %q", LoadBalancerOpen, LoadBalancerInternal, lb.Type)
	}
	lb = cloneLB(lb)
	if lb.Region == "" {
		lb.Region = DefaultRegion
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if lb.CreateTime.IsZero() {
		lb.CreateTime = s.now()
	}
	if lb.ID == "" {
		for lb.ID == "" || s.lbs[lb.ID] != nil {
			lb.ID = randomID("lb-")
		}
	} else if s.lbs[lb.ID] != nil {
		return LoadBalancer{}, fmt.Errorf("%w: load balancer %s already exists", ErrConflict, lb.ID)
	}
	s.seq++
	s.lbs[lb.ID] = &lbRecord{lb: lb, seq: s.seq}
	return cloneLB(lb), nil
}

// AddListener seeds a listener on an existing load balancer and returns it with defaults
// filled in. Like AddLoadBalancer it bypasses the API, so it can create states an
// allowlist would forbid (an account that had SNAT turned on before losing the allowlist).
func (s *Server) AddListener(l Listener) (Listener, error) {
	if !validProtocol(l.Protocol) {
		return Listener{}, fmt.Errorf("clbtest: invalid listener protocol %q", l.Protocol)
	}
	if l.Port < 1 || l.Port > 65535 {
		return Listener{}, fmt.Errorf("clbtest: listener port %d out of range 1..65535", l.Port)
	}
	if l.KeepaliveEnable != 0 && (l.KeepaliveEnable != 1 || !isLayer7(l.Protocol)) {
		return Listener{}, fmt.Errorf("clbtest: KeepaliveEnable must be 0 or 1 and is for HTTP/HTTPS listeners only")
	}
	l = cloneListener(l)
	flags := l.AttrFlags[:0]
	for _, f := range l.AttrFlags {
		if f == AttrFlagSnatEnable {
			l.SnatEnable = true
			continue
		}
		flags = append(flags, f)
	}
	l.AttrFlags = flags
	if l.HealthCheck == nil && !isLayer7(l.Protocol) {
		l.HealthCheck = defaultHealthCheck()
	}
	if l.Scheduler == "" && !isLayer7(l.Protocol) {
		l.Scheduler = "WRR"
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	if s.lbs[l.LoadBalancerID] == nil {
		return Listener{}, fmt.Errorf("%w: load balancer %q", ErrNotFound, l.LoadBalancerID)
	}
	if other := s.portOwnerLocked(l.LoadBalancerID, l.Protocol, l.Port); other != "" {
		return Listener{}, fmt.Errorf("%w: port %d/%s is taken by listener %s", ErrConflict, l.Port, transport(l.Protocol), other)
	}
	if l.ID == "" {
		for l.ID == "" || s.listeners[l.ID] != nil {
			l.ID = randomID("lbl-")
		}
	} else if s.listeners[l.ID] != nil {
		return Listener{}, fmt.Errorf("%w: listener %s already exists", ErrConflict, l.ID)
	}
	if l.CreateTime.IsZero() {
		l.CreateTime = s.now()
	}
	s.seq++
	s.listeners[l.ID] = &listenerRecord{l: l, seq: s.seq}
	return cloneListener(l), nil
}

// UpdateListener changes a listener in place, outside the API: a test can model drift
// (someone turned SNAT off in the console). fn must not call back into the Server.
func (s *Server) UpdateListener(id string, fn func(*Listener)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	rec := s.listeners[id]
	if rec == nil {
		return fmt.Errorf("%w: listener %q", ErrNotFound, id)
	}
	l := cloneListener(rec.l)
	fn(&l)
	l.ID, l.LoadBalancerID = rec.l.ID, rec.l.LoadBalancerID
	rec.l = l
	return nil
}

// LoadBalancer returns a copy of one load balancer.
func (s *Server) LoadBalancer(id string) (LoadBalancer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	rec := s.lbs[id]
	if rec == nil {
		return LoadBalancer{}, false
	}
	return cloneLB(rec.lb), true
}

// Listener returns a copy of one listener, with every task due by now applied.
func (s *Server) Listener(id string) (Listener, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	rec := s.listeners[id]
	if rec == nil {
		return Listener{}, false
	}
	return cloneListener(rec.l), true
}

// Task returns one task by ID (the RequestId of the write).
func (s *Server) Task(id string) (Task, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	t := s.tasks[id]
	if t == nil {
		return Task{}, false
	}
	return t.public(), true
}

// Snapshot returns a deep copy of the whole state, with every task due by now applied.
func (s *Server) Snapshot() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	var st State
	for _, rec := range s.sortedLBsLocked() {
		st.LoadBalancers = append(st.LoadBalancers, cloneLB(rec.lb))
	}
	for _, rec := range s.sortedListenersLocked("") {
		st.Listeners = append(st.Listeners, cloneListener(rec.l))
	}
	for _, id := range s.taskOrder {
		st.Tasks = append(st.Tasks, s.tasks[id].public())
	}
	return st
}

func (s *Server) sortedLBsLocked() []*lbRecord {
	out := make([]*lbRecord, 0, len(s.lbs))
	for _, rec := range s.lbs {
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b *lbRecord) int { return int(a.seq - b.seq) })
	return out
}

// sortedListenersLocked lists listeners in creation order, of one LB or ("") of all.
func (s *Server) sortedListenersLocked(lbID string) []*listenerRecord {
	var out []*listenerRecord
	for _, rec := range s.listeners {
		if lbID == "" || rec.l.LoadBalancerID == lbID {
			out = append(out, rec)
		}
	}
	slices.SortFunc(out, func(a, b *listenerRecord) int { return int(a.seq - b.seq) })
	return out
}

// portOwnerLocked returns the listener holding port/transport on an LB, or "".
func (s *Server) portOwnerLocked(lbID, protocol string, port int64) string {
	for _, rec := range s.listeners {
		if rec.l.LoadBalancerID == lbID && rec.l.Port == port && transport(rec.l.Protocol) == transport(protocol) {
			return rec.l.ID
		}
	}
	return ""
}
