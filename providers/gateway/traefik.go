package gateway

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/loopguard/loopguard/core"
)

// Traefik (github.com/traefik/traefik), read at v3.7.9, with its flag parser
// github.com/traefik/paerser v0.2.2 (its go.mod's). Traefik generates no Service for a Gateway:
// it serves every Gateway of its class from its own entry points, published by the Service its
// Helm chart made. Which Service that is, and what the entry points expect, is Traefik's static
// configuration, which the chart passes as container arguments
// (traefik/traefik-helm-chart traefik/templates/_podtemplate.tpl):
//   - --providers.kubernetesgateway: the Gateway API provider (a pointer with label:"allowEmpty",
//     pkg/config/static/static_config.go Providers.KubernetesGateway);
//   - --providers.kubernetesgateway.statusaddress.service.name / .namespace: the Service whose
//     status.loadBalancer Traefik copies to every Gateway's status.addresses
//     (pkg/provider/kubernetes/gateway/kubernetes.go, StatusAddress, gatewayAddresses);
//   - --entrypoints.<name>.address: a Gateway listener is served by an entry point whose address
//     ends in ":<listener port>", an HTTP listener by one without http.tls (same file,
//     entryPointName; static_config.go passes GetAddress, which drops a "/tcp" suffix, and
//     HasHTTPTLSConf). With no entry point at all Traefik makes "http" on ":80"
//     (SetEffectiveConfiguration);
//   - --entrypoints.<name>.proxyprotocol (allowEmpty), .trustedips / .insecure: a PROXY
//     protocol header is read when one comes (pkg/server/server_entrypoint_tcp.go,
//     buildProxyProtocolListener: policy USE for trusted sources, IGNORE otherwise;
//     github.com/pires/go-proxyproto policy.go: USE takes the address from the header, REQUIRE
//     alone refuses a connection without one). With neither, Traefik cannot build the entry
//     point: ip.NewChecker refuses an empty list, "no trusted IPs provided" (pkg/ip/checker.go),
//     and Traefik does not start (NewTCPEntryPoints returns the error to cmd/traefik/traefik.go
//     setupServer);
//   - --entrypoints.<name>.forwardedheaders.trustedips / .insecure: Traefik keeps the
//     X-Forwarded-* headers of a request from those sources (from any, insecure) and deletes them
//     from any other before it appends the connection's source to X-Forwarded-For
//     (pkg/middlewares/forwardedheaders/forwarded_header.go XForwarded.ServeHTTP, built per entry
//     point in pkg/server/server_entrypoint_tcp.go newHTTPServer; field names
//     pkg/config/static/entrypoints.go ForwardedHeaders): what follows it takes the client
//     address from X-Forwarded-For set by the hops in front. Both trusted lists are IPs or CIDRs;
//     one that is neither fails ip.NewChecker, and Traefik does not start either.
//
// Traefik loads its static configuration from a file (--configFile, or traefik.toml/.yaml in
// its default places) when it finds one, else from its arguments, else from TRAEFIK_*
// environment variables (cmd/traefik/traefik.go loaders, pkg/cli/loader_*.go): loopguard reads
// the arguments, the chart's way.

// Traefik is Traefik.
const Traefik Implementation = "traefik"

const (
	traefikController = "traefik.io/gateway-controller"
	// Flag keys, lowercased: paerser matches them case-insensitively (flag/flagparser.go
	// setValue, parser/nodes_metadata.go).
	traefikProvider      = "providers.kubernetesgateway"
	traefikStatusSvcName = "providers.kubernetesgateway.statusaddress.service.name"
	traefikStatusSvcNS   = "providers.kubernetesgateway.statusaddress.service.namespace"
	traefikEntryPoints   = "entrypoints."
)

type traefikUnit struct{ base }

func (traefikUnit) id() Implementation        { return Traefik }
func (traefikUnit) name() string              { return "Traefik" }
func (traefikUnit) controllerNames() []string { return []string{traefikController} }

func (traefikUnit) resources() []schema.GroupVersionResource { return nil }

func (traefikUnit) noService() string {
	return "Traefik serves its Gateways from its own Service, which is not among the inputs (give loopguard that Service, or Traefik's Pods, whose --providers.kubernetesgateway.statusaddress.service arguments name it)"
}

// traefikConfig is what loopguard reads of one Traefik's static configuration.
type traefikConfig struct {
	pod *corev1.Pod
	// statusNS, statusName name the Service Traefik publishes Gateways' addresses from.
	statusNS, statusName string
	entryPoints          map[string]*traefikEntryPoint
	// err is an argument Traefik cannot decode: it does not start.
	err error
}

