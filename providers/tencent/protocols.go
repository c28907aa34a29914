package tencent

import (
	"encoding/json"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loopguard/loopguard/core/dialect"
)

// AnnotationSpecifyProtocol sets the CLB listener protocol of Service ports, a JSON object from
// port to {"protocol": [...], "tls": "<Secret>"}: TCP_SSL and HTTPS listeners end TLS at the
// CLB with the certificate the Secret names, so the backend port speaks plain text (Tencent
// doc "Service 扩展协议", TKE console guide, Service management).
const AnnotationSpecifyProtocol = "service.cloud.tencent.com/specify-protocol"

// specifiedPort is one entry of AnnotationSpecifyProtocol.
type specifiedPort struct {
	Protocol []string `json:"protocol"`
	TLS      string   `json:"tls"`
}

// tlsAtCLB reads AnnotationSpecifyProtocol and reports the Service ports whose listener ends
// TLS at the CLB (TCP_SSL, HTTPS). Ports the Service does not have are ignored, as TKE does.
func tlsAtCLB(svc *corev1.Service) ([]string, *field.Error) {
	v, ok := svc.Annotations[AnnotationSpecifyProtocol]
	if !ok {
		return nil, nil
	}
	var spec map[string]specifiedPort
	if err := json.Unmarshal([]byte(v), &spec); err != nil {
		return nil, field.Invalid(dialect.AnnotationPath(AnnotationSpecifyProtocol), v,
			`not a JSON object from port to {"protocol": [...], "tls": "<Secret>"}: `+err.Error())
	}
	var out []string
	for _, p := range svc.Spec.Ports {
		port := strconv.Itoa(int(p.Port))
		sp, ok := spec[port]
		if !ok {
			continue
		}
		for _, proto := range sp.Protocol {
			if u := strings.ToUpper(proto); u == "TCP_SSL" || u == "HTTPS" {
				out = append(out, port+" ("+u+")")
				break
			}
		}
	}
	return out, nil
}

// tlsListenersIn reports the Service ports that a TkeServiceConfig configures as TCP_SSL
// listeners: the listener key names the CLB listener's protocol, so the CLB ends TLS there.
// (Whether a TCP_SSL or QUIC listener also sends the PROXY protocol is not readable from a
// TkeServiceConfig or from DescribeListeners: UNCONFIRMED, declare it with
// loopguard.io/backend-expects.)
func tlsListenersIn(cfg *ServiceConfig, svc *corev1.Service) []string {
	if cfg == nil {
		return nil
	}
	var out []string
	for _, l := range cfg.L4Listeners {
		if l.Protocol != "TCP_SSL" {
			continue
		}
		for _, p := range svc.Spec.Ports {
			if p.Port == l.Port {
				out = append(out, strconv.Itoa(int(l.Port))+" (TCP_SSL)")
				break
			}
		}
	}
	return out
}
