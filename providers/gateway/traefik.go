package gateway

import (
	"fmt"
	"net"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

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
//     the address from the header, REQUIRE alone refuses a connection without one). With
//     neither, Traefik cannot build the entry point: ip.NewChecker refuses an empty list, "no
//     trusted IPs provided" (pkg/ip/checker.go, v3.7.9), and Traefik does not start
//     (NewTCPEntryPoints returns the error to cmd/traefik/traefik.go setupServer), so no PROXY
//     setting is read from it;
//   - --entrypoints.<name>.forwardedheaders.trustedips / .insecure: Traefik keeps the
//     X-Forwarded-* headers of a request from those sources (from any, insecure) and deletes them
//     from any other before it appends the connection's source to X-Forwarded-For
//     (pkg/middlewares/forwardedheaders/forwarded_header.go XForwarded.ServeHTTP, built per entry
//     point in pkg/server/server_entrypoint_tcp.go newHTTPServer; field names
//     pkg/config/static/entrypoints.go ForwardedHeaders; all at v3.7.9): what follows it takes
//     the client address from X-Forwarded-For set by the hops in front, Traefik's equivalent of
//     Envoy Gateway's clientIPDetection.xForwardedFor.trustedCIDRs. Both trusted lists are IPs or
//     CIDRs, comma-separated (docs/content/reference/install-configuration/entrypoints.md); one
//     that is neither fails ip.NewChecker, and Traefik does not start either.
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
	// forwardedTrusted and forwardedInsecure are forwardedHeaders.trustedIPs and .insecure.
	forwardedTrusted  string
	forwardedInsecure bool
	// written are the arguments as the Pod spells them, by lowercased key, for messages.
	written map[string]string
}

// traefikArgs parses "--key=value" and bare "--key" arguments; Traefik's flag names are
// case-insensitive, so keys are lowercased. written maps each lowercased key to the argument's
// key as written.
func traefikArgs(c corev1.Container) (args, written map[string]string) {
	args, written = map[string]string{}, map[string]string{}
	for _, a := range append(append([]string(nil), c.Command...), c.Args...) {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			v = "true"
		}
		args[strings.ToLower(k)] = v
		written[strings.ToLower(k)] = k
	}
	return args, written
}

