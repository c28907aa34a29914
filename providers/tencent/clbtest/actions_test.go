package clbtest_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"

	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

func TestDescribeLoadBalancers(t *testing.T) {
	srv := start(t, &clbtest.Options{RateLimit: clbtest.Unlimited}) // more than 20 calls a second
	// Five instances created one minute apart (lb-1 oldest), one in another region.
	base := time.Now().Add(-time.Hour)
	for i := 1; i <= 5; i++ {
		typ := clbtest.LoadBalancerInternal
		if i%2 == 0 {
			typ = clbtest.LoadBalancerOpen
		}
		if _, err := srv.AddLoadBalancer(clbtest.LoadBalancer{
			ID: fmt.Sprintf("lb-%d", i), Name: fmt.Sprintf("svc-%c", 'e'-i+1), Type: typ,
			VIPs: []string{fmt.Sprintf("10.0.0.%d", i)}, VpcID: "vpc-1", CreateTime: base.Add(time.Duration(i) * time.Minute),
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := srv.AddLoadBalancer(clbtest.LoadBalancer{ID: "lb-sh", Type: clbtest.LoadBalancerInternal, Region: "ap-shanghai"}); err != nil {
		t.Fatal(err)
	}
	c := client(t, srv)

	list := func(t *testing.T, mutate func(*clb.DescribeLoadBalancersRequest)) ([]string, uint64, error) {
		t.Helper()
		req := clb.NewDescribeLoadBalancersRequest()
		mutate(req)
		resp, err := c.DescribeLoadBalancers(req)
		if err != nil {
			return nil, 0, err
		}
		var ids []string
		for _, lb := range resp.Response.LoadBalancerSet {
			ids = append(ids, *lb.LoadBalancerId)
		}
		return ids, *resp.Response.TotalCount, nil
	}

	cases := map[string]struct {
		mutate    func(*clb.DescribeLoadBalancersRequest)
		wantIDs   []string
		wantTotal uint64
		wantCode  string
	}{
		"default: newest first, this region only": {mutate: func(*clb.DescribeLoadBalancersRequest) {}, wantIDs: []string{"lb-5", "lb-4", "lb-3", "lb-2", "lb-1"}, wantTotal: 5},
		"first page":   {mutate: func(r *clb.DescribeLoadBalancersRequest) { r.Limit = common.Int64Ptr(2) }, wantIDs: []string{"lb-5", "lb-4"}, wantTotal: 5},
		"second page":  {mutate: func(r *clb.DescribeLoadBalancersRequest) { r.Offset, r.Limit = common.Int64Ptr(2), common.Int64Ptr(2) }, wantIDs: []string{"lb-3", "lb-2"}, wantTotal: 5},
		"last page":    {mutate: func(r *clb.DescribeLoadBalancersRequest) { r.Offset, r.Limit = common.Int64Ptr(4), common.Int64Ptr(2) }, wantIDs: []string{"lb-1"}, wantTotal: 5},
		"past the end": {mutate: func(r *clb.DescribeLoadBalancersRequest) { r.Offset = common.Int64Ptr(10) }, wantIDs: nil, wantTotal: 5},
		"oldest first": {mutate: func(r *clb.DescribeLoadBalancersRequest) { r.OrderType = common.Int64Ptr(0) }, wantIDs: []string{"lb-1", "lb-2", "lb-3", "lb-4", "lb-5"}, wantTotal: 5},
		"by name": {mutate: func(r *clb.DescribeLoadBalancersRequest) {
			r.OrderBy, r.OrderType = common.StringPtr("LoadBalancerName"), common.Int64Ptr(0)
		}, wantIDs: []string{"lb-5", "lb-4", "lb-3", "lb-2", "lb-1"}, wantTotal: 5},
		"by IDs, unknown ones ignored": {mutate: func(r *clb.DescribeLoadBalancersRequest) {
			r.LoadBalancerIds = common.StringPtrs([]string{"lb-2", "lb-nope", "lb-sh"})
		}, wantIDs: []string{"lb-2"}, wantTotal: 1},
		"by type": {mutate: func(r *clb.DescribeLoadBalancersRequest) { r.LoadBalancerType = common.StringPtr("OPEN") }, wantIDs: []string{"lb-4", "lb-2"}, wantTotal: 2},
		"by VIP": {mutate: func(r *clb.DescribeLoadBalancersRequest) {
			r.LoadBalancerVips = common.StringPtrs([]string{"10.0.0.3"})
		}, wantIDs: []string{"lb-3"}, wantTotal: 1},
		"by name fragment": {mutate: func(r *clb.DescribeLoadBalancersRequest) { r.LoadBalancerName = common.StringPtr("svc-a") }, wantIDs: []string{"lb-5"}, wantTotal: 1},
		"search key":       {mutate: func(r *clb.DescribeLoadBalancersRequest) { r.SearchKey = common.StringPtr("10.0.0.1") }, wantIDs: []string{"lb-1"}, wantTotal: 1},
		"by VPC":           {mutate: func(r *clb.DescribeLoadBalancersRequest) { r.VpcId = common.StringPtr("vpc-2") }, wantIDs: nil, wantTotal: 0},
		"limit above 100":  {mutate: func(r *clb.DescribeLoadBalancersRequest) { r.Limit = common.Int64Ptr(101) }, wantCode: clbtest.CodeInvalidParameterRange},
		"bad type":         {mutate: func(r *clb.DescribeLoadBalancersRequest) { r.LoadBalancerType = common.StringPtr("PUBLIC") }, wantCode: clbtest.CodeInvalidParameterValue},
		"bad order":        {mutate: func(r *clb.DescribeLoadBalancersRequest) { r.OrderBy = common.StringPtr("VIP") }, wantCode: clbtest.CodeInvalidParameterValue},
		"too many IDs": {mutate: func(r *clb.DescribeLoadBalancersRequest) {
			for i := range 21 {
				r.LoadBalancerIds = append(r.LoadBalancerIds, common.StringPtr(fmt.Sprint("lb-x", i)))
			}
		}, wantCode: clbtest.CodeInvalidParameterLength},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ids, total, err := list(t, tc.mutate)
			if got := codeOf(t, err); got != tc.wantCode {
				t.Fatalf("code = %q (%v), want %q", got, err, tc.wantCode)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.wantIDs, ids); diff != "" || total != tc.wantTotal {
				t.Errorf("ids (-want +got):\n%s total = %d, want %d", diff, total, tc.wantTotal)
			}
		})
	}

	t.Run("pages cover every instance once", func(t *testing.T) {
		var all []string
		for offset := int64(0); ; offset += 2 {
			ids, _, err := list(t, func(r *clb.DescribeLoadBalancersRequest) { r.Offset, r.Limit = &offset, common.Int64Ptr(2) })
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) == 0 {
				break
			}
			all = append(all, ids...)
		}
		slices.Sort(all)
		if diff := cmp.Diff([]string{"lb-1", "lb-2", "lb-3", "lb-4", "lb-5"}, all); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})

	t.Run("other region sees its own", func(t *testing.T) {
		sh := clientWith(t, profileFor(srv), common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey), "ap-shanghai")
		resp, err := sh.DescribeLoadBalancers(clb.NewDescribeLoadBalancersRequest())
		if err != nil {
			t.Fatal(err)
		}
		if *resp.Response.TotalCount != 1 || *resp.Response.LoadBalancerSet[0].LoadBalancerId != "lb-sh" {
			t.Errorf("ap-shanghai sees %s", resp.ToJsonString())
		}
	})
}

