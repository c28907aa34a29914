package cloudprovider_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/klog/v2"

	lgcloud "github.com/loopguard/loopguard/adapters/cloudprovider"
	"github.com/loopguard/loopguard/core"
	lgkubernetes "github.com/loopguard/loopguard/providers/kubernetes"
)

// A Hetzner Cloud fork's own cloud, registered as the hcloud controller registers it; here
// one shaped like it that reads the same environment variable (hosts_test.go).
func init() {
	cloudprovider.RegisterCloudProvider("hcloud-fork", func(io.Reader) (cloudprovider.Interface, error) {
		return newHetzner(os.LookupEnv), nil
	})
}

// forkProfile is the fork's ClusterProfile, as in "The lines a fork adds".
var forkProfile = core.ClusterProfile{KubernetesVersion: "v1.37.2", ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: "v1.37.2"}

// docs/ccm.md "The inner CCM's defaults" is this function between the markers, line for line
// (TestDocsDefaultsSnippetIsTheExample checks it).
//
// --- begin docs/ccm.md#the-inner-ccms-defaults
// hcloudInitializer is a Hetzner Cloud fork's app.InitCloudFunc. The hcloud controller reads
// HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL from its environment, which is the fork's own:
// SettingsFromEnv states it, and every other setting loopguard reads, once.
func hcloudInitializer(c *config.CompletedConfig) cloudprovider.Interface {
	shared := c.ComponentConfig.KubeCloudShared.CloudProvider
	cloud, err := cloudprovider.InitCloudProvider(shared.Name, shared.CloudConfigFile)
	if err != nil || cloud == nil {
		klog.Fatalf("cloud provider %q could not be initialized: %v", shared.Name, err)
	}
	return lgcloud.Wrap(cloud, lgkubernetes.NewProvider(nil),
		lgcloud.WithProfile(forkProfile),
		lgcloud.WithControllerSettings( // loopguard: what the inner CCM does by default
			lgkubernetes.SettingsFromEnv(os.LookupEnv)),
		lgcloud.WithLogr(klog.Background()),
		lgcloud.WithEventRecorder(c.EventRecorder))
}

// --- end docs/ccm.md#the-inner-ccms-defaults

// ExampleWithControllerSettings runs a Hetzner Cloud fork whose controller turns the PROXY
// protocol on for every Service by default: a Service without the annotation gets ipMode
// Proxy on all three addresses from the hcloud controller, for a reason the Service does not
// carry. Stated once, that default is loopguard's too: the status stands and nothing is
// advised, on the first sync or any later one.
func ExampleWithControllerSettings() {
	os.Setenv("HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL", "true")
	defer os.Unsetenv("HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL")
	rec := record.NewFakeRecorder(10)
	c := (&config.Config{EventRecorder: rec}).Complete()
	c.ComponentConfig.KubeCloudShared.CloudProvider.Name = "hcloud-fork"
	lb, _ := hcloudInitializer(c).LoadBalancer()

	svc := lbService("shop", "web", nil)
	nodes := []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: corev1.NodeSpec{ProviderID: "hcloud://4711"}}}
	for range 3 {
		st, err := lb.EnsureLoadBalancer(context.Background(), "cluster", svc, nodes)
		if err != nil {
			fmt.Println(err)
			return
		}
		svc.Status.LoadBalancer = *st
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		fmt.Println(in.IP, *in.IPMode)
	}
	fmt.Println("Events:", len(rec.Events))
	// Output:
	// 198.51.100.7 Proxy
	// 2001:db8::7 Proxy
	// 10.0.0.7 Proxy
	// Events: 0
}

// TestDocsDefaultsSnippetIsTheExample: the Go block of docs/ccm.md "The inner CCM's defaults"
// is hcloudInitializer, line for line.
func TestDocsDefaultsSnippetIsTheExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/ccm.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_defaults_test.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i := strings.Index(text, "### The inner CCM's defaults")
	if i < 0 {
		t.Fatal(`docs/ccm.md has no section "The inner CCM's defaults"`)
	}
	text = text[i:]
	start := strings.Index(text, "```go\n")
	if start < 0 {
		t.Fatal("no Go block in the section")
	}
	end := strings.Index(text[start+6:], "```")
	if end < 0 {
		t.Fatal("the Go block does not end")
	}
	shown := text[start+6 : start+6+end]
	const begin, stop = "// --- begin docs/ccm.md#the-inner-ccms-defaults\n", "\n// --- end docs/ccm.md#the-inner-ccms-defaults"
	source := string(src)
	b, e := strings.Index(source, begin), strings.Index(source, stop)
	if b < 0 || e < 0 {
		t.Fatal("example_defaults_test.go lost its markers")
	}
	if marked := source[b+len(begin) : e]; strings.TrimSpace(shown) != strings.TrimSpace(marked) {
		t.Errorf("docs/ccm.md shows:\n%s\n\nexample_defaults_test.go has:\n%s", shown, marked)
	}
}
