package clbtest

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// handler serves one action. Parameter and result structs below use the field names and
// types of tencentcloud-sdk-go clb v1.3.156 models.go, so the SDK's requests decode (an
// unknown name is UnknownParameter) and the SDK decodes the answers without error.
type handler struct {
	newParams func() any
	serve     func(s *Server, req *request, params any) (any, *apiError)
}

func action[P any](fn func(*Server, *request, *P) (any, *apiError)) handler {
	return handler{
		newParams: func() any { return new(P) },
		serve:     func(s *Server, req *request, p any) (any, *apiError) { return fn(s, req, p.(*P)) },
	}
}

var handlers = map[string]handler{
	"DescribeLoadBalancers": action((*Server).describeLoadBalancers),
	"DescribeListeners":     action((*Server).describeListeners),
	"ModifyListener":        action((*Server).modifyListener),
	"CreateListener":        action((*Server).createListener),
	"DescribeTaskStatus":    action((*Server).describeTaskStatus),
	"CreateLoadBalancer":    action((*Server).createLoadBalancer),
	"DeleteLoadBalancer":    action((*Server).deleteLoadBalancer),
}

// writeActions change state through a task.
var writeActions = map[string]bool{"ModifyListener": true, "CreateListener": true, "CreateLoadBalancer": true, "DeleteLoadBalancer": true}

// cloudTime renders times the way the API does ("YYYY-MM-DD HH:mm:ss", Beijing time).
var cloudZone = time.FixedZone("CST", 8*3600)

func cloudTime(t time.Time) string { return t.In(cloudZone).Format(time.DateTime) }

type requestIDOnly struct {
	RequestId string
}

// ---- DescribeLoadBalancers ----

type filterParam struct {
	Name   *string
	Values []string
}

type describeLoadBalancersParams struct {
	LoadBalancerIds   []string
	LoadBalancerType  *string
	Forward           *int64
	LoadBalancerName  *string
	Domain            *string
	LoadBalancerVips  []string
	BackendPublicIps  []string
	BackendPrivateIps []string
	Offset            *int64
	Limit             *int64
	OrderBy           *string
	OrderType         *int64
	SearchKey         *string
	ProjectId         *int64
	WithRs            *int64
	VpcId             *string
	SecurityGroup     *string
	MasterZone        *string
	Filters           []filterParam
	AdditionalFields  []string
}

type snatIPJSON struct {
	SubnetId string
	Ip       string
}

type loadBalancerJSON struct {
	LoadBalancerId           string
	LoadBalancerName         string
	LoadBalancerType         string
	Forward                  uint64
	Domain                   string
	LoadBalancerDomain       string
	LoadBalancerVips         []string
	Status                   uint64
	CreateTime               string
	StatusTime               string
	ProjectId                uint64
	VpcId                    string
	SubnetId                 string
	OpenBgp                  uint64
	Snat                     bool
	Isolation                uint64
	Tags                     []struct{}
	SecureGroups             []string
	AddressIPVersion         string
	LoadBalancerPassToTarget bool
	SnatPro                  bool
	SnatIps                  []snatIPJSON
	SlaType                  string
	IsDDos                   bool
}

func renderLoadBalancer(lb LoadBalancer) loadBalancerJSON {
	out := loadBalancerJSON{
		LoadBalancerId:           lb.ID,
		LoadBalancerName:         lb.Name,
		LoadBalancerType:         lb.Type,
		Forward:                  1,
		Domain:                   lb.Domain,
		LoadBalancerDomain:       lb.Domain,
		LoadBalancerVips:         slices.Clone(lb.VIPs),
		Status:                   1,
		CreateTime:               cloudTime(lb.CreateTime),
		StatusTime:               cloudTime(lb.CreateTime),
		VpcId:                    lb.VpcID,
		SubnetId:                 lb.SubnetID,
		Tags:                     []struct{}{},
		SecureGroups:             []string{},
		AddressIPVersion:         "ipv4",
		LoadBalancerPassToTarget: lb.PassToTarget,
		SnatPro:                  lb.SnatPro,
		SnatIps:                  []snatIPJSON{},
	}
	if out.LoadBalancerVips == nil {
		out.LoadBalancerVips = []string{}
	}
	for _, ip := range lb.SnatIPs {
		out.SnatIps = append(out.SnatIps, snatIPJSON{SubnetId: ip.SubnetID, Ip: ip.IP})
	}
	return out
}

type describeLoadBalancersResult struct {
	TotalCount      uint64
	LoadBalancerSet []loadBalancerJSON
	RequestId       string
}

