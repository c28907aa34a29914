package clbtest

import (
	"encoding/json"
	"fmt"
	"slices"
)

// ---- CreateLoadBalancer and DeleteLoadBalancer ----

// createLoadBalancerParams are CreateLoadBalancerRequestParams of the SDK. Only the
// parameters a load balancer here holds are applied; the others (billing, zones, bandwidth,
// exclusive clusters, tags) are refused when set, as the package does for filters it does not
// model.
type createLoadBalancerParams struct {
	LoadBalancerType          *string
	Forward                   *int64
	LoadBalancerName          *string
	VpcId                     *string
	SubnetId                  *string
	ProjectId                 *int64
	AddressIPVersion          *string
	Number                    *uint64
	MasterZoneId              *string
	ZoneId                    *string
	InternetAccessible        json.RawMessage
	VipIsp                    *string
	Tags                      json.RawMessage
	Vip                       *string
	BandwidthPackageId        *string
	ExclusiveCluster          json.RawMessage
	SlaType                   *string
	ClusterIds                []string
	ClientToken               *string
	SnatPro                   *bool
	SnatIps                   json.RawMessage
	ClusterTag                *string
	SlaveZoneId               *string
	EipAddressId              *string
	LoadBalancerPassToTarget  *bool
	DynamicVip                *bool
	Egress                    *string
	LBChargePrepaid           json.RawMessage
	LBChargeType              *string
	AccessLogTopicId          *string
	AdvancedRoute             *bool
	AvailableZoneAffinityInfo json.RawMessage
}

// unmodelled names the first parameter set that this fake does not hold, or "".
func (p *createLoadBalancerParams) unmodelled() string {
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"MasterZoneId", p.MasterZoneId != nil}, {"ZoneId", p.ZoneId != nil}, {"SlaveZoneId", p.SlaveZoneId != nil},
		{"InternetAccessible", len(p.InternetAccessible) > 0}, {"VipIsp", p.VipIsp != nil}, {"Tags", len(p.Tags) > 0},
		{"BandwidthPackageId", p.BandwidthPackageId != nil}, {"ExclusiveCluster", len(p.ExclusiveCluster) > 0},
		{"SlaType", p.SlaType != nil}, {"ClusterIds", len(p.ClusterIds) > 0}, {"SnatIps", len(p.SnatIps) > 0},
		{"ClusterTag", p.ClusterTag != nil}, {"EipAddressId", p.EipAddressId != nil}, {"DynamicVip", p.DynamicVip != nil},
		{"Egress", p.Egress != nil}, {"LBChargePrepaid", len(p.LBChargePrepaid) > 0}, {"LBChargeType", p.LBChargeType != nil},
		{"AccessLogTopicId", p.AccessLogTopicId != nil}, {"AdvancedRoute", p.AdvancedRoute != nil},
		{"AvailableZoneAffinityInfo", len(p.AvailableZoneAffinityInfo) > 0},
	} {
		if f.set {
			return f.name
		}
	}
	return ""
}

type createLoadBalancerResult struct {
	LoadBalancerIds []string
	RequestId       string
}

// maxCreateNumber is how many instances one CreateLoadBalancer may buy (the SDK's doc for
// Number: "默认值：1", with an account quota; 20 is this fake's UNCONFIRMED cap).
const maxCreateNumber = 20

