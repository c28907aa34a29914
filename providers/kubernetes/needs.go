package kubernetes

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// What the backends need from the load balancer, read from the annotations with which the
// common cloud-controller-managers turn on the PROXY protocol toward the backends. Each row
// was read in that CCM's public source (the file is named in its source text); a value a row
// does not recognise draws no conclusion, and loopguard.io/backend-expects overrides them all.
const (
	annAWSProxyProtocol        = "service.beta.kubernetes.io/aws-load-balancer-proxy-protocol"
	annDOProxyProtocol         = "service.beta.kubernetes.io/do-loadbalancer-enable-proxy-protocol"
	annScalewayProxyV1         = "service.beta.kubernetes.io/scw-loadbalancer-proxy-protocol-v1"
	annScalewayProxyV2         = "service.beta.kubernetes.io/scw-loadbalancer-proxy-protocol-v2"
	annScalewaySendProxyV2     = "service.beta.kubernetes.io/scw-loadbalancer-send-proxy-v2"
	annLinodeDefaultProxy      = "service.beta.kubernetes.io/linode-loadbalancer-default-proxy-protocol"
	annLinodeProxyDeprecated   = "service.beta.kubernetes.io/linode-loadbalancer-proxy-protocol"
	annOCINLBProxyV2           = "oci-network-load-balancer.oraclecloud.com/is-ppv2-enabled"
	annOCIProxyProtocolVersion = "service.beta.kubernetes.io/oci-load-balancer-connection-proxy-protocol-version"

	// ingress-nginx reads use-proxy-protocol from the ConfigMap its --configmap flag names;
	// the project's own manifests (deploy/static/provider/*/deploy.yaml) create it as
	// ingress-nginx-controller beside the controller, and the Helm chart names it after the
	// release (the controller's Service has the same name).
	ingressNginxConfigMap = "ingress-nginx-controller"
	ingressNginxUsePROXY  = "use-proxy-protocol"
)

// proxyHeaderFact is one annotation's conclusion that the backends expect the PROXY header.
type proxyHeaderFact struct {
	version string // "v1", "v2" or "" when the source does not say
	reason  core.Reason
}

// proxyHeaderOf reads the PROXY-protocol settings of the CCMs that loopguard knows (Hetzner's
// and OpenStack's also say the LB proxies, which snat.go reads) and of ingress-nginx. It
// returns nil when none is on.
func proxyHeaderOf(svc *corev1.Service, c *core.Cluster) []proxyHeaderFact {
	ann := svc.Annotations
	var out []proxyHeaderFact
	add := func(version, msg string) {
		out = append(out, proxyHeaderFact{version: version, reason: ruleCCMProxyProtocol.Because(msg)})
	}
	// AWS: "*" is the only value both projects accept. The cloud provider's Classic ELB sends
	// v1 (its ELB policy ProxyProtocol); the AWS Load Balancer Controller's NLB target groups
	// get proxy_protocol_v2.enabled: which one runs is the loadBalancerClass's business.
	if ann[annAWSProxyProtocol] == "*" {
		add("", "AWS: "+annAWSProxyProtocol+": \"*\"")
	}
	if v, ok := ann[annAWSTargetGroupAttrs]; ok && stringMapValue(v, "proxy_protocol_v2.enabled") == "true" {
		add("v2", "AWS: "+annAWSTargetGroupAttrs+" sets proxy_protocol_v2.enabled=true")
	}
	// Hetzner: a Go bool (strconv.ParseBool).
	if on, err := strconv.ParseBool(ann[annHetznerProxyProtocol]); err == nil && on {
		add("", "Hetzner Cloud: "+annHetznerProxyProtocol+": "+quote(ann[annHetznerProxyProtocol]))
	}
	// OpenStack: exactly "true" or "v1" (PROXY), "v2" (PROXYV2); anything else is off.
	switch v := ann[annOpenStackProxyProtocol]; v {
	case "true", "v1":
		add("v1", "OpenStack: "+annOpenStackProxyProtocol+": "+quote(v))
	case "v2":
		add("v2", "OpenStack: "+annOpenStackProxyProtocol+": "+quote(v))
	}
	// DigitalOcean: a Go bool; DigitalOcean documents its PROXY protocol as v1.
	if on, err := strconv.ParseBool(ann[annDOProxyProtocol]); err == nil && on {
		add("v1", "DigitalOcean: "+annDOProxyProtocol+": "+quote(ann[annDOProxyProtocol]))
	}
	// Scaleway: true, "*" or a list of the Service's ports, per version.
	for _, k := range [...]struct{ key, version string }{{annScalewayProxyV1, "v1"}, {annScalewayProxyV2, "v2"}, {annScalewaySendProxyV2, "v2"}} {
		if v, ok := ann[k.key]; ok && scalewayOn(v, svc) {
			add(k.version, "Scaleway: "+k.key+": "+quote(v))
		}
	}
	// Linode: v1 or v2 (none is off); the default annotation wins over the deprecated one.
	for _, key := range [...]string{annLinodeDefaultProxy, annLinodeProxyDeprecated} {
		if v := strings.ToLower(ann[key]); v == "v1" || v == "v2" {
			add(v, "Linode: "+key+": "+quote(ann[key]))
			break
		}
	}
	// Oracle OKE: the network load balancer's PROXY v2 switch (true, any case), and the
	// classic load balancer's backend PROXY protocol version.
	if strings.EqualFold(ann[annOCINLBProxyV2], "true") {
		add("v2", "Oracle OKE: "+annOCINLBProxyV2+": "+quote(ann[annOCINLBProxyV2]))
	}
	if v, ok := ann[annOCIProxyProtocolVersion]; ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && (n == 1 || n == 2) {
			add("v"+strconv.Itoa(n), "Oracle OKE: "+annOCIProxyProtocolVersion+": "+quote(v))
		}
	}
	if f, ok := ingressNginxProxy(svc, c); ok {
		out = append(out, f)
	}
	return out
}

// scalewayOn reports whether a Scaleway PROXY annotation turns the protocol on for at least one
// of the Service's ports: "true" and "*" mean every port, otherwise it is a list of ports.
func scalewayOn(v string, svc *corev1.Service) bool {
	switch strings.TrimSpace(v) {
	case "true", "*":
		return true
	case "", "false":
		return false
	}
	for _, p := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			if int(sp.Port) == n {
				return true
			}
		}
	}
	return false
}

// scalewayPortOn is the Scaleway controller's isPortInRange for one PROXY annotation and one
// Service port: "true" (or any other Go bool but "1" and "0") and "*" mean every port,
// otherwise it is a list of ports.
func scalewayPortOn(v string, port int32) bool {
	v = strings.TrimSpace(v)
	if b, err := strconv.ParseBool(v); err == nil && v != "1" && v != "0" {
		return b
	}
	if v == "*" {
		return true
	}
	for _, p := range strings.Split(v, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(p)); err == nil && int32(n) == port {
			return true
		}
	}
	return false
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

// stringMapValue returns the value of key in a stringMap annotation ("k1=v1,k2=v2"), or "".
func stringMapValue(v, key string) string {
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(val)
		}
	}
	return ""
}

// applyProxyHeader records what proxyHeaderOf found on e.
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
