// Package core is for anyone deciding whether in-cluster clients loop through a cloud load balancer.
package core
