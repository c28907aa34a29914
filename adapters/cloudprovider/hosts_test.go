package cloudprovider_test

import (
	"context"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	fakecloud "k8s.io/cloud-provider/fake"
)

// Inner clouds shaped like real forks' own, for this package's tests: each is the upstream
// fake for the bookkeeping, answering EnsureLoadBalancer with the status that cloud's
// controller builds, for its own reasons.

// hetznerCloud answers as hcloud-cloud-controller-manager v1.35.0 does
// (hcloud/load_balancers.go buildLoadBalancerStatusIngress): the public IPv4, the public IPv6
// and the private address, each with ipMode Proxy while the PROXY protocol is on and VIP
// otherwise. getProxyProtocolEnabled decides it: the Service's uses-proxyprotocol
// (strconv.ParseBool; an error fails the sync), else HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL
// from the controller's environment (internal/config/config.go getEnvBoolPtr: unset is off),
// which env reads.
type hetznerCloud struct {
	*fakecloud.Cloud
	env func(string) (string, bool)
}

func newHetzner(env func(string) (string, bool)) *hetznerCloud {
	return &hetznerCloud{Cloud: &fakecloud.Cloud{ExternalIP: net.ParseIP("198.51.100.7"), Provider: "hcloud", Exists: true}, env: env}
}

func (h *hetznerCloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return hetznerLB{h}, true }

type hetznerLB struct{ *hetznerCloud }

func (h hetznerLB) EnsureLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	if _, err := h.Cloud.EnsureLoadBalancer(ctx, cluster, svc, nodes); err != nil {
		return nil, err
	}
	on := false
	if v, ok := svc.Annotations["load-balancer.hetzner.cloud/uses-proxyprotocol"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("hcloud/loadBalancers.getLoadBalancerStatusIngress: %w", err)
		}
		on = b
	} else if v, ok := h.env("HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL"); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("failed to parse HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL: %w", err)
		}
		on = b
	}
	mode := corev1.LoadBalancerIPModeVIP
	if on {
		mode = corev1.LoadBalancerIPModeProxy
	}
	st := &corev1.LoadBalancerStatus{}
	for _, ip := range []string{h.ExternalIP.String(), "2001:db8::7", "10.0.0.7"} {
		m := mode
		st.Ingress = append(st.Ingress, corev1.LoadBalancerIngress{IP: ip, IPMode: &m})
	}
	return st, nil
}

// kubeVIPCloud answers as kube-vip-cloud-provider v0.0.12 does
// (pkg/provider/loadBalancer.go syncLoadBalancer): it picks the address for kube-vip and
// returns the Service's own status, which kube-vip writes later (kube-vip v1.2.3
// pkg/services/services.go updateStatus), so the first sync returns an empty status.
type kubeVIPCloud struct{ *fakecloud.Cloud }

func newKubeVIP() *kubeVIPCloud {
	return &kubeVIPCloud{&fakecloud.Cloud{Provider: "kubevip", Exists: true}}
}

func (k *kubeVIPCloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return kubeVIPLB{k}, true }

type kubeVIPLB struct{ *kubeVIPCloud }

func (k kubeVIPLB) EnsureLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	if _, err := k.Cloud.EnsureLoadBalancer(ctx, cluster, svc, nodes); err != nil {
		return nil, err
	}
	return svc.Status.LoadBalancer.DeepCopy(), nil
}