type traefikEntryPoint struct {
	name, address string
	// httpTLS: http.tls is set, so the entry point serves no HTTP listener.
	httpTLS       bool
	proxyProtocol bool
	trusted       []string
	insecure      bool
	// forwardedTrusted and forwardedInsecure are forwardedHeaders.trustedIPs and .insecure.
	forwardedTrusted  []string
	forwardedInsecure bool
	// written are the arguments' keys as the Pod spells them, by the field under the entry
	// point (lowercased), for messages.
	written map[string]string
}

// traefikFlag is one key the Gateway layer reads, and how paerser treats it.
type traefikKind int

const (
	traefikString traefikKind = iota
	traefikBool
	traefikSlice
	// traefikPointer is a pointer to a struct: a bare flag sets it "true".
	traefikPointer
)

// traefikKindOf is the type paerser infers for a (lowercased) key from Traefik's configuration
// struct (flag/flagtype.go getFlagTypes): ok is false for a key the Gateway layer does not read.
func traefikKindOf(key string) (traefikKind, bool) {
	switch key {
	case traefikProvider:
		return traefikPointer, true
	case traefikStatusSvcName, traefikStatusSvcNS, traefikProvider + ".statusaddress.ip", traefikProvider + ".statusaddress.hostname":
		return traefikString, true
	}
	rest, ok := strings.CutPrefix(key, traefikEntryPoints)
	if !ok {
		return 0, false
	}
	_, field, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, false
	}
	switch field {
	case "address":
		return traefikString, true
	case "proxyprotocol", "forwardedheaders", "http.tls":
		return traefikPointer, true
	case "proxyprotocol.insecure", "forwardedheaders.insecure":
		return traefikBool, true
	case "proxyprotocol.trustedips", "forwardedheaders.trustedips":
		return traefikSlice, true
	}
	return 0, false
}

// traefikArgs are the arguments Traefik's process gets from a container: the command's after
// the program, then args; a leading "traefik" (the image's entrypoint.sh execs traefik with
// the rest) is the program too.
func traefikArgs(c corev1.Container) []string {
	var out []string
	if len(c.Command) > 0 {
		out = append(out, c.Command[1:]...)
	}
	out = append(out, c.Args...)
	if len(out) > 0 && out[0] == "traefik" {
		out = out[1:]
	}
	return out
}

// traefikParse reads flag arguments as paerser's flag.Parse does (flag/flagparser.go
// parseOne, setValue, v0.2.2): "-" or "--" then the key; "--" alone ends the flags, and so does
// the first argument that is not a flag; "key=value", or, without "=", "true" for a bool or a
// pointer and else the next argument as the value. Keys are case-insensitive and keep the first
// spelling; a repeated slice key appends its value after a comma, any other replaces it.
// Values are returned by lowercased key, with the key as first written. A key paerser would
// type from Traefik's whole configuration but loopguard does not read takes the next argument
// as its value unless that looks like a flag (it is then taken as a bool).
func traefikParse(args []string) (values, written map[string]string) {
	values, written = map[string]string{}, map[string]string{}
	for len(args) > 0 {
		s := args[0]
		if len(s) < 2 || s[0] != '-' {
			break
		}
		name := strings.TrimPrefix(s[1:], "-")
		if s == "--" {
			break
		}
		args = args[1:]
		if name == "" || name[0] == '-' || name[0] == '=' {
			break // paerser: "bad flag syntax", Traefik does not start
		}
		key, value, hasValue := strings.Cut(name, "=")
		if hasValue && key == "" {
			break
		}
		lower := strings.ToLower(key)
		kind, known := traefikKindOf(lower)
		if !hasValue {
			switch {
			case known && (kind == traefikBool || kind == traefikPointer):
				value = "true"
			case !known && (len(args) == 0 || strings.HasPrefix(args[0], "-")):
				value = "true"
			case len(args) > 0:
				value, args = args[0], args[1:]
			default:
				continue // paerser: "flag needs an argument"
			}
		}
		if _, seen := written[lower]; !seen {
			written[lower] = s[:len(s)-len(name)] + key
		}
		if prev, ok := values[lower]; ok && known && kind == traefikSlice {
			value = prev + "," + value
		}
		values[lower] = value
	}
	return values, written
}

