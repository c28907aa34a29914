package clbtest_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/volcengine/volcengine-go-sdk/service/clb"
	"github.com/volcengine/volcengine-go-sdk/volcengine"

	"github.com/loopguard/loopguard/providers/volcengine/clbtest"
)

func TestDescribeLoadBalancers(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	seed(t, srv)
	if _, err := srv.AddLoadBalancer(clbtest.LoadBalancer{ID: "clb-shanghai", Region: "cn-shanghai", Type: clbtest.TypePrivate}); err != nil {
		t.Fatal(err)
	}
	c := defaultClient(t, srv)

	type lbView struct{ ID, Type, Eni, Eip, EipID string }
	view := func(out *clb.DescribeLoadBalancersOutput) []lbView {
		var v []lbView
		for _, lb := range out.LoadBalancers {
			v = append(v, lbView{*lb.LoadBalancerId, *lb.Type, *lb.EniAddress, *lb.EipAddress, *lb.EipID})
		}
		return v
	}
	private := lbView{"clb-private", "private", "192.168.0.10", "", ""}
	public := lbView{"clb-public", "public", "192.168.0.20", "203.0.113.7", "eip-1"}

	cases := map[string]struct {
		reason string
		in     clb.DescribeLoadBalancersInput
		want   []lbView
	}{
		"all in region": {
			reason: "the cn-shanghai LB is invisible from cn-beijing",
			want:   []lbView{private, public},
		},
		"by ID": {
			reason: "LoadBalancerIds.N filters",
			in:     clb.DescribeLoadBalancersInput{LoadBalancerIds: volcengine.StringSlice([]string{"clb-public"})},
			want:   []lbView{public},
		},
		"by two IDs": {
			reason: "several IDs are OR-ed",
			in:     clb.DescribeLoadBalancersInput{LoadBalancerIds: volcengine.StringSlice([]string{"clb-public", "clb-private"})},
			want:   []lbView{private, public},
		},
		"unknown ID": {
			reason: "an unknown ID yields an empty list, not an error",
			in:     clb.DescribeLoadBalancersInput{LoadBalancerIds: volcengine.StringSlice([]string{"clb-gone"})},
		},
		"ID of another region": {
			reason: "IDs do not cross regions",
			in:     clb.DescribeLoadBalancersInput{LoadBalancerIds: volcengine.StringSlice([]string{"clb-shanghai"})},
		},
		"empty ID list": {
			reason: "the SDK sends an empty slice as LoadBalancerIds=, which is no filter",
			in:     clb.DescribeLoadBalancersInput{LoadBalancerIds: []*string{}},
			want:   []lbView{private, public},
		},
		"by type": {
			reason: "Type filters on public/private",
			in:     clb.DescribeLoadBalancersInput{Type: volcengine.String("private")},
			want:   []lbView{private},
		},
		"by EIP address": {
			reason: "EipAddress filters, which is how an ingress IP maps back to its CLB",
			in:     clb.DescribeLoadBalancersInput{EipAddress: volcengine.String("203.0.113.7")},
			want:   []lbView{public},
		},
		"by ENI address": {
			reason: "EniAddress filters",
			in:     clb.DescribeLoadBalancersInput{EniAddress: volcengine.String("192.168.0.10")},
			want:   []lbView{private},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := tc.in
			out, err := c.DescribeLoadBalancers(&in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, view(out)); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
			if got := int(*out.TotalCount); got != len(tc.want) {
				t.Errorf("%s: TotalCount %d, want %d", tc.reason, got, len(tc.want))
			}
			if out.Metadata == nil || out.Metadata.RequestId == "" || out.Metadata.Region != testRegion || out.Metadata.Service != "clb" {
				t.Errorf("%s: metadata %+v", tc.reason, out.Metadata)
			}
		})
	}

	t.Run("region scoping from the other side", func(t *testing.T) {
		out, err := newClient(t, srv, "cn-shanghai", testAK, testSK).DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.LoadBalancers) != 1 || *out.LoadBalancers[0].LoadBalancerId != "clb-shanghai" || out.Metadata.Region != "cn-shanghai" {
			t.Fatalf("cn-shanghai sees %v (metadata %+v)", view(out), out.Metadata)
		}
	})
}

