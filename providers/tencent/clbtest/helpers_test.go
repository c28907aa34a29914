package clbtest_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	tcerr "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/errors"
	tchttp "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/http"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"

	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

// start runs a server for one test and closes it afterwards.
func start(t *testing.T, opts *clbtest.Options) *clbtest.Server {
	t.Helper()
	srv, err := clbtest.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return srv
}

// profileFor is the client profile TESTING.md §4 prescribes for an in-process server.
func profileFor(srv *clbtest.Server) *profile.ClientProfile {
	cpf := profile.NewClientProfile()
	cpf.HttpProfile.Endpoint = srv.Endpoint()
	cpf.HttpProfile.Scheme = "HTTP"
	return cpf
}

// client is the official SDK client with the default credential and region.
func client(t *testing.T, srv *clbtest.Server) *clb.Client {
	t.Helper()
	return clientWith(t, profileFor(srv), common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey), clbtest.DefaultRegion)
}

func clientWith(t *testing.T, cpf *profile.ClientProfile, cred common.CredentialIface, region string) *clb.Client {
	t.Helper()
	c, err := clb.NewClient(cred, region, cpf)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sendCommon sends an arbitrary service/version/action through the SDK's own signer.
func sendCommon(srv *clbtest.Server, cpf *profile.ClientProfile, service, version, action string, params map[string]any) error {
	c := common.NewCommonClient(common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey), clbtest.DefaultRegion, cpf)
	req := tchttp.NewCommonRequest(service, version, action)
	if err := req.SetActionParameters(params); err != nil {
		return err
	}
	return c.Send(req, tchttp.NewCommonResponse())
}

// codeOf returns the API error code of an SDK error, "" for nil.
func codeOf(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var sdkErr *tcerr.TencentCloudSDKError
	if !errors.As(err, &sdkErr) {
		t.Fatalf("not an SDK error: %v", err)
	}
	return sdkErr.GetCode()
}

func messageOf(err error) string {
	var sdkErr *tcerr.TencentCloudSDKError
	if errors.As(err, &sdkErr) {
		return sdkErr.GetMessage()
	}
	return ""
}

// seedLB adds an internal LB with a TCP/80 listener and an HTTP/8080 listener.
func seedLB(t *testing.T, srv *clbtest.Server, lbID string) {
	t.Helper()
	if _, err := srv.AddLoadBalancer(clbtest.LoadBalancer{ID: lbID, Name: lbID, Type: clbtest.LoadBalancerInternal, VIPs: []string{"10.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	for _, l := range []clbtest.Listener{
		{LoadBalancerID: lbID, ID: lbID + "-tcp", Protocol: clbtest.ProtocolTCP, Port: 80},
		{LoadBalancerID: lbID, ID: lbID + "-http", Protocol: clbtest.ProtocolHTTP, Port: 8080},
	} {
		if _, err := srv.AddListener(l); err != nil {
			t.Fatal(err)
		}
	}
}

func modify(t *testing.T, c *clb.Client, lbID, listenerID string, mutate func(*clb.ModifyListenerRequest)) (string, error) {
	t.Helper()
	req := clb.NewModifyListenerRequest()
	req.LoadBalancerId = common.StringPtr(lbID)
	req.ListenerId = common.StringPtr(listenerID)
	mutate(req)
	resp, err := c.ModifyListener(req)
	if err != nil {
		return "", err
	}
	return *resp.Response.RequestId, nil
}

func taskStatus(t *testing.T, c *clb.Client, taskID string) *clb.DescribeTaskStatusResponseParams {
	t.Helper()
	req := clb.NewDescribeTaskStatusRequest()
	req.TaskId = common.StringPtr(taskID)
	resp, err := c.DescribeTaskStatus(req)
	if err != nil {
		t.Fatalf("DescribeTaskStatus: %v", err)
	}
	return resp.Response
}

// waitTask polls like a provider would, gently enough to stay under the default 20
// requests/second of DescribeTaskStatus; tasks here take milliseconds at most.
func waitTask(t *testing.T, c *clb.Client, taskID string) *clb.DescribeTaskStatusResponseParams {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := taskStatus(t, c, taskID)
		if *st.Status != 2 || time.Now().After(deadline) {
			return st
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func describeListener(t *testing.T, c *clb.Client, lbID, listenerID string) *clb.Listener {
	t.Helper()
	req := clb.NewDescribeListenersRequest()
	req.LoadBalancerId = common.StringPtr(lbID)
	req.ListenerIds = common.StringPtrs([]string{listenerID})
	resp, err := c.DescribeListeners(req)
	if err != nil {
		t.Fatalf("DescribeListeners: %v", err)
	}
	if len(resp.Response.Listeners) != 1 {
		t.Fatalf("DescribeListeners(%s) returned %d listeners", listenerID, len(resp.Response.Listeners))
	}
	return resp.Response.Listeners[0]
}

func snatOn(l *clb.Listener) bool {
	return slices.Contains(common.StringValues(l.AttrFlags), "SnatEnable")
}
