package kubernetes

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// What the backends need from the load balancer: the units read their controllers'
// PROXY-protocol settings (cloud_<name>.go); ingress-nginx, which is no cloud, is read here.
// loopguard.io/backend-expects overrides them all.
const (
	// ingress-nginx reads use-proxy-protocol from the ConfigMap its --configmap flag names;
	// the project's own manifests (deploy/static/provider/*/deploy.yaml) create it as
	// ingress-nginx-controller beside the controller, and the Helm chart names it after the
	// release (the controller's Service has the same name).
	ingressNginxConfigMap = "ingress-nginx-controller"
	ingressNginxUsePROXY  = "use-proxy-protocol"
)

// proxyHeaderFact is one setting's conclusion that the backends expect the PROXY header.
type proxyHeaderFact struct {
	version string // "v1", "v2" or "" when the source does not say
	reason  core.Reason
}

// ingressNginxProxy reads use-proxy-protocol for the Service of an ingress-nginx controller:
// the ConfigMap of the official manifests, or one named after the Service (the Helm chart's
// name for both), in the Service's namespace.
func ingressNginxProxy(svc *corev1.Service, c *core.Cluster) (proxyHeaderFact, bool) {
	if c == nil || svc.Labels["app.kubernetes.io/name"] != "ingress-nginx" {
		return proxyHeaderFact{}, false
	}
	for _, name := range [...]string{svc.Name, ingressNginxConfigMap} {
		cm := c.ConfigMap(svc.Namespace, name)
		if cm == nil {
			continue
		}
		if on, err := strconv.ParseBool(cm.Data[ingressNginxUsePROXY]); err == nil && on {
			// nginx's listen ... proxy_protocol accepts both versions.
			return proxyHeaderFact{reason: ruleIngressNginxProxyProtocol.Because(
				"ConfigMap " + svc.Namespace + "/" + name + " sets " + ingressNginxUsePROXY + ": " + quote(cm.Data[ingressNginxUsePROXY]))}, true
		}
		return proxyHeaderFact{}, false
	}
	return proxyHeaderFact{}, false
}

// applyProxyHeader records what the units and ingressNginxProxy found on e.
func applyProxyHeader(e *core.Exposure, facts []proxyHeaderFact) {
	if len(facts) == 0 {
		return
	}
	e.Needs.ProxyHeader = core.Yes
	for _, f := range facts {
		if f.version != "" {
			e.Needs.ProxyVersion = f.version
		}
		e.Reasons = append(e.Reasons, f.reason)
	}
}

// throughLBOffer is "publish ipMode Proxy" for an exposure whose nodes intercept its address.
// Like interceptOffer, only the owner of the status can carry it out, and it takes a dataplane
// that honours Proxy.
func throughLBOffer(e *core.Exposure, st *statusFacts, dp *dataplane) core.Offer {
	action := "set status.loadBalancer.ingress[].ipMode: Proxy for " + strings.Join(st.ips(), ", ") +
		" (the status belongs to the cloud-controller-manager: a CCM fork publishes it through loopguard's adapters/cloudprovider)"
	o := dialect.ThroughLBOffer(e, action)
	o.ID = offerThroughLB
	if dp.honoursProxy != core.Yes {
		kind := core.PreconditionUnknown
		if dp.honoursProxy == core.No {
			kind = core.PreconditionVersion
		}
		o.Unmet = append(o.Unmet, core.Precondition{Kind: kind,
			Reason: ruleThroughLBNeedsProxy.Because(dp.proxyReason.Message + " (" + dp.component + " " + orUnknown(dp.have) + ", need " + orUnknown(dp.need) + ")")})
	}
	return o
}
