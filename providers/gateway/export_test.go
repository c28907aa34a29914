package gateway

import (
	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/loopguard/loopguard/core"
)

// EnvoyServiceName is exported for the envoy gateway test.
var EnvoyServiceName = envoyServiceName
var HashedName = hashedName

// ServiceOf is the Service the dialect judges a Gateway through: the one its implementation
// generated, or the one it would generate.
func ServiceOf(d *Dialect, gw *gwv1.Gateway, c *core.Cluster) *corev1.Service {
	return d.look(gw, c).svc
}
