// Package service is the upstream service controller's own test suite run around loopguard's
// decorator: controller.go, controller_test.go and metrics.go of k8s.io/cloud-provider
// v0.37.2 controllers/service (Apache-2.0, license headers kept), all as _test.go files so
// nothing here is built into anything. The only changes are in controller_test.go's
// newController, marked "loopguard": the controller gets wrap(fake cloud) and the tests keep
// inspecting the inner fake. Every upstream test passes wrapped, with the fake's address unset
// and set; TestMain fails if a sync that loopguard must read went unread, and, when no -run or
// -skip filter left tests out, if no sync reached the decorated cloud at all, so the wrapping
// cannot silently fall away.
package service

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	cloudprovider "k8s.io/cloud-provider"

	lgcloud "github.com/loopguard/loopguard/adapters/cloudprovider"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// externalIP is the address the inner fake cloud hands out; nil leaves it unset, when the
// fake returns the IP "<nil>" (which the fake clientset stores without validation).
var externalIP net.IP

// evaluations counts the Services loopguard's dialect read: proof that the suite's syncs
// really went through the decorator.
var evaluations atomic.Int64

// readable counts the EnsureLoadBalancer calls the decorated cloud answered with a status
// loopguard must read (no error, an entry with a valid IP): each is one evaluation at least.
// It is counted outside the decorator, so it does not depend on what it checks.
var readable atomic.Int64

type counted struct{ core.Provider }

type countedDialect struct{ core.Dialect }

func (p counted) Dialect() core.Dialect { return countedDialect{p.Provider.Dialect()} }

func (d countedDialect) Translate(obj runtime.Object, c *core.Cluster) (*core.Result, error) {
	evaluations.Add(1)
	return d.Dialect.Translate(obj, c)
}

// syncCounter stands between the service controller and the decorated cloud.
type syncCounter struct{ cloudprovider.Interface }

func (s syncCounter) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	lb, ok := s.Interface.LoadBalancer()
	if !ok {
		return nil, false
	}
	return syncCounterLB{lb}, true
}

type syncCounterLB struct{ cloudprovider.LoadBalancer }

func (l syncCounterLB) EnsureLoadBalancer(ctx context.Context, cluster string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	st, err := l.LoadBalancer.EnsureLoadBalancer(ctx, cluster, svc, nodes)
	if err == nil && st != nil {
		for _, in := range st.Ingress {
			if net.ParseIP(in.IP) != nil {
				readable.Add(1)
				break
			}
		}
	}
	return st, err
}

// wrap is the decorator as a fork uses it, around the upstream suite's fake cloud.
func wrap(inner cloudprovider.Interface) cloudprovider.Interface {
	return syncCounter{lgcloud.Wrap(inner, counted{kubernetes.NewProvider(nil)}, lgcloud.WithProfile(core.ClusterProfile{
		KubernetesVersion: "v1.37.2", ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: "v1.37.2"}))}
}

// filtered reports a -run or -skip flag: then the tests whose syncs reach the decorator may
// not have run at all.
func filtered() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return true
		}
	}
	return false
}

// TestMain runs the upstream service controller's own suite twice around the decorated fake
// cloud: with ExternalIP unset (the fake's "<nil>" address, which loopguard passes through
// as a status the API server would refuse) and set (a real address, which loopguard
// publishes with an explicit ipMode). With a real address every sync that returned one must
// have been evaluated; and a run that no filter narrowed must have had such syncs.
func TestMain(m *testing.M) {
	flag.Parse()
	for _, ip := range []net.IP{nil, net.ParseIP("192.0.2.77")} {
		externalIP = ip
		fmt.Printf("upstream service controller suite, wrapped, ExternalIP %v\n", ip)
		evaluated, synced := evaluations.Load(), readable.Load()
		if code := m.Run(); code != 0 {
			os.Exit(code)
		}
		n, syncs := evaluations.Load()-evaluated, readable.Load()-synced
		fmt.Printf("upstream service controller suite, wrapped, ExternalIP %v: %d Services evaluated by loopguard, %d syncs returned an address\n", ip, n, syncs)
		switch {
		case ip == nil: // with "<nil>" every status is passed through unread
		case n < syncs:
			fmt.Printf("FAIL: %d syncs returned an address, loopguard evaluated %d: the decorator did not read them\n", syncs, n)
			os.Exit(1)
		case syncs == 0 && !filtered():
			fmt.Println("FAIL: no sync went through the decorator")
			os.Exit(1)
		}
	}
	os.Exit(0)
}
