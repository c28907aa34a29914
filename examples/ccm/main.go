/*
Copyright 2020 The Kubernetes Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Adapted from k8s.io/cloud-provider v0.37.2 sample/basic_main.go: main and cloudInitializer,
// changed as the comments below say; the rest is loopguard's.

// Command ccm is a cloud-controller-manager fork with loopguard in it: the upstream
// k8s.io/cloud-provider/app command, with a cloud registered as loopguard-example whose load
// balancers come from k8s.io/cloud-provider/fake (addresses from --fake-lb-cidr) and go
// through adapters/cloudprovider.Wrap, so every LoadBalancer Service gets the loop-safe
// status.loadBalancer.ingress[].ipMode. Run it against any test API server:
//
//	go run ./examples/ccm --kubeconfig ~/.kube/config --cloud-provider loopguard-example \
//	  --controllers service --leader-elect=false --secure-port 0 \
//	  --loopguard-provider kubernetes --loopguard-profile profile.yaml
//
// The lines a real fork adds are the ones in newCloud; docs/ccm.md has the details.
package main

import (
	"fmt"
	"io"
	"net/netip"
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"

	corev1 "k8s.io/api/core/v1"

	lgcloud "github.com/loopguard/loopguard/adapters/cloudprovider"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/kubernetes"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/volcengine"
)

// ProviderName is the name the cloud is registered under (--cloud-provider).
const ProviderName = "loopguard-example"

// settings are the fork's own flags, and what the command's configuration lends the cloud.
type settings struct {
	cidr     string
	ipMode   string
	provider string
	profile  string

	// Set by cloudInitializer before the cloud is built.
	version  volcengine.ServerVersioner
	recorder record.EventRecorder
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	s := &settings{}
	cloudprovider.RegisterCloudProvider(ProviderName, func(io.Reader) (cloudprovider.Interface, error) { return newCloud(s) })

	ccmOptions, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		klog.Errorf("unable to initialize command options: %v", err)
		return 1
	}
	fss := cliflag.NamedFlagSets{}
	fs := fss.FlagSet("loopguard")
	addFlags(fs, s)
	cmd := app.NewCloudControllerManagerCommand(ccmOptions, cloudInitializer(s), app.DefaultInitFuncConstructors, names.CCMControllerAliases(), fss, wait.NeverStop)
	cmd.SetArgs(args)
	return cli.Run(cmd)
}

func addFlags(fs *pflag.FlagSet, s *settings) {
	fs.StringVar(&s.cidr, "fake-lb-cidr", "203.0.113.0/24", "the range the fake cloud hands load-balancer addresses out of (a documentation range, RFC 5737, by default)")
	fs.StringVar(&s.ipMode, "fake-lb-ip-mode", "", `the ipMode the fake cloud itself puts in the status ("", VIP or Proxy), as a cloud that sets one would`)
	fs.StringVar(&s.provider, "loopguard-provider", kubernetes.Name, "loopguard's provider: kubernetes (plain KEP-1860 ipMode), volcengine or tencent")
	fs.StringVar(&s.profile, "loopguard-profile", "", "a ClusterProfile YAML file: the facts no object carries (proxy mode, kube-proxy and API server versions, allowlists, policy)")
}

// cloudInitializer is the upstream sample's, with the API server's version and the
// controller manager's event recorder handed to the cloud before it is built.
func cloudInitializer(s *settings) app.InitCloudFunc {
	return func(c *config.CompletedConfig) cloudprovider.Interface {
		if dc, err := discovery.NewDiscoveryClientForConfig(c.Kubeconfig); err == nil {
			s.version = dc
		}
		s.recorder = c.EventRecorder
		shared := c.ComponentConfig.KubeCloudShared.CloudProvider
		cloud, err := cloudprovider.InitCloudProvider(shared.Name, shared.CloudConfigFile)
		if err != nil {
			klog.Fatalf("cloud provider could not be initialized: %v", err)
		}
		if cloud == nil {
			klog.Fatalf("cloud provider %q is not known; this fork registers %q", shared.Name, ProviderName)
		}
		return cloud
	}
}

// newCloud is what a fork's registration function does: build its own cloud, unchanged, and
// return it wrapped by loopguard.
func newCloud(s *settings) (cloudprovider.Interface, error) {
	prefix, err := netip.ParsePrefix(s.cidr)
	if err != nil {
		return nil, fmt.Errorf("--fake-lb-cidr: %w", err)
	}
	var mode *corev1.LoadBalancerIPMode
	switch m := corev1.LoadBalancerIPMode(s.ipMode); m {
	case "":
	case corev1.LoadBalancerIPModeVIP, corev1.LoadBalancerIPModeProxy:
		mode = &m
	default:
		return nil, fmt.Errorf("--fake-lb-ip-mode %q: want VIP or Proxy", s.ipMode)
	}
	inner := newFakeCloud(prefix, mode)

	profile := core.ClusterProfile{}
	if s.profile != "" {
		data, err := os.ReadFile(s.profile)
		if err != nil {
			return nil, fmt.Errorf("--loopguard-profile: %w", err)
		}
		p, err := core.ParseProfile(s.profile, data)
		if err != nil {
			return nil, fmt.Errorf("--loopguard-profile: %w", err)
		}
		profile = *p
	}
	profile.Provider = s.provider

	log := hclog.New(&hclog.LoggerOptions{Name: "ccm", Level: hclog.Info, Output: os.Stderr})
	var p core.Provider
	switch s.provider {
	case kubernetes.Name:
		p = kubernetes.NewProvider(nil)
	case tencent.Name:
		// Without a CLB client the TKE provider plans through the Service's annotations and
		// its TkeServiceConfig, which this CCM does not write: they become Events.
		p, err = tencent.NewProvider(&tencent.DriverOptions{Allowlists: profile.Allowlists, Logger: log})
	case volcengine.Name:
		opts := &volcengine.DriverOptions{Logger: log}
		if s.version != nil {
			opts.ServerVersion = s.version
		}
		p, err = volcengine.NewProvider(opts)
	default:
		return nil, fmt.Errorf("--loopguard-provider %q: want kubernetes, volcengine or tencent", s.provider)
	}
	if err != nil {
		return nil, err
	}
	// loopguard's lines go through klog, beside the service controller's.
	opts := []lgcloud.Option{lgcloud.WithProfile(profile), lgcloud.WithPolicy(profile.Policy), lgcloud.WithLogr(klog.Background())}
	if s.recorder != nil {
		opts = append(opts, lgcloud.WithEventRecorder(s.recorder))
	}
	log.Info("loopguard wraps the fake cloud", "provider", s.provider, "lb-cidr", prefix.String())
	return lgcloud.Wrap(inner, p, opts...), nil
}
