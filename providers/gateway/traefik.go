package gateway

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/loopguard/loopguard/core"
)

// Traefik generates no Service for a Gateway: it serves every Gateway of its class from its own
// entry points, published by the Service its Helm chart made. Which Service that is, and what
// the entry points expect, is Traefik's static configuration, which the chart passes as
// container arguments (traefik/traefik-helm-chart traefik/templates/_podtemplate.tpl):
//   - --providers.kubernetesgateway.statusaddress.service.name / .namespace: the Service whose
//     status.loadBalancer Traefik copies to every Gateway's status.addresses
//     (pkg/provider/kubernetes/gateway/kubernetes.go, StatusAddress, gatewayAddresses);
//   - --entrypoints.<name>.address: a Gateway listener is served by the entry point whose address
//     ends in ":<listener port>" (same file, entryPointName; pkg/config/static/entrypoints.go,
//     GetAddress drops a "/tcp" suffix);
//   - --entrypoints.<name>.proxyprotocol.trustedips / .insecure: a PROXY protocol header is read
//     when one comes (pkg/server/server_entrypoint_tcp.go, buildProxyProtocolListener: policy USE
//     for trusted sources, IGNORE otherwise; github.com/pires/go-proxyproto policy.go: USE takes
//     the address from the header, REQUIRE alone refuses a connection without one).
const (
	traefikProviderFlag   = "--providers.kubernetesgateway"
	traefikStatusSvcName  = "--providers.kubernetesgateway.statusaddress.service.name"
	traefikStatusSvcNS    = "--providers.kubernetesgateway.statusaddress.service.namespace"
	traefikEntryPointsArg = "--entrypoints."
)

// traefikConfig is what loopguard reads of one Traefik's static configuration.
type traefikConfig struct {
	pod *corev1.Pod
	// statusNS, statusName name the Service Traefik publishes Gateways' addresses from.
	statusNS, statusName string
	entryPoints          map[string]*traefikEntryPoint
}

type traefikEntryPoint struct {
	name, address string
	proxyProtocol bool
	trusted       string
	insecure      bool
}

// traefikArgs parses "--key=value" and bare "--key" arguments; Traefik's flag names are
// case-insensitive, so keys are lowercased.
func traefikArgs(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, a := range append(append([]string(nil), c.Command...), c.Args...) {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			v = "true"
		}
		out[strings.ToLower(k)] = v
	}
	return out
}

// traefikConfigs reads the static configuration of every Traefik Pod that runs the Gateway
// API provider, in namespace/name order.
func traefikConfigs(c *core.Cluster) []*traefikConfig {
	var out []*traefikConfig
	for _, p := range c.Pods() {
		for _, ctr := range p.Spec.Containers {
			args := traefikArgs(ctr)
			enabled := false
			for k := range args {
				if k == traefikProviderFlag || strings.HasPrefix(k, traefikProviderFlag+".") {
					enabled = true
				}
			}
			if !enabled {
				continue
			}
			tc := &traefikConfig{pod: p, statusName: args[traefikStatusSvcName], statusNS: args[traefikStatusSvcNS], entryPoints: map[string]*traefikEntryPoint{}}
			for k, v := range args {
				rest, ok := strings.CutPrefix(k, traefikEntryPointsArg)
				if !ok {
					continue
				}
				name, field, ok := strings.Cut(rest, ".")
				if !ok {
					continue
				}
				ep := tc.entryPoints[name]
				if ep == nil {
					ep = &traefikEntryPoint{name: name}
					tc.entryPoints[name] = ep
				}
				switch {
				case field == "address":
					ep.address, _, _ = strings.Cut(v, "/")
				case field == "proxyprotocol" && v != "false":
					ep.proxyProtocol = true
				case field == "proxyprotocol.trustedips":
					ep.proxyProtocol, ep.trusted = true, v
				case field == "proxyprotocol.insecure" && v != "false":
					ep.proxyProtocol, ep.insecure = true, true
				}
			}
			out = append(out, tc)
			break
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].pod, out[j].pod
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	return out
}

// traefikService finds the Service that publishes Traefik's entry points for a Gateway: the one
// its statusaddress arguments name, else the LoadBalancer Service whose address the Gateway's
// status carries (Traefik copied it from there), else a LoadBalancer Service selecting the
// Traefik Pod.
func traefikService(v *view, c *core.Cluster) (*corev1.Service, *traefikConfig, string) {
	configs := c.Memo(traefikConfigsKey{}, func() any { return traefikConfigs(c) }).([]*traefikConfig)
	for _, tc := range configs {
		if tc.statusName != "" && tc.statusNS != "" {
			if s := c.Service(tc.statusNS, tc.statusName); s != nil {
				return s, tc, fmt.Sprintf("Traefik's --providers.kubernetesgateway.statusaddress.service on Pod %s/%s", tc.pod.Namespace, tc.pod.Name)
			}
		}
	}
	var first *traefikConfig
	if len(configs) > 0 {
		first = configs[0]
	}
	addrs := map[string]bool{}
	for _, a := range v.gw.Status.Addresses {
		addrs[a.Value] = true
	}
	if len(addrs) > 0 {
		for _, s := range c.ServiceList() {
			if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
				continue
			}
			for _, in := range s.Status.LoadBalancer.Ingress {
				if (in.IP != "" && addrs[in.IP]) || (in.Hostname != "" && addrs[in.Hostname]) {
					return s, first, fmt.Sprintf("its address %s is the Gateway's status.addresses, which Traefik copies from the Service it publishes", firstNonEmpty(in.IP, in.Hostname))
				}
			}
		}
	}
	for _, tc := range configs {
		for _, s := range c.ServiceList() {
			if s.Namespace != tc.pod.Namespace || s.Spec.Type != corev1.ServiceTypeLoadBalancer || len(s.Spec.Selector) == 0 {
				continue
			}
			if labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(tc.pod.Labels)) {
				return s, tc, fmt.Sprintf("it selects Traefik's Pod %s/%s", tc.pod.Namespace, tc.pod.Name)
			}
		}
	}
	return nil, first, ""
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// traefikNeeds: the entry points that serve the Gateway's listeners read a PROXY header when
// one comes but do not require it.
func traefikNeeds(v *view, tc *traefikConfig) (need, bool) {
	if tc == nil {
		return need{}, false
	}
	var with []string
	for _, l := range v.gw.Spec.Listeners {
		suffix := fmt.Sprintf(":%d", l.Port)
		for _, name := range sortedKeys(tc.entryPoints) {
			ep := tc.entryPoints[name]
			if ep.proxyProtocol && strings.HasSuffix(ep.address, suffix) {
				how := "insecure"
				if !ep.insecure {
					how = "trustedIPs " + ep.trusted
				}
				with = append(with, fmt.Sprintf("%s (%s, listener %s, proxyProtocol %s)", ep.name, ep.address, l.Name, how))
			}
		}
	}
	if len(with) == 0 {
		return need{}, false
	}
	return need{fact: core.Unknown, msg: fmt.Sprintf("Traefik's entry point %s reads a PROXY protocol header when one comes and serves connections without one (Pod %s/%s).",
		strings.Join(with, ", "), tc.pod.Namespace, tc.pod.Name)}, true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
