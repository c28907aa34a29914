package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles writes name → content under a temporary folder and returns the folder.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const privateService = `apiVersion: v1
kind: Service
metadata:
  name: %s
  namespace: shop
  annotations:
    service.kubernetes.io/qcloud-loadbalancer-internal-subnetid: subnet-1
spec:
  type: LoadBalancer
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
`

// The issue-13 rough edges, each as a user meets it.
func TestRoughEdges(t *testing.T) {
	t.Chdir(repoRoot)
	dir := writeFiles(t, map[string]string{
		"ports.yaml": `apiVersion: v1
kind: Service
metadata: {name: ports, namespace: shop}
spec:
  type: LoadBalancer
  ports:
  - port: -80
    targetPort: -1
  - port: 99999
    targetPort: 8080
`,
		"tke-kind.yaml": strings.ReplaceAll(privateService, "%s", "web") + `  ` + "\n" + `---
apiVersion: cloud.tencent.com/v1alpha1
kind: TKEServiceConfig
metadata: {name: web-config, namespace: shop}
spec:
  loadBalancer:
    l4Listeners:
    - {protocol: TCP, port: 80, snatEnable: true}
`,
		"big.yaml": `apiVersion: v1
kind: Service
metadata:
  name: big
  namespace: shop
  annotations:
    service.beta.kubernetes.io/volcengine-loadbalancer-ip-mode: "` + strings.Repeat("x", 200*1024) + `"
spec:
  type: LoadBalancer
  ports:
  - port: 80
`,
		"huge-annotation.yaml": `apiVersion: v1
kind: Service
metadata:
  name: huge
  namespace: shop
  annotations:
    example.com/blob: ` + strings.Repeat("x", 1<<20) + `
spec: {type: LoadBalancer, ports: [{port: 80}]}
`,
		"empty.yaml":           "# nothing here\n",
		"empty-folder/.keep":   "",
		"text-folder/notes.md": "not a manifest",
		"profile3.yaml": `apiVersion: loopguard.io/v1alpha1
kind: ClusterProfile
proxyMode: ipvz
kubeProxyVersion: banana
colour: blue
`,
		"dup/a.yaml": strings.ReplaceAll(privateService, "%s", "web"),
		"dup/b.yaml": strings.ReplaceAll(privateService, "%s", "web"),
		"dup/c.yaml": strings.ReplaceAll(privateService, "%s", "web"),
		"dup/d.yaml": strings.ReplaceAll(privateService, "%s", "web") + "---\n" + strings.ReplaceAll(privateService, "%s", "other"),
	})
	at := func(name string) string { return filepath.Join(dir, name) }

	t.Run("every object's own check in the Every object lines", func(t *testing.T) {
		stdout, _, code := runCLI(t, "", "assess", "-f", "examples/volcengine")
		if code != exitOK {
			t.Fatalf("exit %d", code)
		}
		for _, want := range []string{"Service orders/api: Verify: status.loadBalancer.ingress[*].ipMode of Service orders/api must be VIP",
			"Service orders/ledger: Verify: status.loadBalancer.ingress[*].ipMode of Service orders/ledger must be Proxy",
			"Service orders/reports: Verify: status.loadBalancer.ingress[*].ipMode of Service orders/reports must be Proxy"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("the table lacks %q:\n%s", want, stdout)
			}
		}
	})

	t.Run("TKEServiceConfig is named as a near miss", func(t *testing.T) {
		stdout, stderr, code := runCLI(t, "", "assess", "-f", at("tke-kind.yaml"))
		if code != exitInput {
			t.Errorf("exit %d, want %d", code, exitInput)
		}
		if !strings.Contains(stderr, "tke-kind.yaml:17: TKEServiceConfig shop/web-config: kind: kind TKEServiceConfig is not TkeServiceConfig") ||
			!strings.Contains(stderr, "did you mean kind: TkeServiceConfig with apiVersion: cloud.tencent.com/v1alpha1?") {
			t.Errorf("stderr:\n%s", stderr)
		}
		if !strings.Contains(stdout, "Service shop/web") {
			t.Errorf("the Service is not assessed:\n%s", stdout)
		}
	})

	t.Run("ports are range-checked like the API server does", func(t *testing.T) {
		stdout, stderr, code := runCLI(t, "", "plan", "-f", at("ports.yaml"), "--provider", "tencent")
		if code != exitInput {
			t.Errorf("exit %d, want %d", code, exitInput)
		}
		for _, want := range []string{
			"ports.yaml:7: Service shop/ports: spec.ports[0].port: Invalid value: -80: must be between 1 and 65535, inclusive",
			"ports.yaml:8: Service shop/ports: spec.ports[0].targetPort: Invalid value: -1: must be between 1 and 65535, inclusive",
			"ports.yaml:9: Service shop/ports: spec.ports[1].port: Invalid value: 99999: must be between 1 and 65535, inclusive",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr)
			}
		}
		if strings.Contains(stdout, "-80") || strings.Contains(stdout, "99999") {
			t.Errorf("an invalid port was planned:\n%s", stdout)
		}
	})

	t.Run("a huge invalid value is not echoed in full", func(t *testing.T) {
		_, stderr, code := runCLI(t, "", "assess", "-f", at("big.yaml"))
		if code != exitInput {
			t.Errorf("exit %d, want %d", code, exitInput)
		}
		if len(stderr) > 2000 || !strings.Contains(stderr, "… (204800 bytes)") || !strings.Contains(stderr, `supported values: "VIP", "Proxy"`) {
			t.Errorf("stderr is %d bytes: %.600s", len(stderr), stderr)
		}
	})

	t.Run("a 1 MB annotation is refused as the API server would, the other objects assessed", func(t *testing.T) {
		stdout, stderr, code := runCLI(t, "", "assess", "-f", at("huge-annotation.yaml"), "-f", "examples/manifests")
		if code != exitInput {
			t.Errorf("exit %d, want %d", code, exitInput)
		}
		if len(stderr) > 2000 || !strings.Contains(stderr, "huge-annotation.yaml:6: Service shop/huge: metadata.annotations: the annotations total 1048592 bytes") {
			t.Errorf("stderr is %d bytes: %.600s", len(stderr), stderr)
		}
		if !strings.Contains(stdout, "checkout") {
			t.Errorf("the other objects were not assessed:\n%.2000s", stdout)
		}
	})

	t.Run("every profile error, and what a non-profile file holds", func(t *testing.T) {
		_, stderr, code := runCLI(t, "", "assess", "-f", "examples/manifests", "--profile", at("profile3.yaml"))
		if code != exitInput {
			t.Errorf("exit %d, want %d", code, exitInput)
		}
		for _, want := range []string{"profile3.yaml:3: ClusterProfile: proxyMode: Unsupported value: \"ipvz\"",
			"profile3.yaml:4: ClusterProfile: kubeProxyVersion: Invalid value: \"banana\"", "profile3.yaml:5: ClusterProfile: colour: unknown field"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr)
			}
		}
		_, stderr, _ = runCLI(t, "", "assess", "-f", "examples/manifests", "--profile", "examples/manifests/services.yaml")
		if !strings.Contains(stderr, "found 5 documents: 5 Service") {
			t.Errorf("stderr:\n%s", stderr)
		}
	})

	t.Run("no manifests is an error, not a pass", func(t *testing.T) {
		for _, tc := range []struct{ path, want string }{
			{at("empty.yaml"), "empty.yaml: no manifests: the file is empty or holds only comments"},
			{at("empty-folder"), "empty-folder: no manifests: the folder holds no .yaml, .yml or .json file"},
			{at("text-folder"), "text-folder: no manifests: the folder holds no .yaml, .yml or .json file"},
			{"-", "-: no manifests: standard input is empty or holds only comments"},
		} {
			for _, cmd := range []string{"assess", "plan"} {
				_, stderr, code := runCLI(t, "", cmd, "-f", tc.path)
				if code != exitInput || !strings.Contains(stderr, tc.want) {
					t.Errorf("%s -f %s: exit %d, stderr %q; want %d and %q", cmd, tc.path, code, stderr, exitInput, tc.want)
				}
			}
		}
	})

	t.Run("a duplicate note is named once", func(t *testing.T) {
		stdout, _, _ := runCLI(t, "", "assess", "-f", at("dup"), "--provider", "tencent")
		for _, line := range strings.Split(stdout, "\n") {
			if strings.Count(line, "cli-duplicate-object") > 1 {
				t.Errorf("a row repeats the code: %s", line)
			}
		}
		if !strings.Contains(stdout, "cli-duplicate-object") {
			t.Errorf("no duplicate note:\n%s", stdout)
		}
	})

	t.Run("risk unknown shows no symptom as if it were known", func(t *testing.T) {
		stdout, _, _ := runCLI(t, "", "assess", "-f", "examples/manifests/services.yaml", "--provider", "tencent")
		for _, line := range strings.Split(stdout, "\n") {
			f := strings.Fields(line)
			if len(f) > 4 && f[3] == "unknown" && f[4] != "unknown" {
				t.Errorf("risk unknown with symptom %q: %s", f[4], line)
			}
		}
		if !strings.Contains(stdout, "unknown (intermittent if it loops)") {
			t.Errorf("no unknown row:\n%s", stdout)
		}
	})

	t.Run("prevent-loopback's why and costs agree on the client address", func(t *testing.T) {
		// checkout is on externalTrafficPolicy Local (client kept); under Cluster with
		// iptables interception kube-proxy masquerades (client lost).
		for _, tc := range []struct{ args []string }{{[]string{"assess", "-f", "examples/manifests", "-o", "json"}}} {
			stdout, _, _ := runCLI(t, "", tc.args...)
			rep := decodeReport(t, stdout)
			for _, r := range rep.Results {
				if r.Decision.Remedy != "intercept-vip" || r.Decision.Costs == nil {
					continue
				}
				why := r.Decision.Why
				if strings.Contains(why, "can be obtained") && !strings.Contains(why, "under Cluster kube-proxy masquerades") {
					t.Errorf("%v: why %q does not say when the address is lost", r.Object, why)
				}
			}
		}
	})
}

func decodeReport(t *testing.T, out string) *Report {
	t.Helper()
	var rep Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("-o json: %v", err)
	}
	return &rep
}

func TestExplain(t *testing.T) {
	stdout, _, code := runCLI(t, "", "explain", "tke-offer-prevent-loopback")
	if code != exitOK || !strings.Contains(stdout, "meaning: Intra-cluster forwarding") || !strings.Contains(stdout, "source: ") ||
		!strings.Contains(stdout, "to do:   a remedy loopguard can carry out") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
	_, stderr, code := runCLI(t, "", "explain", "tke-offer-prevent-lopback")
	if code != exitInput || !strings.Contains(stderr, "the nearest: tke-offer-prevent-loopback") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
