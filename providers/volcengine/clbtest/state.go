package clbtest

import (
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// Values of LoadBalancer.Type, as DescribeLoadBalancerAttributes returns them
// (BytePlus CLB reference: "public" gets an EIP and a private address,
// "private" only a private address).
const (
	TypePublic  = "public"
	TypePrivate = "private"
)

// Values of Listener.ProxyProtocolType (BytePlus DescribeListenerAttributes:
// "off" not enabled, "standard" enabled; terraform-provider-volcengine notes
// it only applies to TCP and UDP listeners).
const (
	ProxyProtocolOff      = "off"
	ProxyProtocolStandard = "standard"
)

// Errors returned by the state methods; match them with errors.Is.
var (
	// ErrNotFound: no load balancer with that ID.
	ErrNotFound = errors.New("clbtest: load balancer not found")
	// ErrDuplicateID: an ID is already used by another resource.
	ErrDuplicateID = errors.New("clbtest: duplicate ID")
	// ErrInvalid: a seeded value the cloud would never return.
	ErrInvalid = errors.New("clbtest: invalid load balancer")
)

// LoadBalancer is one CLB instance as the server stores it. Only the fields
// loopguard reads, and the ones the Describe filters need, are modelled.
// Zero values get defaults when the load balancer is added: Region the
// server's region, Status "Active", AddressIPVersion "ipv4", Name the ID,
// and generated IDs for the LB, its listeners, server groups and servers.
type LoadBalancer struct {
	ID               string
	Name             string
	Description      string
	Region           string
	Type             string // TypePublic or TypePrivate
	Status           string
	AddressIPVersion string
	VpcID            string
	SubnetID         string
	MasterZoneID     string
	SlaveZoneID      string
	EniID            string
	EniAddress       string // private IPv4 address
	EipID            string
	EipAddress       string // public address; empty for private LBs
	Listeners        []Listener
	ServerGroups     []ServerGroup
	CreateTime       time.Time // set to the server's clock when added
}

// Listener is one listener of a LoadBalancer. Defaults: Name
// "<Protocol>-<Port>" (the cloud's default name), ProxyProtocolType "off",
// Enabled "on", Status "Active".
type Listener struct {
	ID                string
	Name              string
	Protocol          string // TCP, UDP, HTTP or HTTPS
	Port              int64  // 0 means all-port listening (TCP/UDP)
	ProxyProtocolType string // ProxyProtocolOff or ProxyProtocolStandard
	ServerGroupID     string // must name a server group of the same LB
	Enabled           string
	Status            string
	Description       string
}

// ServerGroup is one backend server group. Defaults: Name the ID, Type
// "instance", AddressIPVersion "ipv4".
type ServerGroup struct {
	ID               string
	Name             string
	Type             string // "instance" or "ip"
	AddressIPVersion string
	Description      string
	Servers          []BackendServer
}

// BackendServer is one member of a ServerGroup (DescribeServerGroupAttributes
// Servers[]). Type is "ecs" or "eni" for instance groups.
type BackendServer struct {
	ID          string
	Type        string
	InstanceID  string
	IP          string
	Port        int64
	Weight      int64
	Description string
}

func (lb LoadBalancer) clone() LoadBalancer {
	out := lb
	out.Listeners = append([]Listener(nil), lb.Listeners...)
	out.ServerGroups = make([]ServerGroup, len(lb.ServerGroups))
	for i, g := range lb.ServerGroups {
		g.Servers = append([]BackendServer(nil), g.Servers...)
		out.ServerGroups[i] = g
	}
	if lb.ServerGroups == nil {
		out.ServerGroups = nil
	}
	return out
}

// AddLoadBalancer stores lb (after filling defaults) and returns the stored
// copy, so generated IDs can be read back. It rejects values the cloud never
// returns, such as a Type other than public/private or a listener pointing
// at a server group of another LB, so that a test cannot pass on data the
// real API would not produce.
func (s *Server) AddLoadBalancer(lb LoadBalancer) (LoadBalancer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lb = lb.clone()
	if lb.ID == "" {
		lb.ID = s.newID("clb")
	}
	if _, ok := s.lbIndex[lb.ID]; ok {
		return LoadBalancer{}, fmt.Errorf("%w: load balancer %s", ErrDuplicateID, lb.ID)
	}
	if lb.CreateTime.IsZero() {
		lb.CreateTime = s.now().UTC().Truncate(time.Second)
	}
	s.fillDefaults(&lb)
	if err := s.validate(lb, ""); err != nil {
		return LoadBalancer{}, err
	}
	s.lbIndex[lb.ID] = len(s.lbs)
	s.lbs = append(s.lbs, lb)
	return lb.clone(), nil
}

// UpdateLoadBalancer applies fn to a copy of the load balancer with that ID
// and stores the result if it is still valid; fn must not change the ID. New
// listeners, groups or servers with empty IDs get generated ones. It is how a
// test changes the cloud under a running client, e.g. turns PROXY protocol on.
func (s *Server) UpdateLoadBalancer(id string, fn func(*LoadBalancer)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.lbIndex[id]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	lb := s.lbs[i].clone()
	fn(&lb)
	if lb.ID != id {
		return fmt.Errorf("%w: update changed ID %s to %s", ErrInvalid, id, lb.ID)
	}
	s.fillDefaults(&lb)
	if err := s.validate(lb, id); err != nil {
		return err
	}
	s.lbs[i] = lb
	return nil
}

// RemoveLoadBalancer deletes the load balancer and reports whether it existed.
// Later Describe calls answer as the cloud does for a deleted LB.
func (s *Server) RemoveLoadBalancer(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.lbIndex[id]
	if !ok {
		return false
	}
	s.lbs = append(s.lbs[:i], s.lbs[i+1:]...)
	delete(s.lbIndex, id)
	for j := i; j < len(s.lbs); j++ {
		s.lbIndex[s.lbs[j].ID] = j
	}
	return true
}

// LoadBalancer returns a copy of the stored load balancer.
func (s *Server) LoadBalancer(id string) (LoadBalancer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.lbIndex[id]
	if !ok {
		return LoadBalancer{}, false
	}
	return s.lbs[i].clone(), true
}

// Snapshot returns deep copies of all load balancers in the order they were
// added, which is also the order Describe calls list them in.
func (s *Server) Snapshot() []LoadBalancer {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]LoadBalancer, len(s.lbs))
	for i, lb := range s.lbs {
		out[i] = lb.clone()
	}
	return out
}