// createLoadBalancer buys Number instances (default 1). Like CreateListener it answers the IDs
// at once and runs as a task whose ID is the RequestId; the instances appear when the task
// completes. (The cloud lists a creating instance with Status 0; showing none until then is
// UNCONFIRMED.) A private (INTERNAL) instance needs VpcId and SubnetId and gets a VIP in
// 10.0.0.0/16 unless Vip names one; a public (OPEN) one gets a VIP in 203.0.113.0/24. A
// ClientToken seen before answers the earlier call's IDs and creates nothing (the call is still
// listed among Writes, as every accepted call of a write action is).
func (s *Server) createLoadBalancer(req *request, p *createLoadBalancerParams) (any, *apiError) {
	if p.LoadBalancerType == nil || *p.LoadBalancerType == "" {
		return nil, missing("LoadBalancerType")
	}
	typ := *p.LoadBalancerType
	if typ != LoadBalancerOpen && typ != LoadBalancerInternal {
		return nil, errorf(CodeInvalidParameterValue, "LoadBalancerType must be OPEN or INTERNAL.")
	}
	if name := p.unmodelled(); name != "" {
		return nil, notModelled(name)
	}
	switch {
	case p.Forward != nil && *p.Forward != 1:
		return nil, notModelled("Forward") // classic CLBs are retired; only Forward=1 is held
	case p.ProjectId != nil && *p.ProjectId != 0:
		return nil, notModelled("ProjectId")
	case p.AddressIPVersion != nil && *p.AddressIPVersion != "IPV4":
		return nil, notModelled("AddressIPVersion")
	}
	if typ == LoadBalancerInternal {
		if p.VpcId == nil || *p.VpcId == "" {
			return nil, missing("VpcId")
		}
		if p.SubnetId == nil || *p.SubnetId == "" {
			return nil, missing("SubnetId")
		}
	}
	n := uint64(1)
	if p.Number != nil {
		n = *p.Number
	}
	if n < 1 || n > maxCreateNumber {
		return nil, errorf(CodeInvalidParameterRange, "Number must be within 1..%d.", maxCreateNumber)
	}
	if p.Vip != nil && n != 1 {
		return nil, errorf(CodeInvalidParameterCombination, "Vip can only be given when Number is 1.")
	}
	if p.ClientToken != nil && *p.ClientToken != "" {
		if ids, ok := s.clientTokens[*p.ClientToken]; ok {
			return createLoadBalancerResult{LoadBalancerIds: slices.Clone(ids), RequestId: req.requestID}, nil
		}
	}

	var created []LoadBalancer
	taken := s.vipsInUseLocked()
	for range n {
		lb := LoadBalancer{Region: req.region, Type: typ, CreateTime: req.now}
		for lb.ID == "" || s.lbs[lb.ID] != nil || s.pendingLBLocked(lb.ID) {
			lb.ID = randomID("lb-")
		}
		if p.LoadBalancerName != nil {
			lb.Name = *p.LoadBalancerName
		}
		if p.VpcId != nil {
			lb.VpcID = *p.VpcId
		}
		if p.SubnetId != nil {
			lb.SubnetID = *p.SubnetId
		}
		if p.SnatPro != nil {
			lb.SnatPro = *p.SnatPro
		}
		if p.LoadBalancerPassToTarget != nil {
			lb.PassToTarget = *p.LoadBalancerPassToTarget
		}
		vip := ""
		if p.Vip != nil && *p.Vip != "" {
			vip = *p.Vip
			if taken[vip] {
				return nil, errorf(CodeInvalidParameterValue, "Vip %s is already in use.", vip)
			}
		} else if vip = freeVIP(typ, taken); vip == "" {
			return nil, errorf(CodeLimitExceeded, "No free %s address left.", typ)
		}
		taken[vip] = true
		lb.VIPs = []string{vip}
		created = append(created, lb)
	}
	ids := make([]string, len(created))
	for i, lb := range created {
		ids[i] = lb.ID
	}
	failMsg := ""
	if req.fault != nil {
		failMsg = req.fault.FailTask
	}
	s.creating[req.requestID] = created
	s.startTaskLocked(req, ids, failMsg, func() {
		for _, lb := range created {
			if s.lbs[lb.ID] != nil {
				continue
			}
			s.seq++
			s.lbs[lb.ID] = &lbRecord{lb: cloneLB(lb), seq: s.seq}
		}
	})
	if p.ClientToken != nil && *p.ClientToken != "" {
		s.clientTokens[*p.ClientToken] = slices.Clone(ids)
	}
	return createLoadBalancerResult{LoadBalancerIds: ids, RequestId: req.requestID}, nil
}

// pendingLocked lists the instances running CreateLoadBalancer tasks are creating.
func (s *Server) pendingLocked() []LoadBalancer {
	var out []LoadBalancer
	for tid, lbs := range s.creating {
		if t := s.tasks[tid]; t != nil && !t.done {
			out = append(out, lbs...)
		}
	}
	return out
}

// pendingLBLocked reports whether a running task is creating an instance with this ID.
func (s *Server) pendingLBLocked(id string) bool {
	return slices.ContainsFunc(s.pendingLocked(), func(lb LoadBalancer) bool { return lb.ID == id })
}

// vipsInUseLocked is every VIP held or being created.
func (s *Server) vipsInUseLocked() map[string]bool {
	taken := map[string]bool{}
	for _, rec := range s.lbs {
		for _, v := range rec.lb.VIPs {
			taken[v] = true
		}
	}
	for _, lb := range s.pendingLocked() {
		for _, v := range lb.VIPs {
			taken[v] = true
		}
	}
	return taken
}

func freeVIP(typ string, taken map[string]bool) string {
	if typ == LoadBalancerOpen {
		for i := 1; i < 255; i++ {
			if v := fmt.Sprintf("203.0.113.%d", i); !taken[v] {
				return v
			}
		}
		return ""
	}
	for i := 256; i < 65535; i++ {
		if v := fmt.Sprintf("10.0.%d.%d", i/256, i%256); i%256 != 0 && i%256 != 255 && !taken[v] {
			return v
		}
	}
	return ""
}

type deleteLoadBalancerParams struct {
	LoadBalancerIds []string
	ForceDelete     *bool
}

// deleteLoadBalancer deletes up to 20 instances, with their listeners, as one task. Every ID
// must name an instance of the caller's region that is not busy with another task; otherwise
// nothing is deleted. ForceDelete is accepted: no instance here has deletion protection.
func (s *Server) deleteLoadBalancer(req *request, p *deleteLoadBalancerParams) (any, *apiError) {
	if len(p.LoadBalancerIds) == 0 {
		return nil, missing("LoadBalancerIds")
	}
	if len(p.LoadBalancerIds) > 20 {
		return nil, errorf(CodeInvalidParameterLength, "LoadBalancerIds holds at most 20 IDs.")
	}
	for i, id := range p.LoadBalancerIds {
		if _, apiErr := s.lbInRegionLocked(&id, req.region); apiErr != nil {
			return nil, apiErr
		}
		if slices.Contains(p.LoadBalancerIds[:i], id) {
			return nil, errorf(CodeInvalidParameterValue, "LoadBalancerIds lists %s twice.", id)
		}
	}
	for _, id := range p.LoadBalancerIds {
		if _, apiErr := s.admitWriteLocked(req, id, nil); apiErr != nil {
			return nil, apiErr
		}
	}
	ids := slices.Clone(p.LoadBalancerIds)
	s.startTaskLocked(req, ids, "", func() {
		for _, id := range ids {
			delete(s.lbs, id)
			for lid, rec := range s.listeners {
				if rec.l.LoadBalancerID == id {
					delete(s.listeners, lid)
				}
			}
		}
	})
	return requestIDOnly{RequestId: req.requestID}, nil
}
