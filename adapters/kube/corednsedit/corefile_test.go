package corednsedit

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// kubeadm is the Corefile kubeadm v1.37.2 writes (cmd/kubeadm/app/phases/addons/dns/manifests.go,
// DNSDomain cluster.local), which internal/cluster installs too.
const kubeadm = `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
`

const web = "Service shop/web"

var webRules = []Rewrite{{Name: "web-shop.lb.example.com", Target: "web.shop.svc.cluster.local"}}

func TestEdit(t *testing.T) {
	tests := map[string]struct {
		corefile string
		owner    string
		rewrites []Rewrite
		want     string
		wantErr  error
	}{
		"kubeadm's Corefile: the rules after the server block's first line, indented as its directives": {
			corefile: kubeadm, owner: web, rewrites: webRules,
			want: strings.Replace(kubeadm, ".:53 {\n", ".:53 {\n"+
				"    # loopguard:begin dns-steering for Service shop/web (loopguard takes these lines back; do not edit them)\n"+
				"    rewrite name exact web-shop.lb.example.com web.shop.svc.cluster.local\n"+
				"    # loopguard:end dns-steering for Service shop/web\n", 1),
		},
		"tabs and no final newline": {
			corefile: ".:53 {\n\tkubernetes cluster.local\n\tforward . 10.0.0.1\n}",
			owner:    web, rewrites: webRules,
			want: ".:53 {\n\t# loopguard:begin dns-steering for Service shop/web (loopguard takes these lines back; do not edit them)\n" +
				"\trewrite name exact web-shop.lb.example.com web.shop.svc.cluster.local\n" +
				"\t# loopguard:end dns-steering for Service shop/web\n\tkubernetes cluster.local\n\tforward . 10.0.0.1\n}",
		},
		"the block with the longest zone holding the name": {
			corefile: "example.com:53 {\n    kubernetes cluster.local\n}\n.:53 {\n    forward . 10.0.0.1\n}\n",
			owner:    web, rewrites: webRules,
			want: "example.com:53 {\n    # loopguard:begin dns-steering for Service shop/web (loopguard takes these lines back; do not edit them)\n" +
				"    rewrite name exact web-shop.lb.example.com web.shop.svc.cluster.local\n" +
				"    # loopguard:end dns-steering for Service shop/web\n    kubernetes cluster.local\n}\n.:53 {\n    forward . 10.0.0.1\n}\n",
		},
		"the name answered by a block without the kubernetes plugin": {
			corefile: kubeadm + "example.com:53 {\n    forward . 10.0.0.1\n}\n", owner: web, rewrites: webRules, wantErr: ErrUnsupported,
		},
		"the kubernetes plugin for another domain": {
			corefile: ".:53 {\n    kubernetes corp.internal\n}\n", owner: web, rewrites: webRules, wantErr: ErrUnsupported,
		},
		"no block for port 53": {
			corefile: ".:5353 {\n    kubernetes cluster.local\n}\n", owner: web, rewrites: webRules, wantErr: ErrUnsupported,
		},
		"an import (AKS's coredns-custom)": {
			corefile: strings.Replace(kubeadm, "    loadbalance\n", "    loadbalance\n    import custom/*.override\n", 1),
			owner:    web, rewrites: webRules, wantErr: ErrManaged,
		},
		"another tool's markers": {
			corefile: "# Managed by platform-dns; changes are overwritten\n" + kubeadm, owner: web, rewrites: webRules, wantErr: ErrManaged,
		},
		"another tool's BEGIN block": {
			corefile: strings.Replace(kubeadm, "    loop\n", "    # BEGIN ansible managed block\n    log\n    # END ansible managed block\n    loop\n", 1),
			owner:    web, rewrites: webRules, wantErr: ErrManaged,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Edit(tc.corefile, tc.owner, tc.rewrites)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Edit: error %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Edit (-want +got):\n%s", diff)
			}
			// Taking back restores every byte; editing again changes nothing.
			back, err := TakeBack(got, tc.owner)
			if err != nil {
				t.Fatal(err)
			}
			if back != tc.corefile {
				t.Errorf("TakeBack did not restore the Corefile:\n%s", cmp.Diff(tc.corefile, back))
			}
			again, err := Edit(got, tc.owner, tc.rewrites)
			if err != nil || again != got {
				t.Errorf("Edit again = %v, changed:\n%s", err, cmp.Diff(got, again))
			}
		})
	}
}