// fillDefaults is called with s.mu held.
func (s *Server) fillDefaults(lb *LoadBalancer) {
	if lb.Region == "" {
		lb.Region = s.region
	}
	if lb.Status == "" {
		lb.Status = "Active"
	}
	if lb.AddressIPVersion == "" {
		lb.AddressIPVersion = "ipv4"
	}
	if lb.Name == "" {
		lb.Name = lb.ID
	}
	for i := range lb.ServerGroups {
		g := &lb.ServerGroups[i]
		if g.ID == "" {
			g.ID = s.newID("rsp")
		}
		if g.Name == "" {
			g.Name = g.ID
		}
		if g.Type == "" {
			g.Type = "instance"
		}
		if g.AddressIPVersion == "" {
			g.AddressIPVersion = "ipv4"
		}
		for j := range g.Servers {
			if g.Servers[j].ID == "" {
				g.Servers[j].ID = s.newID("rs")
			}
		}
	}
	for i := range lb.Listeners {
		l := &lb.Listeners[i]
		if l.ID == "" {
			l.ID = s.newID("lsn")
		}
		if l.Name == "" {
			l.Name = fmt.Sprintf("%s-%d", l.Protocol, l.Port)
		}
		if l.ProxyProtocolType == "" {
			l.ProxyProtocolType = ProxyProtocolOff
		}
		if l.Enabled == "" {
			l.Enabled = "on"
		}
		if l.Status == "" {
			l.Status = "Active"
		}
	}
}

// validate checks lb; self is the ID lb replaces (its own IDs are not
// duplicates). Called with s.mu held.
func (s *Server) validate(lb LoadBalancer, self string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalid, lb.ID, fmt.Sprintf(format, args...))
	}
	if lb.Type != TypePublic && lb.Type != TypePrivate {
		return bad("Type %q is neither %q nor %q", lb.Type, TypePublic, TypePrivate)
	}
	for _, a := range []struct{ name, v string }{{"EniAddress", lb.EniAddress}, {"EipAddress", lb.EipAddress}} {
		if a.v == "" {
			continue
		}
		if _, err := netip.ParseAddr(a.v); err != nil {
			return bad("%s %q is not an IP address", a.name, a.v)
		}
	}
	// IDs used by every other load balancer, to keep IDs unique server-wide
	// as the cloud's are.
	taken := map[string]bool{}
	for _, other := range s.lbs {
		if other.ID == self {
			continue
		}
		taken[other.ID] = true
		for _, l := range other.Listeners {
			taken[l.ID] = true
		}
		for _, g := range other.ServerGroups {
			taken[g.ID] = true
			for _, m := range g.Servers {
				taken[m.ID] = true
			}
		}
	}
	if taken[lb.ID] {
		return fmt.Errorf("%w: %s", ErrDuplicateID, lb.ID)
	}
	seen := map[string]bool{lb.ID: true}
	claim := func(id string) error {
		if taken[id] || seen[id] {
			return fmt.Errorf("%w: %s", ErrDuplicateID, id)
		}
		seen[id] = true
		return nil
	}
	groups := map[string]bool{}
	for _, g := range lb.ServerGroups {
		if err := claim(g.ID); err != nil {
			return err
		}
		groups[g.ID] = true
		for _, m := range g.Servers {
			if err := claim(m.ID); err != nil {
				return err
			}
			if m.Port < 0 || m.Port > 65535 {
				return bad("server %s port %d out of range", m.ID, m.Port)
			}
		}
	}
	for _, l := range lb.Listeners {
		if err := claim(l.ID); err != nil {
			return err
		}
		switch l.Protocol {
		case "TCP", "UDP", "HTTP", "HTTPS":
		default:
			return bad("listener %s Protocol %q is not TCP, UDP, HTTP or HTTPS", l.ID, l.Protocol)
		}
		if l.Port < 0 || l.Port > 65535 {
			return bad("listener %s port %d out of range", l.ID, l.Port)
		}
		if l.ProxyProtocolType != ProxyProtocolOff && l.ProxyProtocolType != ProxyProtocolStandard {
			return bad("listener %s ProxyProtocolType %q is neither %q nor %q", l.ID, l.ProxyProtocolType, ProxyProtocolOff, ProxyProtocolStandard)
		}
		if l.ServerGroupID != "" && !groups[l.ServerGroupID] {
			return bad("listener %s uses server group %s, which is not in this load balancer", l.ID, l.ServerGroupID)
		}
	}
	return nil
}

// newID returns a fresh, deterministic resource ID. Called with s.mu held.
func (s *Server) newID(prefix string) string {
	s.idSeq++
	return fmt.Sprintf("%s-clbtest%06d", prefix, s.idSeq)
}