// traefikEnabled reports whether a pointer key with label:"allowEmpty" is on: given alone, or
// with its fields, it is; given a value, only a case-insensitive "true" keeps it
// (parser/nodes_metadata.go: Disabled when the value is not EqualFold "true"; any other value
// turns it off without an error).
func traefikEnabled(values map[string]string, key string) bool {
	set := false
	for k := range values {
		if k == key || strings.HasPrefix(k, key+".") {
			set = true
		}
	}
	if v, ok := values[key]; ok && v != "" && !strings.EqualFold(v, "true") {
		return false
	}
	return set
}

// traefikBoolOf reads a bool field as paerser fills it: strconv.ParseBool
// (parser/element_fill.go); a value it refuses stops Traefik ("failed to decode configuration
// from flags").
func traefikBoolOf(values map[string]string, key string) (bool, error) {
	v, ok := values[key]
	if !ok {
		return false, nil
	}
	return strconv.ParseBool(v)
}

// traefikList reads a []string field as paerser fills it: split at commas, each entry trimmed
// (parser/element_fill.go setSlice, makeSlice); an empty value is no list.
func traefikList(v string) []string {
	if v == "" {
		return nil
	}
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// traefikConfigOf reads a Traefik container's static configuration; nil when it does not run
// the Gateway API provider.
func traefikConfigOf(p *corev1.Pod, ctr corev1.Container) *traefikConfig {
	values, written := traefikParse(traefikArgs(ctr))
	if !traefikEnabled(values, traefikProvider) {
		return nil
	}
	tc := &traefikConfig{pod: p, statusName: values[traefikStatusSvcName], statusNS: values[traefikStatusSvcNS], entryPoints: map[string]*traefikEntryPoint{}}
	bad := func(key, why string) {
		if tc.err == nil {
			tc.err = fmt.Errorf("argument %s=%s: %s", written[key], values[key], why)
		}
	}
	for _, k := range sortedKeys(values) {
		rest, ok := strings.CutPrefix(k, traefikEntryPoints)
		if !ok {
			continue
		}
		name, field, ok := strings.Cut(rest, ".")
		if !ok {
			continue
		}
		ep := tc.entryPoints[name]
		if ep == nil {
			spelled := strings.TrimLeft(written[k], "-")
			ep = &traefikEntryPoint{name: spelled[len(traefikEntryPoints) : len(traefikEntryPoints)+len(name)], written: map[string]string{}}
			tc.entryPoints[name] = ep
		}
		ep.written[field] = written[k]
		if field == "address" {
			ep.address, _, _ = strings.Cut(values[k], "/")
		}
	}
	for name, ep := range tc.entryPoints {
		prefix := traefikEntryPoints + name + "."
		ep.httpTLS = traefikEnabled(values, prefix+"http.tls")
		ep.proxyProtocol = traefikEnabled(values, prefix+"proxyprotocol")
		if ep.proxyProtocol {
			var err error
			if ep.insecure, err = traefikBoolOf(values, prefix+"proxyprotocol.insecure"); err != nil {
				bad(prefix+"proxyprotocol.insecure", "not a bool (strconv.ParseBool): Traefik does not start")
			}
			ep.trusted = traefikList(values[prefix+"proxyprotocol.trustedips"])
		}
		if v, ok := values[prefix+"forwardedheaders"]; ok && v != "" {
			// Not allowEmpty: a value of its own is "a standalone element" paerser refuses
			// (parser/nodes_metadata.go).
			bad(prefix+"forwardedheaders", "forwardedHeaders cannot be a standalone element: Traefik does not start")
		}
		var err error
		if ep.forwardedInsecure, err = traefikBoolOf(values, prefix+"forwardedheaders.insecure"); err != nil {
			bad(prefix+"forwardedheaders.insecure", "not a bool (strconv.ParseBool): Traefik does not start")
		}
		ep.forwardedTrusted = traefikList(values[prefix+"forwardedheaders.trustedips"])
	}
	if len(tc.entryPoints) == 0 {
		tc.entryPoints["http"] = &traefikEntryPoint{name: "http", address: ":80", written: map[string]string{}}
	}
	return tc
}

// containerArgs: the arguments Traefik's Gateway layer reads, each key as first written with its
// value as paerser assembles it (a repeated list joined), so that traefikParse reads the same.
func (traefikUnit) containerArgs(c corev1.Container) []string {
	values, written := traefikParse(traefikArgs(c))
	if !traefikEnabled(values, traefikProvider) {
		return nil
	}
	out := []string{}
	for _, k := range sortedKeys(values) {
		if _, known := traefikKindOf(k); known {
			out = append(out, written[k]+"="+values[k])
		}
	}
	return out
}

type traefikConfigsKey struct{}

// traefikConfigs reads the static configuration of every Traefik Pod that runs the Gateway
// API provider, in namespace/name order.
func traefikConfigs(c *core.Cluster) []*traefikConfig {
	return c.Memo(traefikConfigsKey{}, func() any {
		var out []*traefikConfig
		for _, p := range c.Pods() {
			for _, ctr := range p.Spec.Containers {
				if tc := traefikConfigOf(p, ctr); tc != nil {
					out = append(out, tc)
					break
				}
			}
		}
		sort.SliceStable(out, func(i, j int) bool {
			a, b := out[i].pod, out[j].pod
			return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
		})
		return out
	}).([]*traefikConfig)
}

func traefikOf(v *view) *traefikConfig {
	tc, _ := v.cfg.(*traefikConfig)
	return tc
}

// published finds the Service that publishes Traefik's entry points for a Gateway: the one its
// statusaddress arguments name, else the LoadBalancer Service whose address the Gateway's
// status carries (Traefik copied it from there), else a LoadBalancer Service selecting the
// Traefik Pod.
func (traefikUnit) published(v *view, c *core.Cluster) (*corev1.Service, string) {
	configs := traefikConfigs(c)
	for _, tc := range configs {
		if tc.statusName != "" && tc.statusNS != "" {
			if s := c.Service(tc.statusNS, tc.statusName); s != nil {
				v.cfg = tc
				return s, fmt.Sprintf("Traefik's --providers.kubernetesgateway.statusaddress.service on Pod %s/%s", tc.pod.Namespace, tc.pod.Name)
			}
		}
	}
	if len(configs) > 0 {
		v.cfg = configs[0]
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
					return s, fmt.Sprintf("its address %s is the Gateway's status.addresses, which Traefik copies from the Service it publishes", firstNonEmpty(in.IP, in.Hostname))
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
				v.cfg = tc
				return s, fmt.Sprintf("it selects Traefik's Pod %s/%s", tc.pod.Namespace, tc.pod.Name)
			}
		}
	}
	return nil, ""
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
// address ends in the listener's port; for an HTTP listener, without http.tls), in listener then
// entry point name order. Traefik picks one of several at random (a map's order).
func traefikServing(v *view, tc *traefikConfig) []traefikServed {
	var out []traefikServed
	for _, l := range v.gw.Spec.Listeners {
		suffix := fmt.Sprintf(":%d", l.Port)
		for _, name := range sortedKeys(tc.entryPoints) {
			ep := tc.entryPoints[name]
			if strings.HasSuffix(ep.address, suffix) && !(l.Protocol == gwv1.HTTPProtocolType && ep.httpTLS) {
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
// "forwardedheaders.trustedips") as Traefik's ip.NewChecker does: each entry an IP or a CIDR.
// One that is neither is bad input naming the Pod and the argument.
func (ep *traefikEntryPoint) checkTrusted(v *view, tc *traefikConfig, field string, list []string) error {
	for _, entry := range list {
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

// configError is an argument of the Traefik Pod Traefik cannot decode, as bad input.
func (tc *traefikConfig) configError(v *view) error {
	if tc.err == nil {
		return nil
	}
	return inputError(v.gw, "Pod", tc.pod.Namespace, tc.pod.Name, fieldpath.Invalid(fieldpath.NewPath("spec", "containers", "args"), fieldpath.OmitValueType{}, tc.err.Error()))
}

// proxyNeeds: the entry points that serve the Gateway's listeners read a PROXY header when one
// comes but do not require it. An entry point with proxyProtocol but neither trustedIPs nor
// insecure cannot be built (Traefik does not start), so it says nothing here.
func (traefikUnit) proxyNeeds(v *view, _ *core.Cluster) (need, bool, error) {
	tc := traefikOf(v)
	if tc == nil {
		return need{}, false, nil
	}
	if err := tc.configError(v); err != nil {
		return need{}, false, err
	}
	var with []string
	for _, s := range traefikServing(v, tc) {
		ep := s.ep
		if !ep.proxyProtocol || (!ep.insecure && len(ep.trusted) == 0) {
			continue
		}
		how := "insecure"
		if !ep.insecure {
			if err := ep.checkTrusted(v, tc, "proxyprotocol.trustedips", ep.trusted); err != nil {
				return need{}, false, err
			}
			how = "trustedIPs " + strings.Join(ep.trusted, ",")
		}
		with = append(with, fmt.Sprintf("%s (%s, listener %s, proxyProtocol %s)", ep.name, ep.address, s.listener.Name, how))
	}
	if len(with) == 0 {
		return need{}, false, nil
	}
	return need{fact: core.Unknown, msg: fmt.Sprintf("Traefik's entry point %s reads a PROXY protocol header when one comes and serves connections without one (Pod %s/%s).",
		strings.Join(with, ", "), tc.pod.Namespace, tc.pod.Name)}, true, nil
}

// clientAddress: the entry points that serve the Gateway's listeners and trust X-Forwarded-*
// headers (forwardedHeaders.trustedIPs or .insecure) pass on the client address the hops in
// front wrote there.
func (traefikUnit) clientAddress(v *view, _ *core.Cluster) (clientAddress, bool, error) {
	tc := traefikOf(v)
	if tc == nil {
		return clientAddress{}, false, nil
	}
	if err := tc.configError(v); err != nil {
		return clientAddress{}, false, err
	}
	var with []string
	for _, s := range traefikServing(v, tc) {
		ep := s.ep
		var how string
		switch {
		case ep.forwardedInsecure:
			how = "forwardedHeaders.insecure: from every source"
		case len(ep.forwardedTrusted) > 0:
			if err := ep.checkTrusted(v, tc, "forwardedheaders.trustedips", ep.forwardedTrusted); err != nil {
				return clientAddress{}, false, err
			}
			how = "forwardedHeaders.trustedIPs: from " + strings.Join(ep.forwardedTrusted, ",")
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

func (traefikUnit) ownResource(*view) string {
	return "Traefik's own Service (its Helm chart's)"
}

func (traefikUnit) expectProxy() remedy {
	return remedy{ID: "traefik/entrypoint-proxy-protocol", Object: "Traefik's container arguments, for each entry point serving the Gateway's listeners", Field: "--entryPoints.<name>.proxyProtocol.trustedIPs", Value: "the load balancer's source addresses"}
}

func (traefikUnit) doc() unitDoc {
	return unitDoc{
		Expects:       "never requires a PROXY protocol header: reads one from trusted sources when it comes; passes on the X-Forwarded-For of trusted sources",
		Service:       "none generated: Traefik serves every Gateway from its own Service (its Helm chart's); its changes stay on that Service, which nothing rewrites from the Gateway",
		Marks:         "the Service Traefik's `--providers.kubernetesgateway.statusaddress.service.name`/`.namespace` arguments name (read from its Pods), else the LoadBalancer Service whose address is in the Gateway's `status.addresses`, else a LoadBalancer Service selecting Traefik's Pod (`gateway-published-service`)",
		ProxyProtocol: "the entry point serving a listener (its `--entryPoints.<name>.address` ends in the listener's port; for an HTTP listener, one without `http.tls`) with `proxyProtocol.trustedIPs` or `.insecure`: Traefik uses a header when one comes and serves connections without one, so this is only a note (`gateway-proxy-protocol-optional`); interception stays possible. Arguments are read as Traefik's flag parser reads them: keys in any case, `--key value` or `--key=value`, a repeated list appended, bools by `strconv.ParseBool` (anything else: Traefik does not start, an error naming the Pod), `proxyProtocol=<value>` other than a case-insensitive `true` turning it off. `proxyProtocol` with neither list nor `insecure` is not read: Traefik cannot build that entry point (\"no trusted IPs provided\") and does not start",
		ClientAddress: "the entry point serving a listener (as for its PROXY protocol) with `forwardedHeaders.trustedIPs` or `.insecure`: Traefik keeps the X-Forwarded-* headers of requests from those sources (from any, `insecure`) and deletes them from every other before it appends the connection's source, so what follows it reads the client address the hops in front wrote; an entry of a trusted list that is neither an IP nor a CIDR is an error naming the Pod (Traefik would not start)",
		Fix:           "Traefik's own Service, written as any other Service (server-side apply under loopguard's field manager)",
		Sources: []source{
			{Repo: "traefik/traefik", Version: "v3.7.9", Files: []string{
				"pkg/config/static/entrypoints.go", "pkg/config/static/static_config.go", "pkg/server/server_entrypoint_tcp.go",
				"pkg/ip/checker.go", "pkg/middlewares/forwardedheaders/forwarded_header.go",
				"pkg/provider/kubernetes/gateway/kubernetes.go", "cmd/traefik/traefik.go", "pkg/cli/loader_flag.go"}},
			{Repo: "traefik/paerser", Version: "v0.2.2", Files: []string{"flag/flagparser.go", "parser/nodes_metadata.go", "parser/element_fill.go"}},
		},
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
