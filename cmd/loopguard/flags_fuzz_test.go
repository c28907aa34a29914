package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzFlags runs `assess` with arbitrary values for every flag that takes one: --provider,
// --kubernetes-version, --proxy-mode, --kube-proxy-version, the controller versions,
// --allowlist, --prefer, --clients and -o. Whatever the values, the program ends with one of
// its exit codes, and a refused value is named in a usage message: never a panic or a hang.
func FuzzFlags(f *testing.F) {
	dir := f.TempDir()
	manifest := filepath.Join(dir, "svc.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop, annotations: {service.kubernetes.io/qcloud-loadbalancer-internal-subnetid: subnet-1}}
spec: {type: LoadBalancer, selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: v1
kind: Node
metadata: {name: node-a}
`), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Add("tencent", "v1.30.2", "ipvs", "v1.20.6-tke.12", "v2.9.0", "clb-l4-snat", "documented", "app=frontend", "json")
	f.Add("volcengine", "1.28", "iptables", "v1.28.3-vke.7", "", "", "source-ip", "", "yaml")
	f.Add("kubernetes", "v1.29.0-rc.1+k3s1", "nftables", "", "", "", "lb-features", "app in (a,b),!c", "table")
	f.Add("", "v", "ebpf", "v0", "x", ",", "", "=", "")
	f.Add("Tencent", "v1.30.2.9", "IPVS", "v1.20.6-tke.99999999999999999999", "-1", "clb-l4-snat,clb-l7-snat", "none", "a==b", "wide")
	f.Add("\x00", "\xff", "--", "-f", "--profile", "clb-l4-snat\n", "doc", "app=x,y in (", "json\n")
	f.Fuzz(func(t *testing.T, provider, k8s, proxyMode, kubeProxy, controllerVersion, allowlist, prefer, clients, output string) {
		args := []string{"assess", "-f", manifest,
			"--" + flagProvider + "=" + provider,
			"--" + flagKubernetesVersion + "=" + k8s,
			"--" + flagProxyMode + "=" + proxyMode,
			"--" + flagKubeProxyVersion + "=" + kubeProxy,
			"--" + flagServiceControllerVersion + "=" + controllerVersion,
			"--" + flagIngressControllerVersion + "=" + controllerVersion,
			"--" + flagCCMVersion + "=" + controllerVersion,
			"--" + flagAllowlist + "=" + allowlist,
			"--" + flagPrefer + "=" + prefer,
			"--" + flagClients + "=" + clients,
			"--output=" + output,
		}
		var out, errOut bytes.Buffer
		start := time.Now()
		code := run(args, strings.NewReader(""), &out, &errOut)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("assess took %s", d)
		}
		switch code {
		case exitOK, exitAtRisk, exitInput:
		default:
			t.Fatalf("exit code %d\nstderr: %s", code, errOut.String())
		}
		if code == exitInput && errOut.Len() == 0 {
			t.Fatalf("exit code %d with nothing on standard error", code)
		}
	})
}

// FuzzObjectFlag parses --object values (plan, apply): Kind/namespace/name or a usage error
// quoting the value.
func FuzzObjectFlag(f *testing.F) {
	for _, s := range []string{"Service/shop/checkout", "ing/shop/web", "svc//x", "Service/shop", "Pod/a/b", "Service/a/b/c", "", "/", "SERVICES/x/y"} {
		f.Add(s, "")
	}
	f.Add("Service/shop/web", "other")
	f.Fuzz(func(t *testing.T, value, namespace string) {
		l := &liveOptions{objects: []string{value}, namespace: namespace}
		refs, err := l.parseObjects()
		if err != nil {
			if _, ok := err.(*usageError); !ok || !strings.Contains(err.Error(), "--object") {
				t.Fatalf("error %T %v: want a usage error naming --object", err, err)
			}
			return
		}
		if len(refs) != 1 || refs[0].Namespace == "" || refs[0].Name == "" || (refs[0].Kind != "Service" && refs[0].Kind != "Ingress") {
			t.Fatalf("%q parsed as %+v", value, refs)
		}
		if namespace != "" && refs[0].Namespace != namespace {
			t.Fatalf("%q outside --namespace %q accepted", value, namespace)
		}
	})
}
