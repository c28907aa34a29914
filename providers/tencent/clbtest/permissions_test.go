package clbtest_test

import (
	"strings"
	"testing"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"

	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

// TestAllowedActions: an action outside Options.AllowedActions is refused with
// AuthFailure.UnauthorizedOperation naming the CAM action, before its parameters are even
// looked at; nil allows everything, "clb:*" too, and an empty list nothing.
func TestAllowedActions(t *testing.T) {
	for name, tc := range map[string]struct {
		allowed       []string
		describeOK    bool
		modifyAllowed bool
	}{
		"nil allows all":  {allowed: nil, describeOK: true, modifyAllowed: true},
		"wildcard":        {allowed: []string{"clb:*"}, describeOK: true, modifyAllowed: true},
		"read only":       {allowed: []string{"clb:DescribeLoadBalancers", "DescribeListeners"}, describeOK: true},
		"empty allows no": {allowed: []string{}},
	} {
		t.Run(name, func(t *testing.T) {
			srv := start(t, &clbtest.Options{AllowedActions: tc.allowed})
			c := client(t, srv)
			_, err := c.DescribeLoadBalancers(clb.NewDescribeLoadBalancersRequest())
			if got := codeOf(t, err); (got == "") != tc.describeOK {
				t.Errorf("DescribeLoadBalancers: %v", err)
			}
			req := clb.NewModifyListenerRequest()
			req.LoadBalancerId, req.ListenerId = common.StringPtr("lb-none"), common.StringPtr("lbl-none")
			_, err = c.ModifyListener(req)
			got := codeOf(t, err)
			if tc.modifyAllowed {
				if got == clbtest.CodeAuthUnauthorizedOperation {
					t.Errorf("ModifyListener refused: %v", err)
				}
				return
			}
			if got != clbtest.CodeAuthUnauthorizedOperation || !strings.Contains(messageOf(err), "(clb:ModifyListener)") {
				t.Errorf("ModifyListener: %v, want %s naming clb:ModifyListener", err, clbtest.CodeAuthUnauthorizedOperation)
			}
			if w := srv.Writes(); len(w) != 0 {
				t.Errorf("writes %v", w)
			}
		})
	}
}

// TestRegions: a server with Options.Regions refuses other regions with UnsupportedRegion.
func TestRegions(t *testing.T) {
	srv := start(t, &clbtest.Options{Regions: []string{"ap-guangzhou", "ap-shanghai"}})
	for region, want := range map[string]string{"ap-guangzhou": "", "ap-shanghai": "", "ap-nowhere-1": clbtest.CodeUnsupportedRegion} {
		c := clientWith(t, profileFor(srv), common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey), region)
		_, err := c.DescribeLoadBalancers(clb.NewDescribeLoadBalancersRequest())
		if got := codeOf(t, err); got != want {
			t.Errorf("%s: %v, want %q", region, err, want)
		}
		if want != "" && !strings.Contains(messageOf(err), region) {
			t.Errorf("%s: the message does not name the region: %v", region, err)
		}
	}
}