func (s *Server) describeLoadBalancers(req *request, p *describeLoadBalancersParams) (any, *apiError) {
	// Parameters that filter on things this fake does not hold (targets, security groups,
	// zones, tags, billing) are refused rather than ignored.
	switch {
	case len(p.BackendPublicIps) > 0:
		return nil, notModelled("BackendPublicIps")
	case len(p.BackendPrivateIps) > 0:
		return nil, notModelled("BackendPrivateIps")
	case p.WithRs != nil && *p.WithRs != -1:
		return nil, notModelled("WithRs")
	case p.SecurityGroup != nil:
		return nil, notModelled("SecurityGroup")
	case p.MasterZone != nil:
		return nil, notModelled("MasterZone")
	case len(p.Filters) > 0:
		return nil, errorf(CodeInvalidFilter, "clbtest does not model Filters.")
	}
	if len(p.LoadBalancerIds) > 20 {
		return nil, errorf(CodeInvalidParameterLength, "LoadBalancerIds holds at most 20 IDs.")
	}
	if p.LoadBalancerType != nil && *p.LoadBalancerType != LoadBalancerOpen && *p.LoadBalancerType != LoadBalancerInternal {
		return nil, errorf(CodeInvalidParameterValue, "LoadBalancerType must be OPEN or INTERNAL.")
	}
	if p.Forward != nil && *p.Forward != 0 && *p.Forward != 1 {
		return nil, errorf(CodeInvalidParameterValue, "Forward must be 0 or 1.")
	}
	offset, limit := int64(0), int64(20)
	if p.Offset != nil {
		offset = *p.Offset
	}
	if p.Limit != nil && *p.Limit != 0 {
		limit = *p.Limit
	}
	if offset < 0 || limit < 0 || limit > 100 {
		return nil, errorf(CodeInvalidParameterRange, "Offset must be >= 0 and Limit within 0..100.")
	}
	orderBy := "CreateTime"
	if p.OrderBy != nil {
		orderBy = *p.OrderBy
	}
	desc := true
	if p.OrderType != nil {
		switch *p.OrderType {
		case 0:
			desc = false
		case 1:
		default:
			return nil, errorf(CodeInvalidParameterValue, "OrderType must be 0 or 1.")
		}
	}
	var order func(a, b *lbRecord) int
	switch orderBy {
	case "CreateTime":
		order = func(a, b *lbRecord) int { return a.lb.CreateTime.Compare(b.lb.CreateTime) }
	case "LoadBalancerName":
		order = func(a, b *lbRecord) int { return strings.Compare(a.lb.Name, b.lb.Name) }
	case "LoadBalancerType":
		order = func(a, b *lbRecord) int { return strings.Compare(a.lb.Type, b.lb.Type) }
	case "Domain":
		order = func(a, b *lbRecord) int { return strings.Compare(a.lb.Domain, b.lb.Domain) }
	default:
		return nil, errorf(CodeInvalidParameterValue, "OrderBy must be one of LoadBalancerName, CreateTime, Domain, LoadBalancerType.")
	}

	var matched []*lbRecord
	for _, rec := range s.sortedLBsLocked() {
		lb := rec.lb
		switch {
		case lb.Region != req.region,
			len(p.LoadBalancerIds) > 0 && !slices.Contains(p.LoadBalancerIds, lb.ID),
			p.LoadBalancerType != nil && lb.Type != *p.LoadBalancerType,
			p.Forward != nil && *p.Forward != 1,     // every modelled instance is Forward=1
			p.ProjectId != nil && *p.ProjectId != 0, // and in the default project
			p.LoadBalancerName != nil && !strings.Contains(lb.Name, *p.LoadBalancerName),
			p.Domain != nil && !strings.Contains(lb.Domain, *p.Domain),
			len(p.LoadBalancerVips) > 0 && !slices.ContainsFunc(lb.VIPs, func(v string) bool { return slices.Contains(p.LoadBalancerVips, v) }),
			p.VpcId != nil && lb.VpcID != *p.VpcId,
			p.SearchKey != nil && !matchesSearchKey(lb, *p.SearchKey):
			continue
		}
		matched = append(matched, rec)
	}
	slices.SortStableFunc(matched, func(a, b *lbRecord) int {
		c := cmp.Or(order(a, b), cmp.Compare(a.seq, b.seq))
		if desc {
			return -c
		}
		return c
	})

	res := describeLoadBalancersResult{TotalCount: uint64(len(matched)), LoadBalancerSet: []loadBalancerJSON{}, RequestId: req.requestID}
	if offset < int64(len(matched)) {
		end := min(offset+limit, int64(len(matched)))
		for _, rec := range matched[offset:end] {
			res.LoadBalancerSet = append(res.LoadBalancerSet, renderLoadBalancer(rec.lb))
		}
	}
	return res, nil
}

