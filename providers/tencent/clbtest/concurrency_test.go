package clbtest_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"

	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

// TestConcurrentClients runs writers on their own LBs, two writers racing on a shared LB,
// and readers of every kind at once. Run with -race. Each owner's last write must win on
// its LB; on the shared LB exactly the writes that were admitted ran, the others were
// refused with ResourceInOperating.
func TestConcurrentClients(t *testing.T) {
	srv := start(t, &clbtest.Options{
		RateLimit:    clbtest.Unlimited,
		TaskDuration: 2 * time.Millisecond,
		Allowlist:    []clbtest.Capability{clbtest.L4SNAT},
	})
	const owners, rounds = 6, 8
	for i := range owners {
		seedLB(t, srv, fmt.Sprintf("lb-%d", i))
	}
	seedLB(t, srv, "lb-shared")

	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for i := range owners {
		wg.Go(func() {
			c := client(t, srv)
			lbID := fmt.Sprintf("lb-%d", i)
			for r := range rounds {
				task, err := modify(t, c, lbID, lbID+"-tcp", func(req *clb.ModifyListenerRequest) { req.SnatEnable = common.BoolPtr(r%2 == 0) })
				if err != nil {
					errs <- fmt.Errorf("%s round %d: %w", lbID, r, err)
					return
				}
				if st := waitTask(t, c, task); *st.Status != 0 {
					errs <- fmt.Errorf("%s round %d: task status %d", lbID, r, *st.Status)
				}
			}
		})
	}
	var admitted, refused atomic.Int64
	for range 2 {
		wg.Go(func() {
			c := client(t, srv)
			for range rounds {
				_, err := modify(t, c, "lb-shared", "lb-shared-http", func(req *clb.ModifyListenerRequest) { req.ListenerName = common.StringPtr("n") })
				switch code := codeOf(t, err); code {
				case "":
					admitted.Add(1)
				case clbtest.CodeResourceInOperating:
					refused.Add(1)
				default:
					errs <- fmt.Errorf("shared LB: %v", err)
				}
			}
		})
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		c := client(t, srv)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.DescribeLoadBalancers(clb.NewDescribeLoadBalancersRequest()); err != nil {
				errs <- err
			}
			_ = srv.Snapshot()
			_ = srv.Calls()
			_ = srv.Writes()
		}
	})
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// rounds is even, so each owner's last write (round rounds-1) turned SNAT off.
	for i := range owners {
		l, _ := srv.Listener(fmt.Sprintf("lb-%d-tcp", i))
		if l.SnatEnable {
			t.Errorf("lb-%d: last write lost", i)
		}
	}
	shared := 0
	for _, w := range srv.Writes() {
		if w.Param("LoadBalancerId") == "lb-shared" {
			shared++
		}
	}
	if int64(shared) != admitted.Load() || admitted.Load()+refused.Load() != 2*rounds {
		t.Errorf("shared LB: %d writes logged, %d admitted, %d refused", shared, admitted.Load(), refused.Load())
	}
	if got := len(srv.Writes()); got != owners*rounds+shared {
		t.Errorf("writes logged = %d, want %d", got, owners*rounds+shared)
	}
}
