package cloudprovider_test

import (
	"context"
	"fmt"
	"io"
	"net"

	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app/config"
	fakecloud "k8s.io/cloud-provider/fake"
	"k8s.io/klog/v2"

	lgcloud "github.com/loopguard/loopguard/adapters/cloudprovider"
	"github.com/loopguard/loopguard/core"
	lgkubernetes "github.com/loopguard/loopguard/providers/kubernetes"
)

// The fork's own cloud, registered as forks do; here the upstream fake with one address.
func init() {
	cloudprovider.RegisterCloudProvider("my-cloud", func(io.Reader) (cloudprovider.Interface, error) {
		return &fakecloud.Cloud{ExternalIP: net.ParseIP("203.0.113.7"), Provider: "my-cloud", Exists: true}, nil
	})
}

// docs/ccm.md "The lines a fork adds" is this function between the markers, line for line
// (TestDocsSnippetIsTheExample checks it).
//
// --- begin docs/ccm.md
// cloudInitializer is the app.InitCloudFunc the fork hands to
// app.NewCloudControllerManagerCommand; the lines marked loopguard are what it adds.
func cloudInitializer(c *config.CompletedConfig) cloudprovider.Interface {
	shared := c.ComponentConfig.KubeCloudShared.CloudProvider
	cloud, err := cloudprovider.InitCloudProvider(shared.Name, shared.CloudConfigFile)
	if err != nil || cloud == nil {
		klog.Fatalf("cloud provider %q could not be initialized: %v", shared.Name, err)
	}
	return lgcloud.Wrap(cloud, lgkubernetes.NewProvider(nil), // loopguard
		lgcloud.WithProfile(core.ClusterProfile{ // loopguard: the facts no object carries
			KubernetesVersion: "v1.37.2", ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: "v1.37.2"}),
		lgcloud.WithLogr(klog.Background()),        // loopguard: its lines beside the CCM's
		lgcloud.WithEventRecorder(c.EventRecorder)) // loopguard: Events on the Services
}

// --- end docs/ccm.md

// ExampleWrap builds the wrapped cloud as a fork's cloud-controller-manager does and syncs a
// Hetzner Service whose backends expect the PROXY protocol: the cloud publishes no ipMode,
// loopguard publishes Proxy so in-cluster clients go through the load balancer.
func ExampleWrap() {
	c := (&config.Config{EventRecorder: record.NewFakeRecorder(10)}).Complete()
	c.ComponentConfig.KubeCloudShared.CloudProvider.Name = "my-cloud"
	cloud := cloudInitializer(c)

	lb, _ := cloud.LoadBalancer()
	svc := lbService("shop", "web", map[string]string{"load-balancer.hetzner.cloud/uses-proxyprotocol": "true"})
	st, err := lb.EnsureLoadBalancer(context.Background(), "cluster", svc, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(st.Ingress[0].IP, *st.Ingress[0].IPMode)
	// Output: 203.0.113.7 Proxy
}
