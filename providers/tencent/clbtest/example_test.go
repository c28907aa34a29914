package clbtest_test

import (
	"fmt"
	"log"
	"slices"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"

	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

// Turn on SNAT for a private CLB's TCP listener with the official SDK, wait for the
// asynchronous task, and read the listener back (DOMAIN.md §3.2, fix 2).
func Example() {
	srv, err := clbtest.Start(&clbtest.Options{
		Allowlist:    []clbtest.Capability{clbtest.L4SNAT}, // the account has "CLB L4 SNAT"
		TaskDuration: 20 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	lb, _ := srv.AddLoadBalancer(clbtest.LoadBalancer{ID: "lb-demo0001", Name: "ingress", Type: clbtest.LoadBalancerInternal, VIPs: []string{"10.0.0.10"}})
	lis, _ := srv.AddListener(clbtest.Listener{LoadBalancerID: lb.ID, ID: "lbl-demo0001", Protocol: clbtest.ProtocolTCP, Port: 80})

	cpf := profile.NewClientProfile()
	cpf.HttpProfile.Endpoint = srv.Endpoint()
	cpf.HttpProfile.Scheme = "HTTP"
	client, err := clb.NewClient(common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey), clbtest.DefaultRegion, cpf)
	if err != nil {
		log.Fatal(err)
	}

	modify := clb.NewModifyListenerRequest()
	modify.LoadBalancerId = common.StringPtr(lb.ID)
	modify.ListenerId = common.StringPtr(lis.ID)
	modify.SnatEnable = common.BoolPtr(true)
	written, err := client.ModifyListener(modify)
	if err != nil {
		log.Fatal(err)
	}

	for {
		poll := clb.NewDescribeTaskStatusRequest()
		poll.TaskId = written.Response.RequestId // the task is the write's RequestId
		status, err := client.DescribeTaskStatus(poll)
		if err != nil {
			log.Fatal(err)
		}
		if *status.Response.Status != 2 { // 2 = running
			fmt.Println("task status:", *status.Response.Status)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}

	read := clb.NewDescribeListenersRequest()
	read.LoadBalancerId = common.StringPtr(lb.ID)
	read.ListenerIds = common.StringPtrs([]string{lis.ID})
	got, err := client.DescribeListeners(read)
	if err != nil {
		log.Fatal(err)
	}
	l := got.Response.Listeners[0]
	// The Listener model has no SnatEnable: SNAT shows up in AttrFlags.
	fmt.Println(*l.ListenerId, *l.Protocol, *l.Port, "SNAT on:", slices.Contains(common.StringValues(l.AttrFlags), "SnatEnable"))
	// Output:
	// task status: 0
	// lbl-demo0001 TCP 80 SNAT on: true
}