func TestDescribeLoadBalancersPagination(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	for i := range 25 {
		if _, err := srv.AddLoadBalancer(clbtest.LoadBalancer{ID: fmt.Sprintf("clb-%02d", i), Type: clbtest.TypePrivate}); err != nil {
			t.Fatal(err)
		}
	}
	c := defaultClient(t, srv)

	// Walk every page the way a paginating caller does and check that each
	// LB appears exactly once, in insertion order.
	var got []string
	for page := int64(1); ; page++ {
		out, err := c.DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{PageNumber: volcengine.Int64(page), PageSize: volcengine.Int64(10)})
		if err != nil {
			t.Fatal(err)
		}
		if *out.TotalCount != 25 || *out.PageNumber != page || *out.PageSize != 10 {
			t.Fatalf("page %d: TotalCount/PageNumber/PageSize = %d/%d/%d", page, *out.TotalCount, *out.PageNumber, *out.PageSize)
		}
		if len(out.LoadBalancers) == 0 {
			if page != 4 {
				t.Fatalf("page %d is empty, want pages 1-3 full", page)
			}
			break
		}
		for _, lb := range out.LoadBalancers {
			got = append(got, *lb.LoadBalancerId)
		}
	}
	var want []string
	for i := range 25 {
		want = append(want, fmt.Sprintf("clb-%02d", i))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pages -want +got:\n%s", diff)
	}

	out, err := c.DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.LoadBalancers) != 10 || *out.PageSize != 10 || *out.PageNumber != 1 {
		t.Errorf("default page holds %d LBs (PageSize %d PageNumber %d), want the documented default of 10 on page 1", len(out.LoadBalancers), *out.PageSize, *out.PageNumber)
	}

	bad := map[string]clb.DescribeLoadBalancersInput{
		"PageSize over 100": {PageSize: volcengine.Int64(101)},
		"PageSize 0":        {PageSize: volcengine.Int64(0)},
		"PageNumber 0":      {PageNumber: volcengine.Int64(0)},
		"21 IDs":            {LoadBalancerIds: volcengine.StringSlice(want[:21])},
	}
	for name, in := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := c.DescribeLoadBalancers(&in)
			requestFailure(t, err, clbtest.CodeInvalidParameter, 400)
		})
	}
	if _, err := c.DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{LoadBalancerIds: volcengine.StringSlice(want[:20])}); err != nil {
		t.Errorf("20 IDs, the documented maximum: %v", err)
	}
}

func TestDescribeLoadBalancerAttributes(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	seed(t, srv)
	c := defaultClient(t, srv)

	out, err := c.DescribeLoadBalancerAttributes(&clb.DescribeLoadBalancerAttributesInput{LoadBalancerId: volcengine.String("clb-private")})
	if err != nil {
		t.Fatal(err)
	}
	type attrs struct {
		ID, Type, Status, Version, Vpc, EniID, Eni, Eip string
		Listeners, Groups                               []string
		HasEip                                          bool
	}
	got := attrs{*out.LoadBalancerId, *out.Type, *out.Status, *out.AddressIpVersion, *out.VpcId, *out.EniID, *out.EniAddress, *out.EipAddress, nil, nil, out.Eip != nil}
	for _, l := range out.Listeners {
		got.Listeners = append(got.Listeners, *l.ListenerId+"/"+*l.ListenerName)
	}
	for _, g := range out.ServerGroups {
		got.Groups = append(got.Groups, *g.ServerGroupId+"/"+*g.ServerGroupName)
	}
	want := attrs{"clb-private", "private", "Active", "ipv4", "vpc-1", "eni-1", "192.168.0.10", "", []string{"lsn-tcp/TCP-443", "lsn-udp/UDP-53"}, []string{"rsp-1/rsp-1"}, false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("private LB -want +got:\n%s", diff)
	}
	if out.RequestId == nil || *out.RequestId != out.Metadata.RequestId {
		t.Errorf("Result.RequestId %v differs from ResponseMetadata.RequestId %q", out.RequestId, out.Metadata.RequestId)
	}

	pub, err := c.DescribeLoadBalancerAttributes(&clb.DescribeLoadBalancerAttributesInput{LoadBalancerId: volcengine.String("clb-public")})
	if err != nil {
		t.Fatal(err)
	}
	if *pub.Type != "public" || *pub.EipAddress != "203.0.113.7" || pub.Eip == nil || *pub.Eip.EipAddress != "203.0.113.7" || *pub.EipID != "eip-1" {
		t.Errorf("public LB: Type %s EipAddress %s Eip %+v EipID %s", *pub.Type, *pub.EipAddress, pub.Eip, *pub.EipID)
	}
	if len(pub.EniAddresses) != 1 || *pub.EniAddresses[0].EipAddress != "203.0.113.7" {
		t.Errorf("public LB EniAddresses = %+v", pub.EniAddresses)
	}

	_, err = c.DescribeLoadBalancerAttributes(&clb.DescribeLoadBalancerAttributesInput{LoadBalancerId: volcengine.String("clb-gone")})
	rf := requestFailure(t, err, clbtest.CodeLoadBalancerNotFound, 404)
	if rf.Message() != "The specified LoadBalancer does not exist." {
		t.Errorf("message %q", rf.Message())
	}
	// The SDK does not enforce required:"true"; the server must.
	_, err = c.DescribeLoadBalancerAttributes(&clb.DescribeLoadBalancerAttributesInput{})
	requestFailure(t, err, clbtest.CodeMissingParameter, 400)
}

