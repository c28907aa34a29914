package main

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	fakecloud "k8s.io/cloud-provider/fake"
)

// fakeCloud is the fork's own cloud in this example: k8s.io/cloud-provider/fake, with load
// balancers only, handing each Service an address of its own out of a range. The upstream
// fake keeps its records in plain maps and slices without locks, so every load-balancer call
// is serialized here, and its call records are dropped after each call (a long-running
// process would otherwise grow them forever).
type fakeCloud struct {
	*fakecloud.Cloud

	mu     sync.Mutex
	prefix netip.Prefix
	next   netip.Addr
	addrs  map[types.UID]netip.Addr
	used   map[netip.Addr]bool
}

func newFakeCloud(prefix netip.Prefix, mode *corev1.LoadBalancerIPMode) *fakeCloud {
	prefix = prefix.Masked()
	return &fakeCloud{
		// Only load balancers: Instances, Zones, Routes and Clusters would record calls from
		// other controllers' goroutines.
		Cloud: &fakecloud.Cloud{Provider: ProviderName, BalancerIPMode: mode,
			DisableInstances: true, DisableZones: true, DisableRoutes: true, DisableClusters: true},
		prefix: prefix, next: prefix.Addr(),
		addrs: map[types.UID]netip.Addr{}, used: map[netip.Addr]bool{},
	}
}

// LoadBalancer returns the serialized, address-handing load balancer.
func (f *fakeCloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return f, true }

var _ cloudprovider.LoadBalancer = (*fakeCloud)(nil)

// allocate returns the Service's address, taking the next free one of the range for a new
// Service. It skips the range's first address (the network's) and, for IPv4, its last.
func (f *fakeCloud) allocate(svc *corev1.Service) (netip.Addr, error) {
	if a, ok := f.addrs[svc.UID]; ok {
		return a, nil
	}
	a := f.next
	for range 1 << 16 {
		a = a.Next()
		if !f.prefix.Contains(a) || (a.Is4() && !f.prefix.Contains(a.Next())) {
			a = f.prefix.Addr()
			continue
		}
		if !f.used[a] {
			f.addrs[svc.UID], f.used[a], f.next = a, true, a
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("fake cloud: no free address left in %s", f.prefix)
}

func (f *fakeCloud) release(svc *corev1.Service) {
	if a, ok := f.addrs[svc.UID]; ok {
		delete(f.addrs, svc.UID)
		delete(f.used, a)
	}
}

func (f *fakeCloud) forget() {
	f.ClearCalls()
	f.EnsureCalls, f.UpdateCalls = nil, nil
}

// GetLoadBalancer reports the Service's load balancer, if it was given an address.
func (f *fakeCloud) GetLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.addrs[svc.UID]
	if !ok {
		return nil, false, nil
	}
	return &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: a.String(), IPMode: f.BalancerIPMode}}}, true, nil
}

// EnsureLoadBalancer is the fake's, with the Service's own address in the status.
func (f *fakeCloud) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.forget()
	a, err := f.allocate(svc)
	if err != nil {
		return nil, err
	}
	st, err := f.Cloud.EnsureLoadBalancer(ctx, clusterName, svc, nodes)
	if err != nil {
		return nil, err
	}
	for i := range st.Ingress {
		st.Ingress[i].IP = a.String()
	}
	return st, nil
}

// UpdateLoadBalancer is the fake's, serialized.
func (f *fakeCloud) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.forget()
	return f.Cloud.UpdateLoadBalancer(ctx, clusterName, svc, nodes)
}

// EnsureLoadBalancerDeleted is the fake's; the Service's address goes back to the range.
func (f *fakeCloud) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *corev1.Service) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.forget()
	if err := f.Cloud.EnsureLoadBalancerDeleted(ctx, clusterName, svc); err != nil {
		return err
	}
	delete(f.Balancers, f.GetLoadBalancerName(ctx, clusterName, svc))
	f.release(svc)
	return nil
}