func matchesSearchKey(lb LoadBalancer, k string) bool {
	return strings.Contains(lb.Name, k) || strings.Contains(lb.ID, k) || strings.Contains(lb.Domain, k) ||
		slices.ContainsFunc(lb.VIPs, func(v string) bool { return strings.Contains(v, k) })
}

// lbInRegionLocked finds a load balancer the caller's region can see.
func (s *Server) lbInRegionLocked(id *string, region string) (*lbRecord, *apiError) {
	if id == nil || *id == "" {
		return nil, missing("LoadBalancerId")
	}
	rec := s.lbs[*id]
	if rec == nil || rec.lb.Region != region {
		return nil, lbNotFound(*id)
	}
	return rec, nil
}

// ---- DescribeListeners ----

type describeListenersParams struct {
	LoadBalancerId *string
	ListenerIds    []string
	Protocol       *string
	Port           *int64
}

type healthCheckJSON struct {
	HealthSwitch    int64
	TimeOut         int64
	IntervalTime    int64
	HealthNum       int64
	UnHealthNum     int64
	HttpCode        int64
	HttpCheckPath   string
	HttpCheckDomain string
	HttpCheckMethod string
	CheckPort       int64
	CheckType       string
	HttpVersion     string
	SourceIpType    int64
}

type listenerJSON struct {
	ListenerId          string
	Protocol            string
	Port                int64
	HealthCheck         *healthCheckJSON `json:",omitempty"`
	Scheduler           string           `json:",omitempty"`
	SessionExpireTime   int64
	SniSwitch           int64
	Rules               []struct{} `json:",omitempty"`
	ListenerName        string
	CreateTime          string
	EndPort             int64
	TargetType          string
	SessionType         string
	KeepaliveEnable     int64
	Toa                 bool
	DeregisterTargetRst bool
	AttrFlags           []string
	MaxConn             int64
	MaxCps              int64
}

func renderListener(l Listener) listenerJSON {
	out := listenerJSON{
		ListenerId:        l.ID,
		Protocol:          l.Protocol,
		Port:              l.Port,
		Scheduler:         l.Scheduler,
		SessionExpireTime: l.SessionExpireTime,
		ListenerName:      l.Name,
		CreateTime:        cloudTime(l.CreateTime),
		TargetType:        "NODE",
		SessionType:       "NORMAL",
		KeepaliveEnable:   l.KeepaliveEnable,
		AttrFlags:         slices.Clone(l.AttrFlags),
		MaxConn:           -1,
		MaxCps:            -1,
	}
	if out.AttrFlags == nil {
		out.AttrFlags = []string{}
	}
	if l.SnatEnable && !slices.Contains(out.AttrFlags, AttrFlagSnatEnable) {
		out.AttrFlags = append(out.AttrFlags, AttrFlagSnatEnable)
	}
	if isLayer7(l.Protocol) {
		out.Rules = []struct{}{}
	}
	if hc := l.HealthCheck; hc != nil {
		out.HealthCheck = &healthCheckJSON{
			HealthSwitch: hc.HealthSwitch, TimeOut: hc.TimeOut, IntervalTime: hc.IntervalTime,
			HealthNum: hc.HealthNum, UnHealthNum: hc.UnHealthNum, HttpCode: hc.HTTPCode,
			HttpCheckPath: hc.HTTPCheckPath, HttpCheckDomain: hc.HTTPCheckDomain,
			HttpCheckMethod: hc.HTTPCheckMethod, CheckPort: hc.CheckPort, CheckType: hc.CheckType,
			HttpVersion: hc.HTTPVersion, SourceIpType: hc.SourceIPType,
		}
	}
	return out
}

type describeListenersResult struct {
	Listeners  []listenerJSON
	TotalCount uint64
	RequestId  string
}

