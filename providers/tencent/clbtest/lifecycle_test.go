package clbtest_test

import (
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"

	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

func createLB(c *clb.Client, edit func(*clb.CreateLoadBalancerRequest)) (*clb.CreateLoadBalancerResponseParams, error) {
	req := clb.NewCreateLoadBalancerRequest()
	req.LoadBalancerType = common.StringPtr(clbtest.LoadBalancerInternal)
	req.LoadBalancerName = common.StringPtr("a1b2c3")
	req.VpcId = common.StringPtr("vpc-1a2b3c4d")
	req.SubnetId = common.StringPtr("subnet-1a2b3c4d")
	if edit != nil {
		edit(req)
	}
	resp, err := c.CreateLoadBalancer(req)
	if err != nil {
		return nil, err
	}
	return resp.Response, nil
}

// TestCreateLoadBalancer: the SDK's CreateLoadBalancer answers the new instance's ID at once;
// the instance, with a private VIP, its name, VPC and subnet, appears when the task is done,
// and DescribeListeners finds it with no listeners; a second instance gets another VIP; bad
// or unmodelled parameters are refused with the cloud's codes.
func TestCreateLoadBalancer(t *testing.T) {
	clock := clbtest.NewManualClock(time.Now())
	srv := start(t, &clbtest.Options{Now: clock.Now, TaskDuration: 2 * time.Second})
	c := client(t, srv)

	resp, err := createLB(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.LoadBalancerIds) != 1 {
		t.Fatalf("LoadBalancerIds = %v", common.StringValues(resp.LoadBalancerIds))
	}
	id := *resp.LoadBalancerIds[0]
	if _, ok := srv.LoadBalancer(id); ok {
		t.Error("the instance is visible before its task completed")
	}
	if st := taskStatus(t, c, *resp.RequestId); *st.Status != int64(clbtest.TaskRunning) {
		t.Errorf("task status %d, want running", *st.Status)
	}
	clock.Advance(2 * time.Second)
	if st := taskStatus(t, c, *resp.RequestId); *st.Status != int64(clbtest.TaskSucceeded) {
		t.Fatalf("task status %d, want succeeded", *st.Status)
	}
	req := clb.NewDescribeLoadBalancersRequest()
	req.LoadBalancerIds = common.StringPtrs([]string{id})
	got, err := c.DescribeLoadBalancers(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Response.LoadBalancerSet) != 1 {
		t.Fatalf("DescribeLoadBalancers found %d instances", len(got.Response.LoadBalancerSet))
	}
	lb := got.Response.LoadBalancerSet[0]
	if *lb.LoadBalancerName != "a1b2c3" || *lb.LoadBalancerType != clbtest.LoadBalancerInternal || *lb.VpcId != "vpc-1a2b3c4d" ||
		*lb.SubnetId != "subnet-1a2b3c4d" || len(lb.LoadBalancerVips) != 1 || *lb.LoadBalancerVips[0] == "" {
		t.Errorf("created instance = %+v", lb)
	}
	lreq := clb.NewDescribeListenersRequest()
	lreq.LoadBalancerId = common.StringPtr(id)
	if l, err := c.DescribeListeners(lreq); err != nil || len(l.Response.Listeners) != 0 {
		t.Errorf("DescribeListeners on the new instance: %v, %v", l, err)
	}

	second, err := createLB(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	other, _ := srv.LoadBalancer(*second.LoadBalancerIds[0])
	if other.VIPs[0] == *lb.LoadBalancerVips[0] {
		t.Errorf("two instances share the VIP %s", other.VIPs[0])
	}

	for name, tc := range map[string]struct {
		edit func(*clb.CreateLoadBalancerRequest)
		want string
	}{
		"no type":            {func(r *clb.CreateLoadBalancerRequest) { r.LoadBalancerType = nil }, clbtest.CodeMissingParameter},
		"bad type":           {func(r *clb.CreateLoadBalancerRequest) { r.LoadBalancerType = common.StringPtr("PRIVATE") }, clbtest.CodeInvalidParameterValue},
		"private, no VPC":    {func(r *clb.CreateLoadBalancerRequest) { r.VpcId = nil }, clbtest.CodeMissingParameter},
		"private, no subnet": {func(r *clb.CreateLoadBalancerRequest) { r.SubnetId = nil }, clbtest.CodeMissingParameter},
		"zone not modelled":  {func(r *clb.CreateLoadBalancerRequest) { r.ZoneId = common.StringPtr("ap-guangzhou-3") }, clbtest.CodeUnsupportedOperation},
		"too many":           {func(r *clb.CreateLoadBalancerRequest) { r.Number = common.Uint64Ptr(21) }, clbtest.CodeInvalidParameterRange},
		"VIP in use":         {func(r *clb.CreateLoadBalancerRequest) { r.Vip = common.StringPtr(other.VIPs[0]) }, clbtest.CodeInvalidParameterValue},
		"public, no VPC": {func(r *clb.CreateLoadBalancerRequest) {
			r.LoadBalancerType, r.VpcId, r.SubnetId = common.StringPtr(clbtest.LoadBalancerOpen), nil, nil
		}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := createLB(c, tc.edit)
			if got := codeOf(t, err); got != tc.want {
				t.Errorf("code = %q (%v), want %q", got, err, tc.want)
			}
		})
	}
}

// TestCreateLoadBalancerClientToken: a repeated ClientToken answers the first call's IDs and
// creates nothing more.
func TestCreateLoadBalancerClientToken(t *testing.T) {
	clock := clbtest.NewManualClock(time.Now())
	srv := start(t, &clbtest.Options{Now: clock.Now, TaskDuration: time.Second})
	c := client(t, srv)
	token := func(r *clb.CreateLoadBalancerRequest) { r.ClientToken = common.StringPtr("ccm-svc-uid-1") }
	first, err := createLB(c, token)
	if err != nil {
		t.Fatal(err)
	}
	again, err := createLB(c, token)
	if err != nil {
		t.Fatal(err)
	}
	if *first.LoadBalancerIds[0] != *again.LoadBalancerIds[0] {
		t.Errorf("the same ClientToken answered %s, then %s", *first.LoadBalancerIds[0], *again.LoadBalancerIds[0])
	}
	clock.Advance(time.Second)
	if n := len(srv.Snapshot().LoadBalancers); n != 1 {
		t.Errorf("%d instances, want 1", n)
	}
}

// TestCreateListenerOnANewLoadBalancer: a listener can be created once the instance's task is
// done; before, the instance is not found.
func TestCreateListenerOnANewLoadBalancer(t *testing.T) {
	clock := clbtest.NewManualClock(time.Now())
	srv := start(t, &clbtest.Options{Now: clock.Now, TaskDuration: time.Second})
	c := client(t, srv)
	resp, err := createLB(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.LoadBalancerIds[0]
	listen := func() error {
		req := clb.NewCreateListenerRequest()
		req.LoadBalancerId = id
		req.Protocol = common.StringPtr(clbtest.ProtocolTCP)
		req.Ports = common.Int64Ptrs([]int64{80})
		_, err := c.CreateListener(req)
		return err
	}
	if got := codeOf(t, listen()); got != clbtest.CodeLBIDNotFound {
		t.Errorf("CreateListener while the instance is created: code %q, want %q", got, clbtest.CodeLBIDNotFound)
	}
	clock.Advance(time.Second)
	if err := listen(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if l := srv.Snapshot().Listeners; len(l) != 1 || l[0].LoadBalancerID != *id || l[0].Port != 80 {
		t.Errorf("listeners %+v", l)
	}
}

// TestDeleteLoadBalancer: DeleteLoadBalancer removes the instances and their listeners when
// its task completes; an unknown ID, an instance of another region or a busy one fails the
// whole call and deletes nothing.
func TestDeleteLoadBalancer(t *testing.T) {
	clock := clbtest.NewManualClock(time.Now())
	srv := start(t, &clbtest.Options{Now: clock.Now, TaskDuration: time.Second})
	seedLB(t, srv, "lb-a")
	seedLB(t, srv, "lb-b")
	if _, err := srv.AddLoadBalancer(clbtest.LoadBalancer{ID: "lb-far", Region: "ap-beijing", Type: clbtest.LoadBalancerOpen}); err != nil {
		t.Fatal(err)
	}
	c := client(t, srv)
	del := func(ids ...string) (*clb.DeleteLoadBalancerResponseParams, error) {
		req := clb.NewDeleteLoadBalancerRequest()
		req.LoadBalancerIds = common.StringPtrs(ids)
		resp, err := c.DeleteLoadBalancer(req)
		if err != nil {
			return nil, err
		}
		return resp.Response, nil
	}
	for name, tc := range map[string]struct {
		ids  []string
		want string
	}{
		"none":         {nil, clbtest.CodeMissingParameter},
		"unknown":      {[]string{"lb-a", "lb-nope"}, clbtest.CodeLBIDNotFound},
		"other region": {[]string{"lb-far"}, clbtest.CodeLBIDNotFound},
		"twice":        {[]string{"lb-a", "lb-a"}, clbtest.CodeInvalidParameterValue},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := del(tc.ids...)
			if got := codeOf(t, err); got != tc.want {
				t.Errorf("code = %q (%v), want %q", got, err, tc.want)
			}
		})
	}
	if n := len(srv.Snapshot().LoadBalancers); n != 3 {
		t.Fatalf("a refused delete deleted something: %d instances left", n)
	}

	resp, err := del("lb-a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := del("lb-a", "lb-b"); codeOf(t, err) != clbtest.CodeResourceInOperating {
		t.Errorf("deleting a busy instance: %v, want %s", err, clbtest.CodeResourceInOperating)
	}
	if _, ok := srv.LoadBalancer("lb-a"); !ok {
		t.Error("the instance is gone before the task completed")
	}
	clock.Advance(time.Second)
	if st := taskStatus(t, c, *resp.RequestId); *st.Status != int64(clbtest.TaskSucceeded) {
		t.Fatalf("task status %d", *st.Status)
	}
	st := srv.Snapshot()
	for _, lb := range st.LoadBalancers {
		if lb.ID == "lb-a" {
			t.Error("lb-a is still there")
		}
	}
	for _, l := range st.Listeners {
		if l.LoadBalancerID == "lb-a" {
			t.Errorf("listener %s of the deleted instance is still there", l.ID)
		}
	}
	if len(st.LoadBalancers) != 2 {
		t.Errorf("%d instances left, want lb-b and lb-far", len(st.LoadBalancers))
	}
	if w := srv.Writes(); len(w) != 1 || w[0].Action != "DeleteLoadBalancer" {
		t.Errorf("writes %+v", w)
	}
}
