package kubernetes

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// Scaleway: scaleway/scaleway-cloud-controller-manager.
type scalewayCloud struct{ cloudBase }

const (
	annScalewayProxyV1     = "service.beta.kubernetes.io/scw-loadbalancer-proxy-protocol-v1"
	annScalewayProxyV2     = "service.beta.kubernetes.io/scw-loadbalancer-proxy-protocol-v2"
	annScalewaySendProxyV2 = "service.beta.kubernetes.io/scw-loadbalancer-send-proxy-v2"
	annScalewayIPMode      = "service.beta.kubernetes.io/scw-loadbalancer-ip-mode"
)

const (
	srcScaleway    = "Scaleway docs \"Using Proxy Protocol v2 with a Scaleway Load Balancer\" (without it the backend sees only the load balancer's address); scaleway/scaleway-cloud-controller-manager scaleway/loadbalancers_annotations.go (scw-loadbalancer-use-hostname, the PROXY protocol annotations)"
	srcCCMScaleway = "scaleway/scaleway-cloud-controller-manager scaleway/loadbalancers.go ipMode (Proxy when every port has the PROXY protocol, or from service.beta.kubernetes.io/scw-loadbalancer-ip-mode; since v0.33.0, #185)"
)

var scalewayFacts = cloudFacts{
	name:               "scaleway",
	title:              "Scaleway",
	providerIDPrefixes: []string{"scaleway://"},
	annotationPrefixes: []string{"service.beta.kubernetes.io/scw-loadbalancer-"},
	sourceNAT:          core.Yes,
	hostnameAnnotation: "service.beta.kubernetes.io/scw-loadbalancer-use-hostname", hostnameValue: "true",
	ipMode: ccmIPMode{read: true, withProxyProtocol: true, since: "v0.33.0",
		annotation: annScalewayIPMode, proxyValue: "Proxy", source: srcCCMScaleway},
	source: srcScaleway,
}

func (scalewayCloud) facts() *cloudFacts { return &scalewayFacts }

func (scalewayCloud) read(v *cloudView) {
	svc, ann := v.svc, v.svc.Annotations
	// true, "*" or a list of the Service's ports, per version.
	for _, k := range [...]struct{ key, version string }{{annScalewayProxyV1, "v1"}, {annScalewayProxyV2, "v2"}, {annScalewaySendProxyV2, "v2"}} {
		if p, ok := ann[k.key]; ok && scalewayOn(p, svc) {
			v.expects(k.version, ruleCCMProxyProtocol.Because("Scaleway: "+k.key+": "+quote(p)))
		}
	}
	v.rowDefault()
	if v.detected && scalewayEveryPort(svc) {
		v.rd.ccmProxy, v.rd.ccmSince = true, v.f.ipMode.since
	}
}

// scalewayEveryPort is the controller's own test for publishing ipMode Proxy: every port has
// the PROXY protocol, by the v1 or the v2 annotation (scaleway/loadbalancers.go ipMode).
func scalewayEveryPort(svc *corev1.Service) bool {
	ann := svc.Annotations
	if len(svc.Spec.Ports) == 0 {
		return false
	}
	for _, p := range svc.Spec.Ports {
		if !scalewayPortOn(ann[annScalewayProxyV1], p.Port) && !scalewayPortOn(ann[annScalewayProxyV2], p.Port) &&
			!scalewayPortOn(ann[annScalewaySendProxyV2], p.Port) {
			return false
		}
	}
	return true
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
