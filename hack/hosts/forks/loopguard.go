//go:build ignore

// The fork fixtures' one loopguard.go: hack/forks.sh copies it into each fixture without the
// build constraint above, which keeps it out of the root module's packages.

package main

// What a fork adds to take loopguard, as docs/ccm.md shows it: the decorator around its cloud
// and the provider of the Kubernetes dialect its cloud's annotations are read with.
import (
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/klog/v2"

	lgcloud "github.com/loopguard/loopguard/adapters/cloudprovider"
	lgkubernetes "github.com/loopguard/loopguard/providers/kubernetes"
)

func init() {
	decorate = func(cloud cloudprovider.Interface, c *config.CompletedConfig) cloudprovider.Interface {
		return lgcloud.Wrap(cloud, lgkubernetes.NewProvider(nil),
			lgcloud.WithLogr(klog.Background()), lgcloud.WithEventRecorder(c.EventRecorder))
	}
}