// TestOwners: each owner's lines are its own; taking one back leaves the other's.
func TestOwners(t *testing.T) {
	api := "Service shop/api"
	apiRules := []Rewrite{{Name: "api-shop.lb.example.com", Target: "api.shop.svc.cluster.local"}, {Name: "api.example.com", Target: "api.shop.svc.cluster.local"}}
	a, err := Edit(kubeadm, web, webRules)
	if err != nil {
		t.Fatal(err)
	}
	ab, err := Edit(a, api, apiRules)
	if err != nil {
		t.Fatal(err)
	}
	b, err := TakeBack(ab, web)
	if err != nil {
		t.Fatal(err)
	}
	onlyAPI, err := Edit(kubeadm, api, apiRules)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(onlyAPI, b); diff != "" {
		t.Errorf("after taking web's back (-want +got):\n%s", diff)
	}
	none, err := TakeBack(b, api)
	if err != nil || none != kubeadm {
		t.Errorf("TakeBack of both: %v\n%s", err, cmp.Diff(kubeadm, none))
	}
	// New rules for an owner replace its old ones in place of adding to them.
	changed, err := Edit(ab, web, []Rewrite{{Name: "www.example.com", Target: "web.shop.svc.cluster.local"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(changed, "web-shop.lb.example.com") || !strings.Contains(changed, "rewrite name exact www.example.com web.shop.svc.cluster.local") || !strings.Contains(changed, "api-shop.lb.example.com") {
		t.Errorf("replacing web's rules:\n%s", changed)
	}
}

func TestTakeBackRefuses(t *testing.T) {
	edited, err := Edit(kubeadm, web, webRules)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		"a line someone added between the markers": strings.Replace(edited, "    # loopguard:end", "    log\n    # loopguard:end", 1),
		"the end marker removed":                   strings.Replace(edited, "    # loopguard:end dns-steering for Service shop/web\n", "", 1),
		"the begin marker twice":                   strings.Replace(edited, ".:53 {\n", ".:53 {\n    # loopguard:begin dns-steering for Service shop/web (loopguard takes these lines back; do not edit them)\n", 1),
	}
	for name, corefile := range tests {
		t.Run(name, func(t *testing.T) {
			if got, err := TakeBack(corefile, web); err == nil {
				t.Errorf("TakeBack accepted it:\n%s", got)
			}
		})
	}
	if got, err := TakeBack(kubeadm, web); err != nil || got != kubeadm {
		t.Errorf("TakeBack without rules = %v, changed the Corefile", err)
	}
}

func TestEditRefusesBadInput(t *testing.T) {
	tests := map[string]struct {
		corefile, owner string
		rewrites        []Rewrite
	}{
		"an owner that is no object":   {kubeadm, "web", webRules},
		"no rules":                     {kubeadm, web, nil},
		"a name with a space":          {kubeadm, web, []Rewrite{{Name: "a b", Target: "web.shop.svc.cluster.local"}}},
		"a target that is a directive": {kubeadm, web, []Rewrite{{Name: "a.example.com", Target: "x\nimport evil"}}},
		"unbalanced braces":            {".:53 {\n    kubernetes cluster.local {\n}\n", web, webRules},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got, err := Edit(tc.corefile, tc.owner, tc.rewrites); err == nil {
				t.Errorf("Edit accepted it:\n%s", got)
			}
		})
	}
}