func TestDescribeListeners(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	seed(t, srv)
	c := defaultClient(t, srv)

	ids := func(out *clb.DescribeListenersOutput) []string {
		var v []string
		for _, l := range out.Listeners {
			v = append(v, fmt.Sprintf("%s %s %s:%d pp=%s sg=%s", *l.LoadBalancerId, *l.ListenerId, *l.Protocol, *l.Port, *l.ProxyProtocolType, *l.ServerGroupId))
		}
		return v
	}
	tcp := "clb-private lsn-tcp TCP:443 pp=standard sg=rsp-1"
	udp := "clb-private lsn-udp UDP:53 pp=off sg=rsp-1"
	http := "clb-public lsn-http HTTP:80 pp=off sg="
	cases := map[string]struct {
		in   clb.DescribeListenersInput
		want []string
	}{
		"all":              {want: []string{tcp, udp, http}},
		"by LB":            {in: clb.DescribeListenersInput{LoadBalancerId: volcengine.String("clb-private")}, want: []string{tcp, udp}},
		"by IDs":           {in: clb.DescribeListenersInput{ListenerIds: volcengine.StringSlice([]string{"lsn-http", "lsn-udp"})}, want: []string{udp, http}},
		"by protocol":      {in: clb.DescribeListenersInput{Protocol: volcengine.String("UDP")}, want: []string{udp}},
		"unknown LB":       {in: clb.DescribeListenersInput{LoadBalancerId: volcengine.String("clb-gone")}},
		"page 2 of size 2": {in: clb.DescribeListenersInput{PageNumber: volcengine.Int64(2), PageSize: volcengine.Int64(2)}, want: []string{http}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := tc.in
			out, err := c.DescribeListeners(&in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ids(out)); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}

func TestDescribeListenerAttributes(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	seed(t, srv)
	c := defaultClient(t, srv)
	cases := map[string]struct {
		id, protocol, pp string
		port             int64
	}{
		"PROXY protocol on":                 {"lsn-tcp", "TCP", "standard", 443},
		"PROXY protocol defaults to off":    {"lsn-udp", "UDP", "off", 53},
		"HTTP listener reports off as well": {"lsn-http", "HTTP", "off", 80},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := c.DescribeListenerAttributes(&clb.DescribeListenerAttributesInput{ListenerId: volcengine.String(tc.id)})
			if err != nil {
				t.Fatal(err)
			}
			if *out.ListenerId != tc.id || *out.Protocol != tc.protocol || *out.Port != tc.port || *out.ProxyProtocolType != tc.pp || *out.Status != "Active" || *out.Enabled != "on" {
				t.Errorf("got %s %s:%d pp=%s status=%s enabled=%s", *out.ListenerId, *out.Protocol, *out.Port, *out.ProxyProtocolType, *out.Status, *out.Enabled)
			}
		})
	}
	_, err := c.DescribeListenerAttributes(&clb.DescribeListenerAttributesInput{ListenerId: volcengine.String("lsn-gone")})
	requestFailure(t, err, clbtest.CodeListenerNotFound, 404)
	_, err = c.DescribeListenerAttributes(&clb.DescribeListenerAttributesInput{})
	requestFailure(t, err, clbtest.CodeMissingParameter, 400)
}

