package tencent

import (
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"
	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"

	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

// TestDescribeListenersBatches: reads by ListenerIds go 100 per call, the API's limit.
func TestDescribeListenersBatches(t *testing.T) {
	srv, err := clbtest.Start(&clbtest.Options{RateLimit: clbtest.Unlimited})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := srv.AddLoadBalancer(clbtest.LoadBalancer{ID: "lb-batch001", Type: clbtest.LoadBalancerInternal}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for port := int64(1000); port < 1150; port++ {
		l, err := srv.AddListener(clbtest.Listener{LoadBalancerID: "lb-batch001", Protocol: clbtest.ProtocolTCP, Port: port})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, l.ID)
	}
	cpf := profile.NewClientProfile()
	cpf.HttpProfile.Endpoint = srv.Endpoint()
	cpf.HttpProfile.Scheme = "HTTP"
	client, err := clb.NewClient(common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey), clbtest.DefaultRegion, cpf)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newCLBCaller(client, &DriverOptions{RateLimit: 1e6}, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.describeListeners(context.Background(), "lb-batch001", ids)
	if err != nil {
		t.Fatal(err)
	}
	calls := srv.Calls()
	if len(got) != 150 || len(calls) != 2 || calls[0].Param("ListenerIds.99") == "" || calls[0].Param("ListenerIds.100") != "" || calls[1].Param("ListenerIds.49") == "" {
		t.Errorf("%d listeners in %d calls, want 150 in two calls of 100 and 50 IDs", len(got), len(calls))
	}
}