func (s *Server) describeListeners(req *request, p *describeListenersParams) (any, *apiError) {
	lb, apiErr := s.lbInRegionLocked(p.LoadBalancerId, req.region)
	if apiErr != nil {
		return nil, apiErr
	}
	if len(p.ListenerIds) > 100 {
		return nil, errorf(CodeInvalidParameterLength, "ListenerIds holds at most 100 IDs.")
	}
	if p.Protocol != nil && !validProtocol(*p.Protocol) {
		return nil, errorf(CodeInvalidParameterValue, "Protocol must be one of TCP, UDP, HTTP, HTTPS, TCP_SSL, QUIC.")
	}
	if p.Port != nil && (*p.Port < 1 || *p.Port > 65535) {
		return nil, errorf(CodeInvalidParameterRange, "Port must be within 1..65535.")
	}
	res := describeListenersResult{Listeners: []listenerJSON{}, RequestId: req.requestID}
	// Unknown ListenerIds just match nothing here: a read filter, unlike a write target.
	// UNCONFIRMED.
	for _, rec := range s.sortedListenersLocked(lb.lb.ID) {
		l := rec.l
		if (len(p.ListenerIds) > 0 && !slices.Contains(p.ListenerIds, l.ID)) ||
			(p.Protocol != nil && l.Protocol != *p.Protocol) ||
			(p.Port != nil && l.Port != *p.Port) {
			continue
		}
		res.Listeners = append(res.Listeners, renderListener(l))
	}
	res.TotalCount = uint64(len(res.Listeners))
	return res, nil
}

// ---- ModifyListener and CreateListener ----

type healthCheckParam struct {
	HealthSwitch    *int64
	TimeOut         *int64
	IntervalTime    *int64
	HealthNum       *int64
	UnHealthNum     *int64
	HttpCode        *int64
	HttpCheckPath   *string
	HttpCheckDomain *string
	HttpCheckMethod *string
	CheckPort       *int64
	ContextType     *string
	SendContext     *string
	RecvContext     *string
	CheckType       *string
	HttpVersion     *string
	SourceIpType    *int64
	ExtendedCode    *string
}

// listenerSettings are the parameters ModifyListener and CreateListener share.
type listenerSettings struct {
	HealthCheck                *healthCheckParam
	Certificate                json.RawMessage
	MultiCertInfo              json.RawMessage
	SessionExpireTime          *int64
	Scheduler                  *string
	SniSwitch                  *int64
	TargetType                 *string
	SessionType                *string
	KeepaliveEnable            *int64
	DeregisterTargetRst        *bool
	MaxConn                    *int64
	MaxCps                     *int64
	IdleConnectTimeout         *int64
	ProxyProtocol              *bool
	SnatEnable                 *bool
	DataCompressMode           *string
	RescheduleTargetZeroWeight *bool
	RescheduleUnhealthy        *bool
	RescheduleExpandTarget     *bool
	RescheduleStartTime        *int64
	RescheduleInterval         *int64
}

type modifyListenerParams struct {
	LoadBalancerId *string
	ListenerId     *string
	ListenerName   *string
	listenerSettings
}

type createListenerParams struct {
	LoadBalancerId *string
	Ports          []int64
	Protocol       *string
	ListenerNames  []string
	EndPort        *uint64
	FullEndPorts   []int64
	H2cSwitch      *bool
	SslCloseSwitch *bool
	listenerSettings
}

// validate checks the settings against the listener's protocol. The protocol rules are
// the SDK's parameter docs (docs/sources.md#tke-clb-api); fields it does not mention are accepted and
// only the modelled ones are applied.
func (p *listenerSettings) validate(protocol string) *apiError {
	if p.KeepaliveEnable != nil {
		if !isLayer7(protocol) {
			return errorf(CodeInvalidParameterValue, "KeepaliveEnable is only supported by HTTP/HTTPS listeners, not %s.", protocol)
		}
		if *p.KeepaliveEnable != 0 && *p.KeepaliveEnable != 1 {
			return errorf(CodeInvalidParameterValue, "KeepaliveEnable must be 0 or 1.")
		}
	}
	if p.ProxyProtocol != nil && protocol != ProtocolTCPSSL && protocol != ProtocolQUIC {
		return errorf(CodeInvalidParameterValue, "ProxyProtocol is only supported by TCP_SSL/QUIC listeners, not %s.", protocol)
	}
	if hc := p.HealthCheck; hc != nil {
		// The SDK documents listener-level HealthCheck for TCP/UDP/TCP_SSL/QUIC only;
		// HTTP/HTTPS health checks live on rules. Refusing it (rather than ignoring it) is
		// UNCONFIRMED.
		if isLayer7(protocol) {
			return errorf(CodeInvalidParameterValue, "HealthCheck is only supported by TCP/UDP/TCP_SSL/QUIC listeners; set it on the rules of a %s listener.", protocol)
		}
		if hc.HealthSwitch != nil && *hc.HealthSwitch != 0 && *hc.HealthSwitch != 1 {
			return errorf(CodeInvalidParameterValue, "HealthCheck.HealthSwitch must be 0 or 1.")
		}
		if hc.SourceIpType != nil && *hc.SourceIpType != 0 && *hc.SourceIpType != 1 {
			return errorf(CodeInvalidParameterValue, "HealthCheck.SourceIpType must be 0 (VIP) or 1 (100.64 range).")
		}
	}
	if p.Scheduler != nil {
		switch *p.Scheduler {
		case "WRR", "LEAST_CONN", "IP_HASH":
		default:
			return errorf(CodeInvalidParameterValue, "Scheduler must be WRR, LEAST_CONN or IP_HASH.")
		}
	}
	return nil
}

