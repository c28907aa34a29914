// Package service is the upstream service controller's own test suite run around loopguard's
// decorator: controller.go, controller_test.go and metrics.go of k8s.io/cloud-provider
// v0.37.2 controllers/service (Apache-2.0, license headers kept), all as _test.go files so
// nothing here is built into anything. The only changes are in controller_test.go's
// newController, marked "loopguard": the controller gets wrap(fake cloud) and the tests keep
// inspecting the inner fake. Every upstream test passes wrapped, with the fake's address unset
// and set; TestMain fails if no sync reached loopguard, so the wrapping cannot silently fall
// away.
package service

import (
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"testing"

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

type counted struct{ core.Provider }

type countedDialect struct{ core.Dialect }

func (p counted) Dialect() core.Dialect { return countedDialect{p.Provider.Dialect()} }

func (d countedDialect) Translate(obj runtime.Object, c *core.Cluster) (*core.Result, error) {
	evaluations.Add(1)
	return d.Dialect.Translate(obj, c)
}

// wrap is the decorator as a fork uses it, around the upstream suite's fake cloud.
func wrap(inner cloudprovider.Interface) cloudprovider.Interface {
	return lgcloud.Wrap(inner, counted{kubernetes.NewProvider(nil)}, lgcloud.WithProfile(core.ClusterProfile{
		KubernetesVersion: "v1.37.2", ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: "v1.37.2"}))
}

// TestMain runs the upstream service controller's own suite twice around the decorated fake
// cloud: with ExternalIP unset (the fake's "<nil>" address, which loopguard passes through
// as a status the API server would refuse) and set (a real address, which loopguard
// publishes with an explicit ipMode).
func TestMain(m *testing.M) {
	for _, ip := range []net.IP{nil, net.ParseIP("192.0.2.77")} {
		externalIP = ip
		fmt.Printf("upstream service controller suite, wrapped, ExternalIP %v\n", ip)
		before := evaluations.Load()
		if code := m.Run(); code != 0 {
			os.Exit(code)
		}
		n := evaluations.Load() - before
		fmt.Printf("upstream service controller suite, wrapped, ExternalIP %v: %d Services evaluated by loopguard\n", ip, n)
		if n == 0 && ip != nil { // with "<nil>" every status is passed through unread
			fmt.Println("FAIL: no sync went through the decorator")
			os.Exit(1)
		}
	}
	os.Exit(0)
}
