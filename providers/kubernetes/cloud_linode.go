package kubernetes

import (
	"encoding/json"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// Linode / Akamai: linode/linode-cloud-controller-manager, read at v0.9.8, makes a NodeBalancer
// for every LoadBalancer Service.
type linodeCloud struct{ cloudBase }

const (
	annLinodePortPrefix      = "service.beta.kubernetes.io/linode-loadbalancer-port-"
	annLinodeDefaultProxy    = "service.beta.kubernetes.io/linode-loadbalancer-default-proxy-protocol"
	annLinodeProxyDeprecated = "service.beta.kubernetes.io/linode-loadbalancer-proxy-protocol"
	annLinodeDefaultProtocol = "service.beta.kubernetes.io/linode-loadbalancer-default-protocol"
	annLinodeHostnameOnly    = "service.beta.kubernetes.io/linode-loadbalancer-hostname-only-ingress"
	envLinodeHostnameOnly    = "LINODE_HOSTNAME_ONLY_INGRESS"
)

// Upstream sources, at the tag read.
const (
	linodeRepo        = "linode/linode-cloud-controller-manager "
	srcLinodeProxy    = linodeRepo + "cloud/linode/loadbalancers_helpers.go, loadbalancers.go getPortConfigAnnotation@v0.9.8 (per Service port: the proxy-protocol of linode-loadbalancer-port-<port>'s JSON, else the first present of default-proxy-protocol and the deprecated proxy-protocol, else none; lower-cased; none, v1 or v2, anything else, or the PROXY protocol on a UDP port, fails the Service)"
	srcLinodeProtocol = linodeRepo + "cloud/linode/loadbalancers_helpers.go@v0.9.8 (per port: the JSON's protocol, else default-protocol, else the port's; lower-cased; tcp, udp, http or https, else an error)"
	srcLinodeHostname = linodeRepo + "cloud/linode/loadbalancers.go makeLoadBalancerStatus, getServiceBoolAnnotation@v0.9.8 (hostname and IP in one entry, no ipMode; hostname-only-ingress read with strconv.ParseBool, a set value that does not parse is false; absent, the controller's LINODE_HOSTNAME_ONLY_INGRESS, since v0.3.19)"
	srcLinodeKind     = "Akamai techdocs \"Using Proxy Protocol with NodeBalancers\" (a NodeBalancer does not pass the client's address: the backend sees the NodeBalancer unless the PROXY protocol is on; X-Forwarded-For on HTTP); " + linodeRepo + "docs/configuration/loadbalancer.md (the PROXY protocol \"for client IP preservation\")"
)

var linodeFacts = cloudFacts{
	name:               "linode",
	title:              "Linode / Akamai",
	providerIDPrefixes: []string{"linode://"},
	annotationPrefixes: []string{"service.beta.kubernetes.io/linode-loadbalancer-"},
	sourceNAT:          core.Unknown, // a proxy for TCP; UDP not stated: read
	hostnameAnnotation: annLinodeHostnameOnly, hostnameValue: "true",
	hostnameOn: func(v string) bool { b, _ := goBool(v); return b },
	ipMode:     ccmIPMode{read: true, source: srcLinodeHostname},
	settings:   []controllerSetting{{name: envLinodeHostnameOnly, env: true, unset: "false"}},
	source:     srcLinodeKind,
	doc: cloudDoc{
		lb:      "a NodeBalancer, a proxy: the backend sees its address (TCP, HTTP, HTTPS); UDP: not stated",
		backend: "PROXY v1/v2 per Service port: `linode-loadbalancer-port-<port>`'s JSON `proxy-protocol`, else `default-proxy-protocol` (the deprecated `proxy-protocol` after it), case-insensitive `none`, `v1`, `v2` (anything else, or PROXY on UDP: rejected); plain HTTP behind an `https` port",
		status:  "the NodeBalancer's hostname and IP in one entry (intercepted), no ipMode; `hostname-only-ingress` (strconv.ParseBool; a set value that does not parse is false) or the controller's `LINODE_HOSTNAME_ONLY_INGRESS` drop the IP",
		remedy:  "`linode-loadbalancer-hostname-only-ingress: \"true\"` (needs no DNS name)",
		sources: "linode-cloud-controller-manager v0.9.8: `cloud/linode/loadbalancers.go`, `loadbalancers_helpers.go`, `cloud/annotations/annotations.go`; Akamai NodeBalancer documentation",
	},
}

func (linodeCloud) facts() *cloudFacts { return &linodeFacts }

// linodePortConfig is the JSON of linode-loadbalancer-port-<port> (portConfigAnnotation).
type linodePortConfig struct {
	Protocol      string `json:"protocol"`
	ProxyProtocol string `json:"proxy-protocol"`
}

// linodePort reads one Service port's protocol and PROXY protocol as the controller does.
func linodePort(svc *corev1.Service, p corev1.ServicePort) (proto, pp string, st taken, key string) {
	var cfg linodePortConfig
	key = annLinodePortPrefix + strconv.Itoa(int(p.Port))
	if raw, ok := svc.Annotations[key]; ok {
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
			return "", "", valueRejected, key
		}
	}
	proto = cfg.Protocol
	if proto == "" {
		proto = svc.Annotations[annLinodeDefaultProtocol]
	}
	if proto == "" {
		proto = string(p.Protocol)
	}
	proto = strings.ToLower(proto)
	if proto != "tcp" && proto != "udp" && proto != "http" && proto != "https" {
		return "", "", valueRejected, annLinodeDefaultProtocol
	}
	pp, ppKey := cfg.ProxyProtocol, key
	if pp == "" {
		pp = "none"
		for _, k := range [...]string{annLinodeDefaultProxy, annLinodeProxyDeprecated} {
			if v, ok := svc.Annotations[k]; ok {
				pp, ppKey = v, k
				break
			}
		}
	}
	pp = strings.ToLower(pp)
	switch {
	case pp != "none" && pp != "v1" && pp != "v2":
		return "", "", valueRejected, ppKey
	case proto == "udp" && pp != "none":
		return "", "", valueRejected, ppKey
	}
	return proto, pp, valueTaken, ppKey
}