// TestLoadBalancerFields checks the attributes loopguard reads decode into the SDK model.
func TestLoadBalancerFields(t *testing.T) {
	srv := start(t, nil)
	seeded, err := srv.AddLoadBalancer(clbtest.LoadBalancer{
		Name: "edge", Type: clbtest.LoadBalancerInternal, VIPs: []string{"10.1.0.5"}, VpcID: "vpc-9", SubnetID: "subnet-9",
		SnatPro: true, SnatIPs: []clbtest.SnatIP{{SubnetID: "subnet-9", IP: "10.1.0.200"}}, PassToTarget: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(seeded.ID, "lb-") || len(seeded.ID) != len("lb-")+8 {
		t.Errorf("generated ID %q, want lb-xxxxxxxx", seeded.ID)
	}
	req := clb.NewDescribeLoadBalancersRequest()
	req.LoadBalancerIds = common.StringPtrs([]string{seeded.ID})
	resp, err := client(t, srv).DescribeLoadBalancers(req)
	if err != nil {
		t.Fatal(err)
	}
	lb := resp.Response.LoadBalancerSet[0]
	got := []any{*lb.LoadBalancerName, *lb.LoadBalancerType, common.StringValues(lb.LoadBalancerVips), *lb.VpcId, *lb.SubnetId,
		*lb.SnatPro, *lb.SnatIps[0].Ip, *lb.LoadBalancerPassToTarget, *lb.Forward, *lb.Status}
	want := []any{"edge", "INTERNAL", []string{"10.1.0.5"}, "vpc-9", "subnet-9", true, "10.1.0.200", true, uint64(1), uint64(1)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := time.Parse(time.DateTime, *lb.CreateTime); err != nil {
		t.Errorf("CreateTime %q: %v", *lb.CreateTime, err)
	}
}

func TestDescribeListeners(t *testing.T) {
	srv := start(t, nil)
	seedLB(t, srv, "lb-a")
	seedLB(t, srv, "lb-b")
	for _, l := range []clbtest.Listener{
		{LoadBalancerID: "lb-a", ID: "lb-a-udp", Protocol: clbtest.ProtocolUDP, Port: 80, AttrFlags: []string{"SnatEnable", "Other"}},
		{LoadBalancerID: "lb-a", ID: "lb-a-https", Protocol: clbtest.ProtocolHTTPS, Port: 443, KeepaliveEnable: 1},
	} {
		if _, err := srv.AddListener(l); err != nil {
			t.Fatal(err)
		}
	}
	c := client(t, srv)

	cases := map[string]struct {
		mutate   func(*clb.DescribeListenersRequest)
		want     []string
		wantCode string
	}{
		"all of one LB": {mutate: func(*clb.DescribeListenersRequest) {}, want: []string{"lb-a-tcp", "lb-a-http", "lb-a-udp", "lb-a-https"}},
		"by protocol":   {mutate: func(r *clb.DescribeListenersRequest) { r.Protocol = common.StringPtr("UDP") }, want: []string{"lb-a-udp"}},
		"by port":       {mutate: func(r *clb.DescribeListenersRequest) { r.Port = common.Int64Ptr(80) }, want: []string{"lb-a-tcp", "lb-a-udp"}},
		"by IDs": {mutate: func(r *clb.DescribeListenersRequest) {
			r.ListenerIds = common.StringPtrs([]string{"lb-a-https", "lb-b-tcp"})
		}, want: []string{"lb-a-https"}},
		"nothing matches": {mutate: func(r *clb.DescribeListenersRequest) { r.Port = common.Int64Ptr(9) }, want: nil},
		"unknown LB":      {mutate: func(r *clb.DescribeListenersRequest) { r.LoadBalancerId = common.StringPtr("lb-zzz") }, wantCode: clbtest.CodeLBIDNotFound},
		"no LB":           {mutate: func(r *clb.DescribeListenersRequest) { r.LoadBalancerId = nil }, wantCode: clbtest.CodeMissingParameter},
		"bad protocol":    {mutate: func(r *clb.DescribeListenersRequest) { r.Protocol = common.StringPtr("SCTP") }, wantCode: clbtest.CodeInvalidParameterValue},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := clb.NewDescribeListenersRequest()
			req.LoadBalancerId = common.StringPtr("lb-a")
			tc.mutate(req)
			resp, err := c.DescribeListeners(req)
			if got := codeOf(t, err); got != tc.wantCode {
				t.Fatalf("code = %q (%v), want %q", got, err, tc.wantCode)
			}
			if err != nil {
				return
			}
			var ids []string
			for _, l := range resp.Response.Listeners {
				ids = append(ids, *l.ListenerId)
			}
			if diff := cmp.Diff(tc.want, ids); diff != "" || *resp.Response.TotalCount != uint64(len(tc.want)) {
				t.Errorf("(-want +got):\n%s TotalCount %d", diff, *resp.Response.TotalCount)
			}
		})
	}

	t.Run("read-side attributes", func(t *testing.T) {
		udp := describeListener(t, c, "lb-a", "lb-a-udp")
		if diff := cmp.Diff([]string{"Other", "SnatEnable"}, common.StringValues(udp.AttrFlags)); diff != "" {
			t.Errorf("AttrFlags (-want +got):\n%s", diff)
		}
		if *udp.HealthCheck.SourceIpType != 0 || *udp.HealthCheck.HealthSwitch != 1 {
			t.Errorf("default layer-4 health check missing: %+v", udp.HealthCheck)
		}
		tcp := describeListener(t, c, "lb-a", "lb-a-tcp")
		if snatOn(tcp) || len(tcp.AttrFlags) != 0 {
			t.Errorf("TCP listener AttrFlags = %v, want none", common.StringValues(tcp.AttrFlags))
		}
		https := describeListener(t, c, "lb-a", "lb-a-https")
		if *https.KeepaliveEnable != 1 || https.HealthCheck != nil {
			t.Errorf("HTTPS listener: KeepaliveEnable %d, HealthCheck %+v", *https.KeepaliveEnable, https.HealthCheck)
		}
	})
}

func TestModifyListener(t *testing.T) {
	everything := []clbtest.Capability{clbtest.L4SNAT, clbtest.L7SNAT, clbtest.KeepAlive}
	cases := map[string]struct {
		listener string
		mutate   func(*clb.ModifyListenerRequest)
		wantCode string
		check    func(*testing.T, *clb.Listener)
	}{
		"SNAT on a TCP listener": {
			listener: "lb-a-tcp", mutate: func(r *clb.ModifyListenerRequest) { r.SnatEnable = common.BoolPtr(true) },
			check: func(t *testing.T, l *clb.Listener) {
				if !snatOn(l) {
					t.Error("SnatEnable missing from AttrFlags")
				}
			},
		},
		"SNAT on an HTTP listener": {
			listener: "lb-a-http", mutate: func(r *clb.ModifyListenerRequest) { r.SnatEnable = common.BoolPtr(true) },
			check: func(t *testing.T, l *clb.Listener) {
				if !snatOn(l) {
					t.Error("SnatEnable missing from AttrFlags")
				}
			},
		},
		"keepalive on HTTP": {
			listener: "lb-a-http", mutate: func(r *clb.ModifyListenerRequest) { r.KeepaliveEnable = common.Int64Ptr(1) },
			check: func(t *testing.T, l *clb.Listener) {
				if *l.KeepaliveEnable != 1 {
					t.Errorf("KeepaliveEnable = %d", *l.KeepaliveEnable)
				}
			},
		},
		"health check from the 100.64 range": {
			listener: "lb-a-tcp", mutate: func(r *clb.ModifyListenerRequest) {
				r.HealthCheck = &clb.HealthCheck{SourceIpType: common.Int64Ptr(1)}
			},
			check: func(t *testing.T, l *clb.Listener) {
				if *l.HealthCheck.SourceIpType != 1 || *l.HealthCheck.HealthSwitch != 1 {
					t.Errorf("HealthCheck = %+v, want SourceIpType 1 and the rest kept", l.HealthCheck)
				}
			},
		},
		"rename, scheduler and fields kept leniently": {
			listener: "lb-a-tcp", mutate: func(r *clb.ModifyListenerRequest) {
				r.ListenerName = common.StringPtr("web")
				r.Scheduler = common.StringPtr("LEAST_CONN")
				r.IdleConnectTimeout = common.Int64Ptr(600) // accepted, not modelled
			},
			check: func(t *testing.T, l *clb.Listener) {
				if *l.ListenerName != "web" || *l.Scheduler != "LEAST_CONN" {
					t.Errorf("name %q scheduler %q", *l.ListenerName, *l.Scheduler)
				}
			},
		},
		"keepalive on TCP": {
			listener: "lb-a-tcp", mutate: func(r *clb.ModifyListenerRequest) { r.KeepaliveEnable = common.Int64Ptr(1) },
			wantCode: clbtest.CodeInvalidParameterValue,
		},
		"keepalive value 2": {
			listener: "lb-a-http", mutate: func(r *clb.ModifyListenerRequest) { r.KeepaliveEnable = common.Int64Ptr(2) },
			wantCode: clbtest.CodeInvalidParameterValue,
		},
		"health check on HTTP": {
			listener: "lb-a-http", mutate: func(r *clb.ModifyListenerRequest) { r.HealthCheck = &clb.HealthCheck{SourceIpType: common.Int64Ptr(1)} },
			wantCode: clbtest.CodeInvalidParameterValue,
		},
		"source IP type 2": {
			listener: "lb-a-tcp", mutate: func(r *clb.ModifyListenerRequest) { r.HealthCheck = &clb.HealthCheck{SourceIpType: common.Int64Ptr(2)} },
			wantCode: clbtest.CodeInvalidParameterValue,
		},
		"proxy protocol on TCP": {
			listener: "lb-a-tcp", mutate: func(r *clb.ModifyListenerRequest) { r.ProxyProtocol = common.BoolPtr(true) },
			wantCode: clbtest.CodeInvalidParameterValue,
		},
		"bad scheduler": {
			listener: "lb-a-tcp", mutate: func(r *clb.ModifyListenerRequest) { r.Scheduler = common.StringPtr("RANDOM") },
			wantCode: clbtest.CodeInvalidParameterValue,
		},
		"unknown listener": {
			listener: "lbl-nope", mutate: func(*clb.ModifyListenerRequest) {}, wantCode: clbtest.CodeListenerIDNotFound,
		},
		"listener of another LB": {
			listener: "lb-b-tcp", mutate: func(*clb.ModifyListenerRequest) {}, wantCode: clbtest.CodeListenerIDNotFound,
		},
		"unknown LB": {
			listener: "lb-a-tcp", mutate: func(r *clb.ModifyListenerRequest) { r.LoadBalancerId = common.StringPtr("lb-zzz") },
			wantCode: clbtest.CodeLBIDNotFound,
		},
		"no listener ID": {
			listener: "lb-a-tcp", mutate: func(r *clb.ModifyListenerRequest) { r.ListenerId = nil }, wantCode: clbtest.CodeMissingParameter,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := start(t, &clbtest.Options{Allowlist: everything})
			seedLB(t, srv, "lb-a")
			seedLB(t, srv, "lb-b")
			before := srv.Snapshot()
			c := client(t, srv)
			task, err := modify(t, c, "lb-a", tc.listener, tc.mutate)
			if got := codeOf(t, err); got != tc.wantCode {
				t.Fatalf("code = %q (%v), want %q", got, err, tc.wantCode)
			}
			if err != nil {
				if diff := cmp.Diff(before.Listeners, srv.Snapshot().Listeners); diff != "" {
					t.Errorf("a refused write changed state (-before +after):\n%s", diff)
				}
				if len(srv.Snapshot().Tasks) != 0 {
					t.Error("a refused write started a task")
				}
				return
			}
			if st := waitTask(t, c, task); *st.Status != 0 || !slices.Equal(common.StringValues(st.LoadBalancerIds), []string{"lb-a"}) {
				t.Fatalf("task = %+v", st)
			}
			tc.check(t, describeListener(t, c, "lb-a", tc.listener))
		})
	}
}

