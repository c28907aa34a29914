package gateway

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// traefikReading is what loopguard read of one entry point "web", or why Traefik would not start.
type traefikReading struct {
	Enabled       bool // the Gateway API provider
	Address       string
	HTTPTLS       bool
	ProxyProtocol bool
	Insecure      bool
	Trusted       []string
	FwdInsecure   bool
	FwdTrusted    []string
	Fails         bool // Traefik does not start with these arguments
}

func readTraefik(command, args []string) traefikReading {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "traefik", Name: "traefik-0"}}
	tc := traefikConfigOf(p, corev1.Container{Name: "traefik", Command: command, Args: args})
	if tc == nil {
		return traefikReading{}
	}
	r := traefikReading{Enabled: true, Fails: tc.err != nil}
	if ep := tc.entryPoints["web"]; ep != nil {
		r.Address, r.HTTPTLS, r.ProxyProtocol, r.Insecure, r.Trusted = ep.address, ep.httpTLS, ep.proxyProtocol, ep.insecure, ep.trusted
		r.FwdInsecure, r.FwdTrusted = ep.forwardedInsecure, ep.forwardedTrusted
	}
	return r
}

// TestTraefikArgumentSpellings: Traefik's static configuration arguments, read as Traefik v3.7.9
// reads them with its flag parser github.com/traefik/paerser v0.2.2 (Traefik's go.mod):
// flag/flagparser.go parseOne and setValue (one or two dashes, "key=value" or "key value", a
// bare bool or pointer flag is "true", keys case-insensitive with the first spelling kept, a
// repeated slice appended after a comma, the first non-flag argument ends the flags),
// parser/element_fill.go (bools by strconv.ParseBool: anything else fails the decode, "failed to
// decode configuration from flags", and Traefik does not start; lists split at commas and
// trimmed), parser/nodes_metadata.go (a pointer with label:"allowEmpty", proxyProtocol,
// http.tls, providers.kubernetesgateway: a value other than a case-insensitive "true" turns it
// off; forwardedHeaders, without allowEmpty, cannot stand alone), and
// pkg/config/static/static_config.go SetEffectiveConfiguration (no entry point: "http" on :80).
func TestTraefikArgumentSpellings(t *testing.T) {
	const gw = "--providers.kubernetesgateway"
	web := func(extra ...string) []string {
		return append([]string{gw, "--entryPoints.web.address=:8000/tcp"}, extra...)
	}
	on := func(r traefikReading) traefikReading {
		r.Enabled, r.Address = true, ":8000"
		return r
	}
	cases := map[string]struct {
		reason  string
		command []string
		args    []string
		want    traefikReading
	}{
		"InsecureBare":   {reason: "a bare bool flag is true", args: web("--entryPoints.web.proxyProtocol.insecure"), want: on(traefikReading{ProxyProtocol: true, Insecure: true})},
		"InsecureTrue":   {args: web("--entryPoints.web.proxyProtocol.insecure=true"), want: on(traefikReading{ProxyProtocol: true, Insecure: true})},
		"InsecureTitle":  {reason: "strconv.ParseBool accepts True", args: web("--entryPoints.web.proxyProtocol.insecure=True"), want: on(traefikReading{ProxyProtocol: true, Insecure: true})},
		"InsecureUpper":  {args: web("--entryPoints.web.proxyProtocol.insecure=TRUE"), want: on(traefikReading{ProxyProtocol: true, Insecure: true})},
		"InsecureOne":    {args: web("--entryPoints.web.proxyProtocol.insecure=1"), want: on(traefikReading{ProxyProtocol: true, Insecure: true})},
		"InsecureT":      {args: web("--entryPoints.web.proxyProtocol.insecure=t"), want: on(traefikReading{ProxyProtocol: true, Insecure: true})},
		"InsecureFalse":  {reason: "False is false, not 'anything but false'", args: web("--entryPoints.web.proxyProtocol.insecure=False"), want: on(traefikReading{ProxyProtocol: true})},
		"InsecureZero":   {args: web("--entryPoints.web.proxyProtocol.insecure=0"), want: on(traefikReading{ProxyProtocol: true})},
		"InsecureYes":    {reason: "strconv.ParseBool refuses yes: Traefik does not start", args: web("--entryPoints.web.proxyProtocol.insecure=yes"), want: on(traefikReading{ProxyProtocol: true, Fails: true})},
		"InsecureEmpty":  {args: web("--entryPoints.web.proxyProtocol.insecure="), want: on(traefikReading{ProxyProtocol: true, Fails: true})},
		"InsecureGarble": {args: web("--entryPoints.web.proxyProtocol.insecure=garbage"), want: on(traefikReading{ProxyProtocol: true, Fails: true})},
		"PointerBare":    {reason: "proxyProtocol alone is on (allowEmpty)", args: web("--entryPoints.web.proxyProtocol"), want: on(traefikReading{ProxyProtocol: true})},
		"PointerTrue":    {args: web("--entryPoints.web.proxyProtocol=TRUE"), want: on(traefikReading{ProxyProtocol: true})},
		"PointerOne":     {reason: "only a case-insensitive true keeps an allowEmpty pointer", args: web("--entryPoints.web.proxyProtocol=1", "--entryPoints.web.proxyProtocol.insecure"), want: on(traefikReading{})},
		"PointerFalse":   {reason: "false turns it off, its fields too", args: web("--entryPoints.web.proxyProtocol=false", "--entryPoints.web.proxyProtocol.trustedIPs=10.0.0.0/8"), want: on(traefikReading{})},
		"PointerEmpty":   {reason: "an empty value does not turn it off", args: web("--entryPoints.web.proxyProtocol="), want: on(traefikReading{ProxyProtocol: true})},
		"TrustedList":    {args: web("--entryPoints.web.proxyProtocol.trustedIPs=10.0.0.0/8, 192.168.1.7"), want: on(traefikReading{ProxyProtocol: true, Trusted: []string{"10.0.0.0/8", "192.168.1.7"}})},
		"TrustedRepeated": {reason: "a repeated slice flag appends",
			args: web("--entryPoints.web.proxyProtocol.trustedIPs=10.0.0.0/8", "--entrypoints.web.proxyprotocol.trustedips=172.16.0.0/12"),
			want: on(traefikReading{ProxyProtocol: true, Trusted: []string{"10.0.0.0/8", "172.16.0.0/12"}})},
		"SpaceSeparated": {reason: "a string flag takes the next argument",
			args: []string{gw, "--entryPoints.web.address", ":8000", "--entryPoints.web.forwardedHeaders.trustedIPs", "10.0.0.0/8"},
			want: on(traefikReading{FwdTrusted: []string{"10.0.0.0/8"}})},
		"UpperCaseKeys":   {args: []string{"--PROVIDERS.KUBERNETESGATEWAY", "--ENTRYPOINTS.WEB.ADDRESS=:8000", "--EntryPoints.Web.ForwardedHeaders.Insecure"}, want: on(traefikReading{FwdInsecure: true})},
		"SingleDash":      {args: []string{"-providers.kubernetesgateway", "-entryPoints.web.address=:8000"}, want: on(traefikReading{})},
		"FwdInsecureNo":   {args: web("--entryPoints.web.forwardedHeaders.insecure=no"), want: on(traefikReading{Fails: true})},
		"FwdStandalone":   {reason: "forwardedHeaders has no allowEmpty", args: web("--entryPoints.web.forwardedHeaders=true"), want: on(traefikReading{Fails: true})},
		"HTTPTLS":         {args: web("--entryPoints.web.http.tls"), want: on(traefikReading{HTTPTLS: true})},
		"HTTPTLSFalse":    {args: web("--entryPoints.web.http.tls=false"), want: on(traefikReading{})},
		"ProviderOff":     {reason: "providers.kubernetesgateway=false disables the provider", args: []string{"--providers.kubernetesgateway=false", "--providers.kubernetesgateway.statusaddress.service.name=traefik"}, want: traefikReading{}},
		"ProviderAbsent":  {args: []string{"--entryPoints.web.address=:8000"}, want: traefikReading{}},
		"StopsAtNonFlag":  {reason: "the first argument that is not a flag ends the flags", args: []string{gw, "serve", "--entryPoints.web.address=:8000"}, want: traefikReading{Enabled: true}},
		"DoubleDashEnds":  {args: []string{gw, "--", "--entryPoints.web.address=:8000"}, want: traefikReading{Enabled: true}},
		"ImageEntrypoint": {reason: "the image's entrypoint.sh execs traefik with the rest", args: append([]string{"traefik"}, web()...), want: on(traefikReading{})},
		"Command":         {reason: "the command's own arguments come first", command: []string{"/usr/local/bin/traefik", gw}, args: []string{"--entryPoints.web.address=:8000"}, want: on(traefikReading{})},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, readTraefik(tc.command, tc.args)); diff != "" {
				t.Errorf("%s: reading (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestTraefikDefaultEntryPoint: without an entry point of its own Traefik makes "http" on :80
// (pkg/config/static/static_config.go SetEffectiveConfiguration, v3.7.9).
func TestTraefikDefaultEntryPoint(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "traefik", Name: "traefik-0"}}
	tc := traefikConfigOf(p, corev1.Container{Args: []string{"--providers.kubernetesgateway"}})
	if ep := tc.entryPoints["http"]; ep == nil || ep.address != ":80" || len(tc.entryPoints) != 1 {
		t.Fatalf("entry points %v, want only http on :80", tc.entryPoints)
	}
}

// TestTraefikContainerArgs: the arguments ContainerArgs keeps of a Traefik container say, read
// alone, what the container says: every spelling above, and the space-separated and repeated
// forms a filter by prefix would lose (a value in its own argument, a second trustedIPs).
func TestTraefikContainerArgs(t *testing.T) {
	cases := [][]string{
		{"--providers.kubernetesgateway", "--entryPoints.web.address", ":8000", "--log.level", "DEBUG", "--entryPoints.web.forwardedHeaders.trustedIPs", "10.0.0.0/8"},
		{"traefik", "-providers.kubernetesgateway", "--entryPoints.web.address=:8000/tcp", "--entryPoints.web.proxyProtocol.trustedIPs=10.0.0.0/8", "--ENTRYPOINTS.WEB.PROXYPROTOCOL.TRUSTEDIPS=192.168.0.1"},
		{"--providers.kubernetesgateway", "--entryPoints.web.address=:8000", "--entryPoints.web.proxyProtocol=1", "--entryPoints.web.proxyProtocol.insecure"},
		{"--providers.kubernetesgateway", "--entryPoints.web.address=:8000", "--entryPoints.web.proxyProtocol.insecure=yes"},
		{"--providers.kubernetesgateway", "--providers.kubernetesgateway.statusaddress.service.name=traefik", "--providers.kubernetesgateway.statusaddress.service.namespace=traefik"},
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "traefik", Name: "traefik-0"}}
	for _, args := range cases {
		c := corev1.Container{Name: "traefik", Args: args}
		kept := ContainerArgs(c)
		want, got := traefikConfigOf(p, c), traefikConfigOf(p, corev1.Container{Name: "traefik", Args: kept})
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(traefikConfig{}, traefikEntryPoint{}), cmp.Comparer(func(a, b error) bool { return (a == nil) == (b == nil) })); diff != "" {
			t.Errorf("%q kept as %q reads differently (-container +kept):\n%s", args, kept, diff)
		}
	}
	if kept := ContainerArgs(corev1.Container{Args: []string{"--entryPoints.web.address=:8000"}}); kept != nil {
		t.Errorf("a container without the Gateway API provider keeps %q", kept)
	}
}
