package clbtest

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// actionFunc answers one action for the credential-scope region.
type actionFunc func(s *Server, region string, params url.Values, requestID string) (any, *apiError)

// actions are the CLB actions loopguard needs to learn an LB's address type
// and PROXY-protocol settings. Every other action gets
// InvalidActionOrVersion, which is what the gateway answers for an action it
// does not know.
var actions = map[string]actionFunc{
	"DescribeLoadBalancers":          describeLoadBalancers,
	"DescribeLoadBalancerAttributes": describeLoadBalancerAttributes,
	"DescribeListeners":              describeListeners,
	"DescribeListenerAttributes":     describeListenerAttributes,
	"DescribeServerGroups":           describeServerGroups,
	"DescribeServerGroupAttributes":  describeServerGroupAttributes,
}

// Limits from the BytePlus CLB reference for API 2020-04-01.
const (
	defaultPageSize    = 10
	maxPageSize        = 100
	maxLoadBalancerIDs = 20  // LoadBalancerIds.N
	maxListenerIDs     = 100 // ListenerIds.N
	maxServerGroupIDs  = 100 // ServerGroupIds.N
)

// JSON shapes. Field names are the SDK's struct field names (the SDK decodes
// Result with encoding/json into untagged structs), e.g. EipID not EipId.

type lbJSON struct {
	LoadBalancerId   string
	LoadBalancerName string
	Description      string
	Type             string
	Status           string
	AddressIpVersion string
	VpcId            string
	SubnetId         string
	MasterZoneId     string
	SlaveZoneId      string
	EniID            string
	EniAddress       string
	EipID            string
	EipAddress       string
	EniAddressNum    int64
	EniAddresses     []eniAddressJSON
	CreateTime       string
	UpdateTime       string
}

type eniAddressJSON struct {
	EniAddress string
	EipAddress string
	EipId      string
}

type lbAttributesJSON struct {
	lbJSON
	RequestId    string
	Eip          *eipJSON `json:",omitempty"`
	Listeners    []lbListenerJSON
	ServerGroups []lbServerGroupJSON
}

type eipJSON struct {
	EipAddress string
}

type lbListenerJSON struct {
	ListenerId   string
	ListenerName string
}

type lbServerGroupJSON struct {
	ServerGroupId   string
	ServerGroupName string
}

type listenerJSON struct {
	ListenerId        string
	ListenerName      string
	LoadBalancerId    string
	Protocol          string
	Port              int64
	ProxyProtocolType string
	ServerGroupId     string
	Enabled           string
	Status            string
	Description       string
	CreateTime        string
	UpdateTime        string
}

type listenerAttributesJSON struct {
	listenerJSON
	RequestId string
}

type serverGroupJSON struct {
	ServerGroupId    string
	ServerGroupName  string
	Type             string
	AddressIpVersion string
	Description      string
	CreateTime       string
	UpdateTime       string
}

type serverGroupAttributesJSON struct {
	ServerGroupId    string
	ServerGroupName  string
	Type             string
	AddressIpVersion string
	Description      string
	LoadBalancerId   string
	// Listeners is a list of listener IDs. The BytePlus page shows objects
	// ({ListenerId}), but SDK v1.1.35 declares []*string and would fail to
	// decode objects; the SDK is what callers run.
	Listeners []string
	Servers   []serverJSON
	RequestId string
}

type serverJSON struct {
	ServerId    string
	InstanceId  string
	Type        string
	Ip          string
	Port        int64
	Weight      int64
	Description string
}