// traefikConfigs reads the static configuration of every Traefik Pod that runs the Gateway
// API provider, in namespace/name order.
func traefikConfigs(c *core.Cluster) []*traefikConfig {
	var out []*traefikConfig
	for _, p := range c.Pods() {
		for _, ctr := range p.Spec.Containers {
			args, written := traefikArgs(ctr)
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
					ep = &traefikEntryPoint{name: name, written: map[string]string{}}
					tc.entryPoints[name] = ep
				}
				ep.written[field] = written[k]
				switch {
				case field == "address":
					ep.address, _, _ = strings.Cut(v, "/")
				case field == "proxyprotocol" && v != "false":
					ep.proxyProtocol = true
				case field == "proxyprotocol.trustedips":
					ep.proxyProtocol, ep.trusted = true, v
				case field == "proxyprotocol.insecure" && v != "false":
					ep.proxyProtocol, ep.insecure = true, true
				case field == "forwardedheaders.trustedips":
					ep.forwardedTrusted = v
				case field == "forwardedheaders.insecure" && v != "false":
					ep.forwardedInsecure = true
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

// traefikServing pairs each of the Gateway's listeners with the entry points that serve it (the
// address ends in the listener's port), in listener then entry point name order.
func traefikServing(v *view, tc *traefikConfig) []traefikServed {
	var out []traefikServed
	for _, l := range v.gw.Spec.Listeners {
		suffix := fmt.Sprintf(":%d", l.Port)
		for _, name := range sortedKeys(tc.entryPoints) {
			if ep := tc.entryPoints[name]; strings.HasSuffix(ep.address, suffix) {
				out = append(out, traefikServed{listener: l, ep: ep})
			}
		}
	}
	return out
}

type traefikServed struct {
	listener gwv1.Listener
	ep       *traefikEntryPoint
}

// checkTrusted reads a trusted list (field: "proxyprotocol.trustedips" or
// "forwardedheaders.trustedips") as Traefik's ip.NewChecker does: each comma-separated entry an
// IP or a CIDR. One that is neither is bad input naming the Pod and the argument.
func (ep *traefikEntryPoint) checkTrusted(v *view, tc *traefikConfig, field, list string) error {
	for _, entry := range strings.Split(list, ",") {
		entry = strings.TrimSpace(entry)
		if net.ParseIP(entry) != nil {
			continue
		}
		if _, _, err := net.ParseCIDR(entry); err != nil {
			return inputError(v.gw, "Pod", tc.pod.Namespace, tc.pod.Name, fieldpath.Invalid(fieldpath.NewPath("argument "+ep.written[field]), entry,
				"neither an IP address nor a CIDR: Traefik cannot build the entry point and does not start (pkg/ip/checker.go NewChecker, v3.7.9)"))
		}
	}
	return nil
}

// traefikNeeds: the entry points that serve the Gateway's listeners read a PROXY header when
// one comes but do not require it. An entry point with proxyProtocol but neither trustedIPs nor
// insecure cannot be built (Traefik does not start), so it says nothing here.
func traefikNeeds(v *view, tc *traefikConfig) (need, bool, error) {
	if tc == nil {
		return need{}, false, nil
	}
	var with []string
	for _, s := range traefikServing(v, tc) {
		ep := s.ep
		if !ep.proxyProtocol || (!ep.insecure && ep.trusted == "") {
			continue
		}
		how := "insecure"
		if !ep.insecure {
			if err := ep.checkTrusted(v, tc, "proxyprotocol.trustedips", ep.trusted); err != nil {
				return need{}, false, err
			}
			how = "trustedIPs " + ep.trusted
		}
		with = append(with, fmt.Sprintf("%s (%s, listener %s, proxyProtocol %s)", ep.name, ep.address, s.listener.Name, how))
	}
	if len(with) == 0 {
		return need{}, false, nil
	}
	return need{fact: core.Unknown, msg: fmt.Sprintf("Traefik's entry point %s reads a PROXY protocol header when one comes and serves connections without one (Pod %s/%s).",
		strings.Join(with, ", "), tc.pod.Namespace, tc.pod.Name)}, true, nil
}

// traefikClientAddress: the entry points that serve the Gateway's listeners and trust
// X-Forwarded-* headers (forwardedHeaders.trustedIPs or .insecure) pass on the client address
// the hops in front wrote there.
func traefikClientAddress(v *view, tc *traefikConfig) (clientAddress, bool, error) {
	if tc == nil {
		return clientAddress{}, false, nil
	}
	var with []string
	for _, s := range traefikServing(v, tc) {
		ep := s.ep
		var how string
		switch {
		case ep.forwardedInsecure:
			how = "forwardedHeaders.insecure: from every source"
		case ep.forwardedTrusted != "":
			if err := ep.checkTrusted(v, tc, "forwardedheaders.trustedips", ep.forwardedTrusted); err != nil {
				return clientAddress{}, false, err
			}
			how = "forwardedHeaders.trustedIPs: from " + ep.forwardedTrusted
		default:
			continue
		}
		with = append(with, fmt.Sprintf("%s (%s, listener %s, %s)", ep.name, ep.address, s.listener.Name, how))
	}
	if len(with) == 0 {
		return clientAddress{}, false, nil
	}
	return clientAddress{why: fmt.Sprintf("Traefik's entry point %s keeps the X-Forwarded-For of requests from those sources and deletes it from any other (Pod %s/%s): the client address it passes on is the one the hops in front wrote there (Traefik pkg/middlewares/forwardedheaders/forwarded_header.go, v3.7.9).",
		strings.Join(with, ", "), tc.pod.Namespace, tc.pod.Name)}, true, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
