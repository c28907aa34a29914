package core

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const goodProfile = `
apiVersion: loopguard.io/v1alpha1
kind: ClusterProfile
metadata: {name: prod}
provider: tencent
kubernetesVersion: v1.30.2
proxyMode: ipvs
kubeProxyVersion: v1.20.6-tke.12
ingressControllerVersion: v2.9.1
allowlists: [clb-l4-snat]
policy:
  prefer: lb-features
  allowTickets: true
clients: app=frontend
dataplane:
  cni: flannel
  bridgeHairpin: true
`

func TestParseProfile(t *testing.T) {
	p, err := ParseProfile("prod.yaml", []byte(goodProfile))
	if err != nil {
		t.Fatal(err)
	}
	if p.Provider != "tencent" || p.ProxyMode != ProxyModeIPVS || !p.HasAllowlist("clb-l4-snat") || p.HasAllowlist("clb-l7-snat") ||
		p.Policy.Prefer != PreferLBFeatures || !p.Policy.AllowTickets || p.Clients != "app=frontend" ||
		p.Dataplane.BridgeHairpin == nil || !*p.Dataplane.BridgeHairpin || p.Metadata.Name != "prod" {
		t.Errorf("parsed %+v", p)
	}
}

func TestParseProfileErrors(t *testing.T) {
	cases := map[string]struct {
		doc  string
		want []string // every substring must appear
	}{
		"UnknownField":     {doc: "apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nproxymode: ipvs\n", want: []string{"p.yaml", `unknown field "proxymode"`}},
		"UnknownProxyMode": {doc: "apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nproxyMode: userspace\n", want: []string{"proxyMode", `"userspace"`, "ipvs"}},
		"WrongKind":        {doc: "apiVersion: loopguard.io/v1alpha1\nkind: Profile\n", want: []string{"kind", "ClusterProfile"}},
		"WrongAPIVersion":  {doc: "apiVersion: loopguard.io/v1\nkind: ClusterProfile\n", want: []string{"apiVersion", "loopguard.io/v1alpha1"}},
		"BadVersion":       {doc: "apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nkubeProxyVersion: latest\n", want: []string{"kubeProxyVersion", "latest"}},
		"BadPreference":    {doc: "apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\npolicy: {prefer: cheap}\n", want: []string{"policy.prefer", "cheap"}},
		"WrongType":        {doc: "apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nallowlists: clb-l4-snat\n", want: []string{"allowlists"}},
		"BadSelector":      {doc: "apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nclients: 'app in (a'\n", want: []string{"clients"}},
		"BrokenYAML":       {doc: "apiVersion: [\n", want: []string{"p.yaml", "not YAML"}},
		"Empty":            {doc: "", want: []string{"empty"}},
		"BadAttachment":    {doc: "apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\ndataplane: {attachment: tunnel}\n", want: []string{"dataplane.attachment"}},
		"BadKubeletMode":   {doc: "apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\ndataplane: {kubeletHairpinMode: on}\n", want: []string{"dataplane.kubeletHairpinMode"}},
		// A setting is the text the controller reads: an unquoted YAML true is not that text.
		"UnquotedSetting": {doc: "apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\ncontrollerSettings: {HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL: true}\n", want: []string{"controllerSettings"}},
		"NamelessSetting": {doc: "apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\ncontrollerSettings: {\"\": \"true\"}\n", want: []string{"controllerSettings", "name"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := ParseProfile("p.yaml", []byte(tc.doc))
			if err == nil {
				t.Fatalf("parsed %+v, want an error", p)
			}
			if p != nil {
				t.Error("a failed parse must return no profile")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v is not ErrInvalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// FuzzParseProfile checks that any input either parses into a profile that validates, or
// fails with ErrInvalid naming the file, and never panics.
func FuzzParseProfile(f *testing.F) {
	f.Add([]byte(goodProfile))
	f.Add([]byte("apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\n"))
	f.Add([]byte("apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nproxyMode: ebpf\ndataplane: {cni: cilium, ciliumVersion: 1.18.0}\n"))
	f.Add([]byte("{\"apiVersion\":\"loopguard.io/v1alpha1\",\"kind\":\"ClusterProfile\",\"policy\":{\"prefer\":\"source-ip\"}}"))
	f.Add([]byte("- a\n- b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProfile("fuzz.yaml", data)
		if err != nil {
			if p != nil || !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "fuzz.yaml: ") {
				t.Fatalf("bad failure: %v (profile %v)", err, p)
			}
			return
		}
		if errs := p.Validate(); len(errs) > 0 {
			t.Fatalf("accepted an invalid profile: %v", errs)
		}
		_ = p.HairpinFacts()
	})
}

// TestOverlayStatesFalse: a later profile that says allowTickets: false turns an earlier true
// off; one that does not mention it leaves it.
func TestOverlayStatesFalse(t *testing.T) {
	base, err := ParseProfile("a", []byte("apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\npolicy: {allowTickets: true, allowDisruptive: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	silent, err := ParseProfile("b", []byte("apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nproxyMode: ipvs\n"))
	if err != nil {
		t.Fatal(err)
	}
	off, err := ParseProfile("c", []byte("apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\npolicy: {allowTickets: false}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := *base
	p.Overlay(silent)
	if !p.Policy.AllowTickets || !p.Policy.AllowDisruptive || p.ProxyMode != ProxyModeIPVS {
		t.Errorf("a profile that does not mention the policy changed it: %+v", p.Policy)
	}
	p.Overlay(off)
	if p.Policy.AllowTickets || !p.Policy.AllowDisruptive {
		t.Errorf("allowTickets: false did not turn it off, or touched allowDisruptive: %+v", p.Policy)
	}
}

// TestControllerSettings: a profile states the cloud controller's settings by the names the
// controller reads, as text; a later profile's setting replaces the same name and keeps the
// others.
func TestControllerSettings(t *testing.T) {
	base, err := ParseProfile("a", []byte("apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\ncontrollerSettings:\n  HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL: \"true\"\n  HCLOUD_LOAD_BALANCERS_TYPE: lb11\n"))
	if err != nil {
		t.Fatal(err)
	}
	later, err := ParseProfile("b", []byte("apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\ncontrollerSettings: {HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL: \"False\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := *base
	p.Overlay(later)
	want := map[string]string{"HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL": "False", "HCLOUD_LOAD_BALANCERS_TYPE": "lb11"}
	if diff := cmp.Diff(want, p.ControllerSettings); diff != "" {
		t.Errorf("overlaid settings (-want +got):\n%s", diff)
	}
	if base.ControllerSettings["HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL"] != "true" {
		t.Errorf("Overlay changed the earlier profile's map: %v", base.ControllerSettings)
	}
}