// applyTo writes the modelled settings into a listener.
func (p *listenerSettings) applyTo(l *Listener) {
	if p.SnatEnable != nil {
		l.SnatEnable = *p.SnatEnable
	}
	if p.KeepaliveEnable != nil {
		l.KeepaliveEnable = *p.KeepaliveEnable
	}
	if p.ProxyProtocol != nil {
		l.ProxyProtocol = *p.ProxyProtocol
	}
	if p.Scheduler != nil {
		l.Scheduler = *p.Scheduler
	}
	if p.SessionExpireTime != nil {
		l.SessionExpireTime = *p.SessionExpireTime
	}
	if hc := p.HealthCheck; hc != nil {
		if l.HealthCheck == nil {
			l.HealthCheck = defaultHealthCheck()
		}
		set := func(dst *int64, src *int64) {
			if src != nil {
				*dst = *src
			}
		}
		setS := func(dst *string, src *string) {
			if src != nil {
				*dst = *src
			}
		}
		h := l.HealthCheck
		set(&h.HealthSwitch, hc.HealthSwitch)
		set(&h.TimeOut, hc.TimeOut)
		set(&h.IntervalTime, hc.IntervalTime)
		set(&h.HealthNum, hc.HealthNum)
		set(&h.UnHealthNum, hc.UnHealthNum)
		set(&h.HTTPCode, hc.HttpCode)
		setS(&h.HTTPCheckPath, hc.HttpCheckPath)
		setS(&h.HTTPCheckDomain, hc.HttpCheckDomain)
		setS(&h.HTTPCheckMethod, hc.HttpCheckMethod)
		set(&h.CheckPort, hc.CheckPort)
		setS(&h.CheckType, hc.CheckType)
		setS(&h.HTTPVersion, hc.HttpVersion)
		set(&h.SourceIPType, hc.SourceIpType)
	}
}

// admitWriteLocked applies the checks every write shares once its parameters are valid:
// the LB must be idle, and the account must hold the capabilities the write turns on.
// It returns the message a failing task should end with ("" when the task succeeds).
func (s *Server) admitWriteLocked(req *request, lbID string, caps []Capability) (string, *apiError) {
	if s.busyLocked(lbID) {
		return "", errorf(CodeResourceInOperating, "The specified resource %s is currently being operated. Please try again later.", lbID)
	}
	failMsg := ""
	if c := s.missingCapabilityLocked(caps); c != "" {
		if s.denial.Mode == DenySync {
			return "", &apiError{Code: s.denial.code(), Message: s.denial.message(c)}
		}
		failMsg = s.denial.message(c)
	}
	if req.fault != nil && failMsg == "" {
		failMsg = req.fault.FailTask
	}
	return failMsg, nil
}

func (s *Server) modifyListener(req *request, p *modifyListenerParams) (any, *apiError) {
	lb, apiErr := s.lbInRegionLocked(p.LoadBalancerId, req.region)
	if apiErr != nil {
		return nil, apiErr
	}
	if p.ListenerId == nil || *p.ListenerId == "" {
		return nil, missing("ListenerId")
	}
	rec := s.listeners[*p.ListenerId]
	if rec == nil || rec.l.LoadBalancerID != lb.lb.ID {
		return nil, listenerNotFound(*p.ListenerId)
	}
	if apiErr := p.validate(rec.l.Protocol); apiErr != nil {
		return nil, apiErr
	}
	failMsg, apiErr := s.admitWriteLocked(req, lb.lb.ID, capabilitiesFor(rec.l.Protocol, p.SnatEnable, p.KeepaliveEnable))
	if apiErr != nil {
		return nil, apiErr
	}
	id := rec.l.ID
	s.startTaskLocked(req, []string{lb.lb.ID}, failMsg, func() {
		cur := s.listeners[id]
		if cur == nil {
			return
		}
		if p.ListenerName != nil {
			cur.l.Name = *p.ListenerName
		}
		p.applyTo(&cur.l)
	})
	return requestIDOnly{RequestId: req.requestID}, nil
}

