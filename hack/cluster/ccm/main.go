package main

import (
	"fmt"
	"io"
	"net/netip"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // the client-go metrics, as the upstream sample registers them
	"k8s.io/klog/v2"

	lgcloud "github.com/loopguard/loopguard/adapters/cloudprovider"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/internal/cluster/machinelb"
	lgkubernetes "github.com/loopguard/loopguard/providers/kubernetes"
)

type settings struct {
	pool, hosts, domain, state, profile string
}

func main() {
	s := &settings{}
	cloudprovider.RegisterCloudProvider(machinelb.ProviderName, func(io.Reader) (cloudprovider.Interface, error) {
		pool, err := netip.ParsePrefix(s.pool)
		if err != nil {
			return nil, fmt.Errorf("--machine-lb-pool: %w", err)
		}
		return machinelb.New(machinelb.Options{Pool: pool, HostsFile: s.hosts, Domain: s.domain, StateDir: s.state})
	})
	opts, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		klog.Fatalf("unable to initialize command options: %v", err)
	}
	fss := cliflag.NamedFlagSets{}
	fs := fss.FlagSet("machine cloud and loopguard")
	addFlags(fs, s)
	command := app.NewCloudControllerManagerCommand(opts, cloudInitializer(s), app.DefaultInitFuncConstructors,
		names.CCMControllerAliases(), fss, wait.NeverStop)
	os.Exit(cli.Run(command))
}

func addFlags(fs *pflag.FlagSet, s *settings) {
	fs.StringVar(&s.pool, "machine-lb-pool", "10.99.0.0/24", "the range load-balancer addresses come from")
	fs.StringVar(&s.hosts, "machine-lb-hosts-file", "", "the hosts file of the cloud's DNS, for load balancers that publish a hostname")
	fs.StringVar(&s.domain, "machine-lb-domain", "lb.machine.invalid", "the zone of the load balancers' hostnames")
	fs.StringVar(&s.state, "machine-lb-state-dir", "", "where HAProxy's configurations and logs go")
	fs.StringVar(&s.profile, "loopguard-profile", "", "a ClusterProfile YAML file: the facts no object carries")
}

// cloudInitializer is the upstream sample's, plus the lines marked loopguard (docs/ccm.md).
func cloudInitializer(s *settings) app.InitCloudFunc {
	return func(c *config.CompletedConfig) cloudprovider.Interface {
		shared := c.ComponentConfig.KubeCloudShared.CloudProvider
		cloud, err := cloudprovider.InitCloudProvider(shared.Name, shared.CloudConfigFile)
		if err != nil || cloud == nil {
			klog.Fatalf("cloud provider %q could not be initialized: %v", shared.Name, err)
		}
		profile := core.ClusterProfile{} // loopguard: the facts no object carries
		if s.profile != "" {
			data, err := os.ReadFile(s.profile)
			if err != nil {
				klog.Fatalf("--loopguard-profile: %v", err)
			}
			p, err := core.ParseProfile(s.profile, data)
			if err != nil {
				klog.Fatalf("--loopguard-profile: %v", err)
			}
			profile = *p
		}
		return lgcloud.Wrap(cloud, lgkubernetes.NewProvider(nil), // loopguard
			lgcloud.WithProfile(profile), lgcloud.WithPolicy(profile.Policy), // loopguard
			lgcloud.WithLogr(klog.Background()),        // loopguard: its lines beside the CCM's
			lgcloud.WithEventRecorder(c.EventRecorder)) // loopguard: Events on the Services
	}
}
