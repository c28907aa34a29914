// Package cloudprovider is for teams that run their own cloud-controller-manager (a fork of a
// cloud's CCM, or an in-house one): Wrap decorates its k8s.io/cloud-provider Interface so that
// every LoadBalancer Service gets the loop-safe path carried out where the load balancer is
// made, and the right status.loadBalancer.ingress[].ipMode in the status EnsureLoadBalancer
// returns. The ten lines a fork adds are in docs/ccm.md.
package cloudprovider