func (linodeCloud) read(v *cloudView) {
	svc := v.svc
	var proxied, tls []string
	version, udp := "", false
	for _, p := range svc.Spec.Ports {
		proto, pp, st, key := linodePort(svc, p)
		if st == valueRejected {
			v.valueNote(st, key, "the Linode controller takes the protocols tcp, udp, http, https and the PROXY protocols none, v1, v2 (any case; none on UDP), from valid JSON per port", srcLinodeProxy)
			return
		}
		udp = udp || proto == "udp"
		if pp != "none" {
			if version != "" && version != pp {
				version = "mixed"
			} else {
				version = pp
			}
			proxied = append(proxied, strconv.Itoa(int(p.Port))+" ("+pp+")")
		}
		if proto == "https" {
			tls = append(tls, strconv.Itoa(int(p.Port)))
		}
	}
	if len(proxied) > 0 {
		if version == "mixed" {
			version = ""
		}
		v.expects(version, ruleCCMProxyProtocol.Because("Linode: the PROXY protocol on port "+strings.Join(proxied, ", ")+" ["+srcLinodeProxy+"]"))
	}
	if len(tls) > 0 {
		v.needsTLS(ruleCloudL7.Because("Linode: the NodeBalancer ends TLS on port " + strings.Join(tls, ", ") + "; the backends speak HTTP [" + srcLinodeProtocol + "]"))
	}
	if !v.detected {
		return
	}
	if udp {
		v.unseenSetting("Linode: what a NodeBalancer does to a UDP client's address no source read here says; declare loopguard.io/lb-source-nat [" + srcLinodeKind + "]")
		return
	}
	v.byDefault(core.Yes, core.Unknown, ruleCloudDefault.Because("Linode: the NodeBalancer is a proxy: the backend sees its address"+v.on()+" ["+srcLinodeKind+"]"))
}

// fixes: hostname-only-ingress, unless the controller publishes the hostname alone already
// (the annotation, or its LINODE_HOSTNAME_ONLY_INGRESS for a Service without it).
func (linodeCloud) fixes(v *cloudView) []cloudFix {
	if _, set := v.svc.Annotations[annLinodeHostnameOnly]; !set {
		if s := v.setting(envLinodeHostnameOnly); s.found && !s.fromRef {
			if b, _ := goBool(s.value); b {
				v.e.Notes = append(v.e.Notes, ruleCCMLagging.Because("linode: "+s.from+" sets "+envLinodeHostnameOnly+"="+s.value+": the controller publishes the hostname alone for this Service; this status with an IP predates its reconcile ["+srcLinodeHostname+"]"))
				return nil
			}
		}
	}
	return standardFixes(v)
}