func TestCreateListener(t *testing.T) {
	clock := clbtest.NewManualClock(time.Now())
	srv := start(t, &clbtest.Options{Now: clock.Now, TaskDuration: 3 * time.Second, Allowlist: []clbtest.Capability{clbtest.L4SNAT}})
	seedLB(t, srv, "lb-a")
	c := client(t, srv)

	create := func(protocol string, ports ...int64) (*clb.CreateListenerResponseParams, error) {
		req := clb.NewCreateListenerRequest()
		req.LoadBalancerId = common.StringPtr("lb-a")
		req.Protocol = common.StringPtr(protocol)
		req.Ports = common.Int64Ptrs(ports)
		req.ListenerNames = common.StringPtrs([]string{"first"})
		req.SnatEnable = common.BoolPtr(true)
		req.HealthCheck = &clb.HealthCheck{SourceIpType: common.Int64Ptr(1)}
		resp, err := c.CreateListener(req)
		if err != nil {
			return nil, err
		}
		return resp.Response, nil
	}

	resp, err := create("TCP", 9000, 9001)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ListenerIds) != 2 {
		t.Fatalf("ListenerIds = %v", common.StringValues(resp.ListenerIds))
	}
	if n := len(srv.Snapshot().Listeners); n != 2 {
		t.Errorf("listeners visible before the task completed: %d, want the 2 seeded", n)
	}
	clock.Advance(3 * time.Second)
	if st := taskStatus(t, c, *resp.RequestId); *st.Status != 0 {
		t.Fatalf("task status %d", *st.Status)
	}
	l := describeListener(t, c, "lb-a", *resp.ListenerIds[0])
	if *l.Port != 9000 || *l.ListenerName != "first" || !snatOn(l) || *l.HealthCheck.SourceIpType != 1 {
		t.Errorf("created listener = %+v", l)
	}
	if l2 := describeListener(t, c, "lb-a", *resp.ListenerIds[1]); *l2.Port != 9001 || *l2.ListenerName != "" {
		t.Errorf("second listener = %+v", l2)
	}

	for name, tc := range map[string]struct {
		protocol string
		ports    []int64
		want     string
	}{
		"HTTP on a TCP port":    {protocol: "HTTP", ports: []int64{80}, want: clbtest.CodePortCheckFailed},
		"port listed twice":     {protocol: "TCP", ports: []int64{9100, 9100}, want: clbtest.CodePortCheckFailed},
		"port out of range":     {protocol: "TCP", ports: []int64{70000}, want: clbtest.CodeInvalidParameterRange},
		"bad protocol":          {protocol: "SCTP", ports: []int64{9200}, want: clbtest.CodeInvalidParameterValue},
		"UDP shares a TCP port": {protocol: "UDP", ports: []int64{9000}, want: ""},
	} {
		t.Run(name, func(t *testing.T) {
			clock.Advance(3 * time.Second) // let any earlier task finish
			_, err := create(tc.protocol, tc.ports...)
			if got := codeOf(t, err); got != tc.want {
				t.Errorf("code = %q (%v), want %q", got, err, tc.want)
			}
		})
	}
}

