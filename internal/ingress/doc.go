// Package ingress reads what loopguard needs from an Ingress object itself: the Services it
// routes to. core's Cluster, the TKE dialect and the controller's watches share it; it is
// internal because it is no part of what a host or a dialect author holds (a dialect reaches
// an Ingress's Services through core.Cluster.IngressBackends).
package ingress