func TestDescribeServerGroups(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	seed(t, srv)
	c := defaultClient(t, srv)

	list, err := c.DescribeServerGroups(&clb.DescribeServerGroupsInput{LoadBalancerId: volcengine.String("clb-private")})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.ServerGroups) != 1 || *list.ServerGroups[0].ServerGroupId != "rsp-1" || *list.ServerGroups[0].Type != "instance" || *list.TotalCount != 1 {
		t.Fatalf("DescribeServerGroups = %+v", list)
	}
	none, err := c.DescribeServerGroups(&clb.DescribeServerGroupsInput{LoadBalancerId: volcengine.String("clb-public")})
	if err != nil || len(none.ServerGroups) != 0 {
		t.Fatalf("public LB groups = %+v, %v", none, err)
	}

	out, err := c.DescribeServerGroupAttributes(&clb.DescribeServerGroupAttributesInput{ServerGroupId: volcengine.String("rsp-1")})
	if err != nil {
		t.Fatal(err)
	}
	var servers []string
	for _, m := range out.Servers {
		servers = append(servers, fmt.Sprintf("%s %s %s %s:%d w%d", *m.ServerId, *m.Type, *m.InstanceId, *m.Ip, *m.Port, *m.Weight))
	}
	want := []string{"rs-1 eni eni-pod-a 192.168.1.5:8080 w100", "rs-2 ecs i-node-b 192.168.1.6:30080 w50"}
	if diff := cmp.Diff(want, servers); diff != "" {
		t.Errorf("servers -want +got:\n%s", diff)
	}
	if got := volcengine.StringValueSlice(out.Listeners); !cmp.Equal(got, []string{"lsn-tcp", "lsn-udp"}) || *out.LoadBalancerId != "clb-private" {
		t.Errorf("Listeners %v LoadBalancerId %s", got, *out.LoadBalancerId)
	}
	_, err = c.DescribeServerGroupAttributes(&clb.DescribeServerGroupAttributesInput{ServerGroupId: volcengine.String("rsp-gone")})
	requestFailure(t, err, clbtest.CodeServerGroupNotFound, 404)
}

// TestStateChangesAreVisible: what a test changes through Go methods is
// what the next SDK call sees.
func TestStateChangesAreVisible(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	seed(t, srv)
	c := defaultClient(t, srv)
	pp := func() string {
		out, err := c.DescribeListenerAttributes(&clb.DescribeListenerAttributesInput{ListenerId: volcengine.String("lsn-udp")})
		if err != nil {
			t.Fatal(err)
		}
		return *out.ProxyProtocolType
	}
	if got := pp(); got != "off" {
		t.Fatalf("before: %s", got)
	}
	if err := srv.UpdateLoadBalancer("clb-private", func(lb *clbtest.LoadBalancer) {
		lb.Listeners[1].ProxyProtocolType = clbtest.ProxyProtocolStandard
	}); err != nil {
		t.Fatal(err)
	}
	if got := pp(); got != "standard" {
		t.Fatalf("after update: %s", got)
	}
	if !srv.RemoveLoadBalancer("clb-private") {
		t.Fatal("RemoveLoadBalancer reported no LB")
	}
	_, err := c.DescribeListenerAttributes(&clb.DescribeListenerAttributesInput{ListenerId: volcengine.String("lsn-udp")})
	requestFailure(t, err, clbtest.CodeListenerNotFound, 404)
	_, err = c.DescribeLoadBalancerAttributes(&clb.DescribeLoadBalancerAttributesInput{LoadBalancerId: volcengine.String("clb-private")})
	requestFailure(t, err, clbtest.CodeLoadBalancerNotFound, 404)
	out, err := c.DescribeLoadBalancers(&clb.DescribeLoadBalancersInput{})
	if err != nil || len(out.LoadBalancers) != 1 || *out.LoadBalancers[0].LoadBalancerId != "clb-public" {
		t.Fatalf("after removal: %+v, %v", out, err)
	}
}
