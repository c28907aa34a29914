package kubernetes

import (
	"errors"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// Scaleway: scaleway/scaleway-cloud-controller-manager, read at v0.36.2.
type scalewayCloud struct{ cloudBase }

const (
	annScalewayProxyV1     = "service.beta.kubernetes.io/scw-loadbalancer-proxy-protocol-v1"
	annScalewayProxyV2     = "service.beta.kubernetes.io/scw-loadbalancer-proxy-protocol-v2"
	annScalewaySendProxyV2 = "service.beta.kubernetes.io/scw-loadbalancer-send-proxy-v2"
	annScalewayIPMode      = "service.beta.kubernetes.io/scw-loadbalancer-ip-mode"
	annScalewayUseHostname = "service.beta.kubernetes.io/scw-loadbalancer-use-hostname"
	annScalewayPrivate     = "service.beta.kubernetes.io/scw-loadbalancer-private"
)

// Upstream sources, at the tag read.
const (
	scalewayRepo        = "scaleway/scaleway-cloud-controller-manager "
	srcScalewayPorts    = scalewayRepo + "scaleway/loadbalancers.go isPortInRange, loadbalancers_annotations.go getProxyProtocol@v0.36.2 (per Service port: a Go bool but \"1\" and \"0\" is every port or none, \"*\" every port, else a list of ports (spaces removed, base prefixes taken, 1-65535); a port in both v1 and v2, or a value that does not parse, fails the Service)"
	srcScalewaySendV2   = scalewayRepo + "scaleway/loadbalancers_annotations.go getSendProxyV2@v0.36.2 (for a port neither v1 nor v2 turned on: a Go bool is every port or none, else a list of ports; \"*\" and empty fail the Service)"
	srcScalewayIPMode   = scalewayRepo + "scaleway/loadbalancers.go ipMode, loadbalancers_annotations.go getLoadBalancerIPMode@v0.36.2 (ip-mode written as it is; else Proxy when every port has the PROXY protocol, VIP otherwise; since v0.33.0, #185)"
	srcScalewayHostname = scalewayRepo + "scaleway/loadbalancers_annotations.go getUseHostname@v0.36.2 (strconv.ParseBool, a value that does not parse is false; the hostname is the controller's own: the IP's reverse name, or <lb-id>.<private network>)"
	srcScalewayPrivate  = scalewayRepo + "scaleway/loadbalancers_annotations.go svcPrivate@v0.36.2 (strconv.ParseBool, an error fails the Service; since v0.28.0)"
	srcScalewayKind     = "Scaleway documentation \"Using Proxy Protocol v2 with a Scaleway Load Balancer\" (without it the backend sees only the load balancer's address)"
)

var scalewayFacts = cloudFacts{
	name:               "scaleway",
	title:              "Scaleway",
	providerIDPrefixes: []string{"scaleway://"},
	annotationPrefixes: []string{"service.beta.kubernetes.io/scw-loadbalancer-"},
	sourceNAT:          core.Yes,
	hostnameAnnotation: annScalewayUseHostname, hostnameValue: "true",
	hostnameOn: func(v string) bool { b, _ := goBool(v); return b },
	ipMode: ccmIPMode{read: true, withProxyProtocol: true, since: "v0.33.0",
		annotation: annScalewayIPMode, proxyValue: "Proxy", source: srcScalewayIPMode},
	images: []string{"scaleway/scaleway-cloud-controller-manager"},
	source: srcScalewayKind,
	scope: []ScopeAnnotation{
		{Cloud: "Scaleway", Key: annScalewayPrivate,
			Private: []string{"1", "t", "T", "TRUE", "true", "True"}, Public: []string{"0", "f", "F", "FALSE", "false", "False"},
			Source: srcScalewayPrivate},
	},
	doc: cloudDoc{
		lb:      "a proxy: the backend sees the load balancer's address",
		backend: "PROXY v1 or v2 per Service port: `proxy-protocol-v1`/`-v2` (a Go bool but `1` and `0`, `*`, or a list of ports; `0`, `yes`, a port in both: rejected), else the deprecated `send-proxy-v2` (a Go bool, or ports; `*`, empty: rejected)",
		status:  "the IPs with ipMode `Proxy` when every port has the PROXY protocol (v0.33.0+), else `VIP`; `scw-loadbalancer-ip-mode` (`Proxy`/`VIP` exactly) overrides; `use-hostname` (strconv.ParseBool) publishes the controller's own hostname",
		remedy:  "`scw-loadbalancer-use-hostname: \"true\"` (needs no DNS name); where the user refused it, `scw-loadbalancer-ip-mode: Proxy`; a VIP status with the PROXY protocol on every port: the upgrade to v0.33.0",
		sources: "scaleway-cloud-controller-manager v0.36.2: `scaleway/loadbalancers.go`, `scaleway/loadbalancers_annotations.go`; Scaleway PROXY protocol documentation",
	},
}

func (scalewayCloud) facts() *cloudFacts { return &scalewayFacts }

var errScalewayPort = errors.New("not a port list")

// scalewayPortInRange is isPortInRange: whether a v1/v2 PROXY annotation turns the protocol
// on for the Service port p.
func scalewayPortInRange(r string, p int32) (bool, error) {
	if b, err := strconv.ParseBool(r); err == nil && r != "1" && r != "0" {
		return b, nil
	}
	if r == "*" {
		return true, nil
	}
	if r == "" {
		return false, nil
	}
	for _, port := range strings.Split(strings.ReplaceAll(r, " ", ""), ",") {
		n, err := strconv.ParseInt(port, 0, 64)
		if err != nil || n < 1 || n > 65535 {
			return false, errScalewayPort
		}
		if int64(p) == n {
			return true, nil
		}
	}
	return false, nil
}

// scalewaySendProxyV2 is getSendProxyV2 for the Service port p.
func scalewaySendProxyV2(svc *corev1.Service, p int32) (bool, error) {
	raw, ok := svc.Annotations[annScalewaySendProxyV2]
	if !ok {
		return false, nil
	}
	if b, err := strconv.ParseBool(raw); err == nil {
		return b, nil
	}
	for _, port := range strings.Split(strings.ReplaceAll(raw, " ", ""), ",") {
		n, err := strconv.ParseInt(port, 0, 64)
		if err != nil {
			return false, errScalewayPort
		}
		if int64(p) == n {
			return true, nil
		}
	}
	return false, nil
}

// scalewayProxy is getProxyProtocol for one Service port: "none", "v1" or "v2", or rejected
// with the key at fault.
func scalewayProxy(svc *corev1.Service, p int32) (string, taken, string) {
	v1, err := scalewayPortInRange(svc.Annotations[annScalewayProxyV1], p)
	if err != nil {
		return "", valueRejected, annScalewayProxyV1
	}
	v2, err := scalewayPortInRange(svc.Annotations[annScalewayProxyV2], p)
	if err != nil {
		return "", valueRejected, annScalewayProxyV2
	}
	switch {
	case v1 && v2:
		return "", valueRejected, annScalewayProxyV2
	case v1:
		return "v1", valueTaken, annScalewayProxyV1
	case v2:
		return "v2", valueTaken, annScalewayProxyV2
	}
	send, err := scalewaySendProxyV2(svc, p)
	if err != nil {
		return "", valueRejected, annScalewaySendProxyV2
	}
	if send {
		return "v2", valueTaken, annScalewaySendProxyV2
	}
	return "none", valueTaken, ""
}

// scalewayIPMode reads ip-mode as written; only Proxy and VIP survive the API server.
func scalewayIPMode(svc *corev1.Service) (corev1.LoadBalancerIPMode, taken) {
	raw, set := svc.Annotations[annScalewayIPMode]
	switch {
	case !set:
		return "", valueAbsent
	case raw == string(corev1.LoadBalancerIPModeProxy) || raw == string(corev1.LoadBalancerIPModeVIP):
		return corev1.LoadBalancerIPMode(raw), valueTaken
	}
	return "", valueRejected
}

func (scalewayCloud) read(v *cloudView) {
	svc := v.svc
	every, version := len(svc.Spec.Ports) > 0, ""
	var on []string
	for _, p := range svc.Spec.Ports {
		pp, st, key := scalewayProxy(svc, p.Port)
		if st == valueRejected {
			v.valueNote(st, key, "the Scaleway controller takes a Go bool, \"*\" or a list of ports (send-proxy-v2: no \"*\", no empty value), and a port in one of v1 and v2 only", srcScalewayPorts+"; "+srcScalewaySendV2)
			return
		}
		if pp == "none" {
			every = false
			continue
		}
		if version != "" && version != pp {
			version = "mixed"
		} else {
			version = pp
		}
		on = append(on, strconv.Itoa(int(p.Port))+" ("+pp+")")
	}
	if len(on) > 0 {
		if version == "mixed" {
			version = ""
		}
		v.expects(version, ruleCCMProxyProtocol.Because("Scaleway: the PROXY protocol on port "+strings.Join(on, ", ")+" ["+srcScalewayPorts+"]"))
	}
	mode, mst := scalewayIPMode(svc)
	if mst == valueRejected {
		v.note(ruleValueRejected.Because("Service " + svc.Namespace + "/" + svc.Name + ": " + annScalewayIPMode + ": " + quote(svc.Annotations[annScalewayIPMode]) +
			": the Scaleway controller writes it into the status as it is, and the API server refuses any ipMode but Proxy and VIP: the status stays as it was [" + srcScalewayIPMode + "]"))
	}
	v.rowDefault()
	if v.detected && every && mst == valueAbsent {
		v.rd.ccmProxy, v.rd.ccmSince = true, v.f.ipMode.since
	}
	_ = mode
}

// userIPMode: the controller publishes ip-mode as written, else Proxy when every port has the
// PROXY protocol (and VIP otherwise, which is no one's explicit choice).
func (scalewayCloud) userIPMode(v *cloudView) (corev1.LoadBalancerIPMode, core.Reason, bool) {
	if mode, st := scalewayIPMode(v.svc); st == valueTaken {
		return mode, v.userSet(annScalewayIPMode, mode, srcScalewayIPMode), true
	}
	if _, set := v.svc.Annotations[annScalewayIPMode]; set || len(v.svc.Spec.Ports) == 0 {
		return "", core.Reason{}, false
	}
	key := ""
	for _, p := range v.svc.Spec.Ports {
		pp, st, k := scalewayProxy(v.svc, p.Port)
		if st != valueTaken || pp == "none" {
			return "", core.Reason{}, false
		}
		key = k
	}
	return corev1.LoadBalancerIPModeProxy, v.userSet(key, corev1.LoadBalancerIPModeProxy, srcScalewayIPMode), true
}