type pageJSON struct {
	PageNumber int
	PageSize   int
	TotalCount int
	RequestId  string
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func toLBJSON(lb LoadBalancer) lbJSON {
	out := lbJSON{
		LoadBalancerId:   lb.ID,
		LoadBalancerName: lb.Name,
		Description:      lb.Description,
		Type:             lb.Type,
		Status:           lb.Status,
		AddressIpVersion: lb.AddressIPVersion,
		VpcId:            lb.VpcID,
		SubnetId:         lb.SubnetID,
		MasterZoneId:     lb.MasterZoneID,
		SlaveZoneId:      lb.SlaveZoneID,
		EniID:            lb.EniID,
		EniAddress:       lb.EniAddress,
		EipID:            lb.EipID,
		EipAddress:       lb.EipAddress,
		CreateTime:       formatTime(lb.CreateTime),
		UpdateTime:       formatTime(lb.CreateTime),
		EniAddresses:     []eniAddressJSON{},
	}
	if lb.EniAddress != "" {
		out.EniAddressNum = 1
		out.EniAddresses = []eniAddressJSON{{EniAddress: lb.EniAddress, EipAddress: lb.EipAddress, EipId: lb.EipID}}
	}
	return out
}

func toListenerJSON(lb LoadBalancer, l Listener) listenerJSON {
	return listenerJSON{
		ListenerId:        l.ID,
		ListenerName:      l.Name,
		LoadBalancerId:    lb.ID,
		Protocol:          l.Protocol,
		Port:              l.Port,
		ProxyProtocolType: l.ProxyProtocolType,
		ServerGroupId:     l.ServerGroupID,
		Enabled:           l.Enabled,
		Status:            l.Status,
		Description:       l.Description,
		CreateTime:        formatTime(lb.CreateTime),
		UpdateTime:        formatTime(lb.CreateTime),
	}
}

func toServerGroupJSON(lb LoadBalancer, g ServerGroup) serverGroupJSON {
	return serverGroupJSON{
		ServerGroupId:    g.ID,
		ServerGroupName:  g.Name,
		Type:             g.Type,
		AddressIpVersion: g.AddressIPVersion,
		Description:      g.Description,
		CreateTime:       formatTime(lb.CreateTime),
		UpdateTime:       formatTime(lb.CreateTime),
	}
}

// regionLBs returns copies of the load balancers of region, in order.
func (s *Server) regionLBs(region string) []LoadBalancer {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []LoadBalancer
	for _, lb := range s.lbs {
		if lb.Region == region {
			out = append(out, lb.clone())
		}
	}
	return out
}

// listParam reads Name.1, Name.2, ... The SDK encodes an empty, non-nil
// slice as a bare "Name=" (queryutil.parseList), which means no filter.
func listParam(params url.Values, name string, max int) ([]string, *apiError) {
	type item struct {
		n int
		v string
	}
	var items []item
	for k, vs := range params {
		rest, ok := strings.CutPrefix(k, name+".")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 {
			return nil, newAPIError(CodeInvalidParameter, k)
		}
		for _, v := range vs {
			items = append(items, item{n, v})
		}
	}
	if len(items) > max {
		return nil, newAPIError(CodeInvalidParameter, name)
	}
	sort.Slice(items, func(i, j int) bool { return items[i].n < items[j].n })
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.v
	}
	return out, nil
}

type page struct{ number, size int }

// pageParams reads PageNumber (default 1) and PageSize (default 10, at most
// 100), the ranges the CLB reference documents.
func pageParams(params url.Values) (page, *apiError) {
	p := page{number: 1, size: defaultPageSize}
	if v := params.Get("PageNumber"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, newAPIError(CodeInvalidParameter, "PageNumber")
		}
		p.number = n
	}
	if v := params.Get("PageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			return p, newAPIError(CodeInvalidParameter, "PageSize")
		}
		p.size = n
	}
	return p, nil
}

// window returns the [lo, hi) slice bounds of page p over total items; a
// page past the end is empty, not an error.
func (p page) window(total int) (lo, hi int) {
	lo = (p.number - 1) * p.size
	if lo > total || lo < 0 {
		lo = total
	}
	hi = lo + p.size
	if hi > total {
		hi = total
	}
	return lo, hi
}

func inSet(set []string, v string) bool {
	if len(set) == 0 {
		return true
	}
	for _, x := range set {
		if x == v {
			return true
		}
	}
	return false
}

// matches reports whether an optional exact-match filter accepts v.
func matches(params url.Values, name, v string) bool {
	want := params.Get(name)
	return want == "" || want == v
}

func describeLoadBalancers(s *Server, region string, params url.Values, requestID string) (any, *apiError) {
	ids, e := listParam(params, "LoadBalancerIds", maxLoadBalancerIDs)
	if e != nil {
		return nil, e
	}
	p, e := pageParams(params)
	if e != nil {
		return nil, e
	}
	var found []lbJSON
	for _, lb := range s.regionLBs(region) {
		// An unknown ID in LoadBalancerIds filters to nothing rather than
		// failing: terraform-provider-volcengine reads one LB this way and
		// treats an empty list as "not exist".
		if !inSet(ids, lb.ID) ||
			!matches(params, "LoadBalancerName", lb.Name) ||
			!matches(params, "Type", lb.Type) ||
			!matches(params, "Status", lb.Status) ||
			!matches(params, "VpcId", lb.VpcID) ||
			!matches(params, "EniAddress", lb.EniAddress) ||
			!matches(params, "EipAddress", lb.EipAddress) ||
			!matches(params, "AddressIpVersion", lb.AddressIPVersion) ||
			!matches(params, "MasterZoneId", lb.MasterZoneID) {
			continue
		}
		found = append(found, toLBJSON(lb))
	}
	lo, hi := p.window(len(found))
	return struct {
		pageJSON
		LoadBalancers []lbJSON
	}{
		pageJSON:      pageJSON{PageNumber: p.number, PageSize: p.size, TotalCount: len(found), RequestId: requestID},
		LoadBalancers: append([]lbJSON{}, found[lo:hi]...),
	}, nil
}

func (s *Server) findLB(region, id string) (LoadBalancer, bool) {
	for _, lb := range s.regionLBs(region) {
		if lb.ID == id {
			return lb, true
		}
	}
	return LoadBalancer{}, false
}