type createListenerResult struct {
	ListenerIds []string
	RequestId   string
}

func (s *Server) createListener(req *request, p *createListenerParams) (any, *apiError) {
	lb, apiErr := s.lbInRegionLocked(p.LoadBalancerId, req.region)
	if apiErr != nil {
		return nil, apiErr
	}
	switch {
	case p.Protocol == nil || *p.Protocol == "":
		return nil, missing("Protocol")
	case len(p.Ports) == 0:
		return nil, missing("Ports")
	case !validProtocol(*p.Protocol):
		return nil, errorf(CodeInvalidParameterValue, "Protocol must be one of TCP, UDP, HTTP, HTTPS, TCP_SSL, QUIC.")
	case p.EndPort != nil:
		return nil, notModelled("EndPort")
	case len(p.FullEndPorts) > 0:
		return nil, notModelled("FullEndPorts")
	}
	protocol := *p.Protocol
	for i, port := range p.Ports {
		if port < 1 || port > 65535 {
			return nil, errorf(CodeInvalidParameterRange, "Ports.%d must be within 1..65535.", i)
		}
		if slices.Contains(p.Ports[:i], port) {
			return nil, errorf(CodePortCheckFailed, "Port %d is listed twice.", port)
		}
		if other := s.portOwnerLocked(lb.lb.ID, protocol, port); other != "" {
			return nil, errorf(CodePortCheckFailed, "Port %d conflicts with listener %s.", port, other)
		}
	}
	if apiErr := p.validate(protocol); apiErr != nil {
		return nil, apiErr
	}
	failMsg, apiErr := s.admitWriteLocked(req, lb.lb.ID, capabilitiesFor(protocol, p.SnatEnable, p.KeepaliveEnable))
	if apiErr != nil {
		return nil, apiErr
	}

	// IDs are answered at once; the listeners appear when the task completes.
	var created []Listener
	for i, port := range p.Ports {
		l := Listener{LoadBalancerID: lb.lb.ID, Protocol: protocol, Port: port, CreateTime: req.now}
		for l.ID == "" || s.listeners[l.ID] != nil {
			l.ID = randomID("lbl-")
		}
		if i < len(p.ListenerNames) {
			l.Name = p.ListenerNames[i]
		}
		if !isLayer7(protocol) {
			l.HealthCheck = defaultHealthCheck()
			l.Scheduler = "WRR"
		}
		p.applyTo(&l)
		created = append(created, l)
	}
	s.startTaskLocked(req, []string{lb.lb.ID}, failMsg, func() {
		for _, l := range created {
			if s.listeners[l.ID] != nil || s.portOwnerLocked(l.LoadBalancerID, l.Protocol, l.Port) != "" {
				continue
			}
			s.seq++
			s.listeners[l.ID] = &listenerRecord{l: l, seq: s.seq}
		}
	})
	res := createListenerResult{RequestId: req.requestID}
	for _, l := range created {
		res.ListenerIds = append(res.ListenerIds, l.ID)
	}
	return res, nil
}

// ---- DescribeTaskStatus ----

type describeTaskStatusParams struct {
	TaskId   *string
	DealName *string
}

type describeTaskStatusResult struct {
	Status          int64
	LoadBalancerIds []string
	Message         string
	RequestId       string
}

func (s *Server) describeTaskStatus(req *request, p *describeTaskStatusParams) (any, *apiError) {
	if p.DealName != nil {
		return nil, notModelled("DealName")
	}
	if p.TaskId == nil || *p.TaskId == "" {
		return nil, errorf(CodeInvalidParameter, "One of TaskId and DealName is required.")
	}
	t := s.tasks[*p.TaskId]
	// The code and wording for an unknown task are UNCONFIRMED; InvalidParameter is in
	// DescribeTaskStatus' documented error list.
	if t == nil || t.region != req.region {
		return nil, errorf(CodeInvalidParameter, "TaskId %s not found.", *p.TaskId)
	}
	pt := t.public()
	return describeTaskStatusResult{Status: int64(pt.Status), LoadBalancerIds: pt.LoadBalancerIDs, Message: pt.Message, RequestId: req.requestID}, nil
}
