package volcengine

import "github.com/loopguard/loopguard/core"

// CLBFacts is what a read of one CLB instance through the Volcengine API says, for facts a
// manifest does not carry (docs/sources.md#vke: DescribeLoadBalancerAttributes gives Type,
// EniAddress, EipAddress; DescribeListenerAttributes gives ProxyProtocolType;
// DescribeServerGroupAttributes gives the backends' Servers[].Type).
type CLBFacts struct {
	// AddressType is AddressTypePublic or AddressTypePrivate, "" when not read.
	AddressType string
	// ProxyProtocol is whether the Service's listeners send a PROXY protocol header.
	ProxyProtocol core.Fact

	// ID is the CLB's ID and Addresses its private (EniAddress) and public (EipAddress)
	// addresses, when a cloud read filled them (CLBReader).
	ID        string
	Addresses []string
	// Listeners are the CLB's listeners as read; ProxyProtocol above is their verdict for the
	// Service's ports.
	Listeners []ListenerFacts

	// ServerGroups are the server groups of the listeners that serve the Service's ports, as
	// DescribeServerGroupAttributes reports them; Backends is their verdict, which sets the
	// binding (ecs: the nodes' NodePorts; eni: straight to Pods).
	ServerGroups []ServerGroupFacts
	Backends     Backends
}

// Backends says what a CLB's server groups send the Service's connections to, from
// DescribeServerGroupAttributes' Servers[].Type (volcengine-go-sdk v1.1.35; docs/sources.md#vke).
type Backends string

const (
	// BackendsNotRead: no server group was read or none has servers; the dialect falls back
	// to the pass-through annotation.
	BackendsNotRead Backends = ""
	// BackendsECS: every server is an instance (Type "ecs"), reached on its NodePort.
	BackendsECS Backends = "ecs"
	// BackendsENI: every server is a Pod's ENI (Type "eni"): the CLB sends straight to Pods.
	BackendsENI Backends = "eni"
	// BackendsMixed: both occur, so some connections go to nodes and some to Pods.
	BackendsMixed Backends = "mixed"
	// BackendsUnrecognised: a server's Type is neither ecs nor eni.
	BackendsUnrecognised Backends = "unrecognised"
)

// ServerGroupFacts is one server group as DescribeServerGroupAttributes reports it.
type ServerGroupFacts struct {
	ID string
	// Type is the group's Type ("instance" or "ip").
	Type    string
	Servers []BackendServer
}

// BackendServer is one entry of DescribeServerGroupAttributes' Servers[].
type BackendServer struct {
	// Type is "ecs" (an instance) or "eni" (an elastic network interface, such as a Pod's).
	Type       string
	IP         string
	InstanceID string
	Port       int64
}

// ListenerFacts is one CLB listener as DescribeListeners reports it.
type ListenerFacts struct {
	ID       string
	Protocol string // TCP, UDP, HTTP or HTTPS
	Port     int64
	// ProxyProtocol is Yes for ProxyProtocolType "standard", No for "off", Unknown otherwise.
	ProxyProtocol core.Fact
	// ServerGroupID is the listener's server group, "" when it has none.
	ServerGroupID string
}

// CLBLookup finds the facts read about a CLB, by its ID or by one of its addresses. It must
// answer from facts gathered beforehand: Translate is pure and never waits on the network.
type CLBLookup interface {
	LookupCLB(idOrAddress string) (CLBFacts, bool)
}

// CLBSnapshot is a CLBLookup over facts gathered beforehand, keyed by CLB ID and/or address.
type CLBSnapshot map[string]CLBFacts

// LookupCLB implements CLBLookup.
func (s CLBSnapshot) LookupCLB(key string) (CLBFacts, bool) {
	f, ok := s[key]
	return f, ok
}

// lookupCLB finds cloud facts for the Service's CLB: by the reused ID first, then by the
// addresses in its status.
func (d *Dialect) lookupCLB(f *ServiceFacts) (CLBFacts, bool) {
	if d.opts.CLBs == nil {
		return CLBFacts{}, false
	}
	if f.LoadBalancerID != "" {
		if c, ok := d.opts.CLBs.LookupCLB(f.LoadBalancerID); ok {
			return c, true
		}
	}
	for _, a := range f.Addresses {
		if c, ok := d.opts.CLBs.LookupCLB(a); ok {
			return c, true
		}
	}
	return CLBFacts{}, false
}