func describeLoadBalancerAttributes(s *Server, region string, params url.Values, requestID string) (any, *apiError) {
	id := params.Get("LoadBalancerId")
	if id == "" {
		return nil, newAPIError(CodeMissingParameter, "LoadBalancerId")
	}
	lb, ok := s.findLB(region, id)
	if !ok {
		return nil, newAPIError(CodeLoadBalancerNotFound)
	}
	out := lbAttributesJSON{
		lbJSON:       toLBJSON(lb),
		RequestId:    requestID,
		Listeners:    []lbListenerJSON{},
		ServerGroups: []lbServerGroupJSON{},
	}
	if lb.EipAddress != "" {
		out.Eip = &eipJSON{EipAddress: lb.EipAddress}
	}
	for _, l := range lb.Listeners {
		out.Listeners = append(out.Listeners, lbListenerJSON{ListenerId: l.ID, ListenerName: l.Name})
	}
	for _, g := range lb.ServerGroups {
		out.ServerGroups = append(out.ServerGroups, lbServerGroupJSON{ServerGroupId: g.ID, ServerGroupName: g.Name})
	}
	return out, nil
}

func describeListeners(s *Server, region string, params url.Values, requestID string) (any, *apiError) {
	ids, e := listParam(params, "ListenerIds", maxListenerIDs)
	if e != nil {
		return nil, e
	}
	p, e := pageParams(params)
	if e != nil {
		return nil, e
	}
	var found []listenerJSON
	for _, lb := range s.regionLBs(region) {
		if !matches(params, "LoadBalancerId", lb.ID) {
			continue
		}
		for _, l := range lb.Listeners {
			if inSet(ids, l.ID) && matches(params, "ListenerName", l.Name) && matches(params, "Protocol", l.Protocol) {
				found = append(found, toListenerJSON(lb, l))
			}
		}
	}
	lo, hi := p.window(len(found))
	return struct {
		pageJSON
		Listeners []listenerJSON
	}{
		pageJSON:  pageJSON{PageNumber: p.number, PageSize: p.size, TotalCount: len(found), RequestId: requestID},
		Listeners: append([]listenerJSON{}, found[lo:hi]...),
	}, nil
}

func describeListenerAttributes(s *Server, region string, params url.Values, requestID string) (any, *apiError) {
	id := params.Get("ListenerId")
	if id == "" {
		return nil, newAPIError(CodeMissingParameter, "ListenerId")
	}
	for _, lb := range s.regionLBs(region) {
		for _, l := range lb.Listeners {
			if l.ID == id {
				return listenerAttributesJSON{listenerJSON: toListenerJSON(lb, l), RequestId: requestID}, nil
			}
		}
	}
	return nil, newAPIError(CodeListenerNotFound)
}

func describeServerGroups(s *Server, region string, params url.Values, requestID string) (any, *apiError) {
	ids, e := listParam(params, "ServerGroupIds", maxServerGroupIDs)
	if e != nil {
		return nil, e
	}
	p, e := pageParams(params)
	if e != nil {
		return nil, e
	}
	var found []serverGroupJSON
	for _, lb := range s.regionLBs(region) {
		if !matches(params, "LoadBalancerId", lb.ID) {
			continue
		}
		for _, g := range lb.ServerGroups {
			if inSet(ids, g.ID) && matches(params, "ServerGroupName", g.Name) && matches(params, "Type", g.Type) {
				found = append(found, toServerGroupJSON(lb, g))
			}
		}
	}
	lo, hi := p.window(len(found))
	return struct {
		pageJSON
		ServerGroups []serverGroupJSON
	}{
		pageJSON:     pageJSON{PageNumber: p.number, PageSize: p.size, TotalCount: len(found), RequestId: requestID},
		ServerGroups: append([]serverGroupJSON{}, found[lo:hi]...),
	}, nil
}

func describeServerGroupAttributes(s *Server, region string, params url.Values, requestID string) (any, *apiError) {
	id := params.Get("ServerGroupId")
	if id == "" {
		return nil, newAPIError(CodeMissingParameter, "ServerGroupId")
	}
	for _, lb := range s.regionLBs(region) {
		for _, g := range lb.ServerGroups {
			if g.ID != id {
				continue
			}
			out := serverGroupAttributesJSON{
				ServerGroupId:    g.ID,
				ServerGroupName:  g.Name,
				Type:             g.Type,
				AddressIpVersion: g.AddressIPVersion,
				Description:      g.Description,
				LoadBalancerId:   lb.ID,
				Listeners:        []string{},
				Servers:          []serverJSON{},
				RequestId:        requestID,
			}
			for _, l := range lb.Listeners {
				if l.ServerGroupID == g.ID {
					out.Listeners = append(out.Listeners, l.ID)
				}
			}
			for _, m := range g.Servers {
				out.Servers = append(out.Servers, serverJSON{
					ServerId: m.ID, InstanceId: m.InstanceID, Type: m.Type, Ip: m.IP,
					Port: m.Port, Weight: m.Weight, Description: m.Description,
				})
			}
			return out, nil
		}
	}
	return nil, newAPIError(CodeServerGroupNotFound)
}
