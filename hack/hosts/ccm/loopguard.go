package main

// What a fork adds to take loopguard, as docs/ccm.md shows it: the decorator, the provider of
// its cloud's dialect, and the profile's facts.
import (
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/klog/v2"

	lgcloud "github.com/loopguard/loopguard/adapters/cloudprovider"
	"github.com/loopguard/loopguard/core"
	lgkubernetes "github.com/loopguard/loopguard/providers/kubernetes"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/volcengine"
)

func init() {
	decorate = func(cloud cloudprovider.Interface, c *config.CompletedConfig) cloudprovider.Interface {
		var p core.Provider = lgkubernetes.NewProvider(nil)
		var err error
		switch c.ComponentConfig.KubeCloudShared.CloudProvider.Name {
		case "tencentcloud":
			p, err = tencent.NewProvider(nil)
		case "volcengine":
			p, err = volcengine.NewProvider(nil)
		}
		if err != nil {
			klog.Fatalf("loopguard: %v", err)
		}
		return lgcloud.Wrap(cloud, p, lgcloud.WithLogr(klog.Background()), lgcloud.WithEventRecorder(c.EventRecorder))
	}
}