// TestRegionIsolation: CLB is regional; a client signed for another region sees neither
// the instance nor the tasks of this one.
func TestRegionIsolation(t *testing.T) {
	srv := start(t, &clbtest.Options{Allowlist: []clbtest.Capability{clbtest.L4SNAT}})
	seedLB(t, srv, "lb-a")
	home := client(t, srv)
	away := clientWith(t, profileFor(srv), common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey), "ap-shanghai")

	dl := clb.NewDescribeListenersRequest()
	dl.LoadBalancerId = common.StringPtr("lb-a")
	if _, err := away.DescribeListeners(dl); codeOf(t, err) != clbtest.CodeLBIDNotFound {
		t.Errorf("DescribeListeners from another region: %v", err)
	}
	if _, err := modify(t, away, "lb-a", "lb-a-tcp", enableSNAT); codeOf(t, err) != clbtest.CodeLBIDNotFound {
		t.Errorf("ModifyListener from another region: %v", err)
	}
	task, err := modify(t, home, "lb-a", "lb-a-tcp", enableSNAT)
	if err != nil {
		t.Fatal(err)
	}
	req := clb.NewDescribeTaskStatusRequest()
	req.TaskId = common.StringPtr(task)
	if _, err := away.DescribeTaskStatus(req); codeOf(t, err) != clbtest.CodeInvalidParameter {
		t.Errorf("DescribeTaskStatus from another region: %v", err)
	}
}
