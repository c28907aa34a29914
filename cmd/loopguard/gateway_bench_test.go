package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// gatewayObjects builds a cluster of Envoy Gateway Gateways as kubectl prints its objects (as
// JSON, grouped by kind): gateways Gateways in gateways/20 namespaces, each with the
// LoadBalancer Service Envoy Gateway generated in envoy-gateway-system and its EndpointSlice;
// a ClientTrafficPolicy for every other Gateway, half naming it by targetRefs (with PROXY
// protocol), half picking it by targetSelectors (client address from X-Forwarded-For); nodes
// Nodes and the profile. Each namespace holds 20 Gateways and 10 policies, so resolving a
// Gateway's policies costs what it costs in a namespace a platform team shares.
func gatewayObjects(gateways, nodes int) [][]byte {
	var out [][]byte
	add := func(v any) {
		js, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		out = append(out, js)
	}
	add(map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
		"metadata": map[string]any{"name": "eg"},
		"spec":     map[string]any{"controllerName": "gateway.envoyproxy.io/gatewayclass-controller"}})
	ns := func(i int) string { return fmt.Sprintf("team-%d", i/20) }
	for i := 0; i < gateways; i++ {
		add(map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
			"metadata": map[string]any{"name": fmt.Sprintf("gw-%d", i), "namespace": ns(i),
				"labels": map[string]any{"tier": fmt.Sprintf("t-%d", i%4)}},
			"spec": map[string]any{"gatewayClassName": "eg",
				"infrastructure": map[string]any{"annotations": map[string]any{"service.kubernetes.io/qcloud-loadbalancer-internal-subnetid": "subnet-3f9a2c1d"}},
				"listeners": []any{
					map[string]any{"name": "http", "port": 80, "protocol": "HTTP"},
					map[string]any{"name": "https", "port": 443, "protocol": "HTTPS", "hostname": fmt.Sprintf("gw-%d.example.com", i),
						"tls": map[string]any{"certificateRefs": []any{map[string]any{"name": "tls"}}}},
				}}})
	}
	for i := 0; i < gateways; i += 2 {
		spec := map[string]any{"targetRefs": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": fmt.Sprintf("gw-%d", i)}},
			"proxyProtocol": map[string]any{}}
		if i%4 == 2 {
			spec = map[string]any{"targetSelectors": []any{map[string]any{"kind": "Gateway", "matchLabels": map[string]any{"tier": fmt.Sprintf("t-%d", i%4)}}},
				"clientIPDetection": map[string]any{"xForwardedFor": map[string]any{"numTrustedHops": 1}}}
		}
		add(map[string]any{"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "ClientTrafficPolicy",
			"metadata": map[string]any{"name": fmt.Sprintf("ctp-%d", i), "namespace": ns(i), "creationTimestamp": "2026-11-01T10:00:00Z"},
			"spec":     spec})
	}
	svc := func(i int) string { return fmt.Sprintf("envoy-%s-gw-%d-%08x", ns(i), i, i*2654435761%(1<<32)) }
	for i := 0; i < gateways; i++ {
		owner := map[string]any{"gateway.envoyproxy.io/owning-gateway-name": fmt.Sprintf("gw-%d", i), "gateway.envoyproxy.io/owning-gateway-namespace": ns(i)}
		labels := map[string]any{"app.kubernetes.io/component": "proxy", "app.kubernetes.io/managed-by": "envoy-gateway", "app.kubernetes.io/name": "envoy"}
		for k, v := range owner {
			labels[k] = v
		}
		add(map[string]any{"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": svc(i), "namespace": "envoy-gateway-system", "labels": labels,
				"annotations": map[string]any{"service.kubernetes.io/qcloud-loadbalancer-internal-subnetid": "subnet-3f9a2c1d"}},
			"spec": map[string]any{"type": "LoadBalancer", "externalTrafficPolicy": "Local", "selector": owner,
				"ports": []any{
					map[string]any{"name": "http-80", "port": 80, "targetPort": 10080, "protocol": "TCP"},
					map[string]any{"name": "https-443", "port": 443, "targetPort": 10443, "protocol": "TCP"},
				}}})
	}
	for i := 0; i < gateways; i++ {
		add(map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
			"metadata": map[string]any{"name": svc(i) + "-x7k2p", "namespace": "envoy-gateway-system",
				"labels": map[string]any{"kubernetes.io/service-name": svc(i)}},
			"addressType": "IPv4",
			"ports": []any{
				map[string]any{"name": "http-80", "port": 10080, "protocol": "TCP"},
				map[string]any{"name": "https-443", "port": 10443, "protocol": "TCP"},
			},
			"endpoints": []any{
				map[string]any{"addresses": []any{fmt.Sprintf("172.16.%d.%d", i/250%250, i%250)}, "nodeName": fmt.Sprintf("10.0.0.%d", i%nodes), "conditions": map[string]any{"ready": true}},
				map[string]any{"addresses": []any{fmt.Sprintf("172.17.%d.%d", i/250%250, i%250)}, "nodeName": fmt.Sprintf("10.0.0.%d", (i+7)%nodes), "conditions": map[string]any{"ready": true}},
			}})
	}
	for i := 0; i < nodes; i++ {
		add(map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": fmt.Sprintf("10.0.0.%d", i),
			"labels": map[string]any{"kubernetes.io/hostname": fmt.Sprintf("10.0.0.%d", i), "node.kubernetes.io/instance-type": "SA5.LARGE8"}}})
	}
	add(map[string]any{"apiVersion": "loopguard.io/v1alpha1", "kind": "ClusterProfile", "provider": "tencent", "proxyMode": "ipvs",
		"kubeProxyVersion": "v1.20.6-tke.12", "allowlists": []any{"clb-l4-snat"}})
	return out
}

// gatewayShapes are the ways users hand loopguard a cluster: multi-document YAML files, the
// List `kubectl get -o yaml` prints, and the List `kubectl get -o json` prints.
var gatewayShapes = []struct {
	name  string
	file  string
	write func(objs [][]byte) []byte
}{
	{"MultiDocYAML", "cluster.yaml", func(objs [][]byte) []byte {
		var b bytes.Buffer
		for _, o := range objs {
			b.WriteString("---\n")
			b.Write(jsonToYAML(o))
		}
		return b.Bytes()
	}},
	{"YAMLList", "list.yaml", func(objs [][]byte) []byte {
		var b bytes.Buffer
		b.WriteString("apiVersion: v1\nitems:\n")
		for _, o := range objs {
			for i, l := range strings.Split(strings.TrimRight(string(jsonToYAML(o)), "\n"), "\n") {
				if i == 0 {
					b.WriteString("- ")
				} else {
					b.WriteString("  ")
				}
				b.WriteString(l)
				b.WriteByte('\n')
			}
		}
		b.WriteString("kind: List\nmetadata:\n  resourceVersion: \"\"\n")
		return b.Bytes()
	}},
	{"KubectlGetJSON", "list.json", func(objs [][]byte) []byte {
		items := make([]json.RawMessage, len(objs))
		for i, o := range objs {
			items[i] = o
		}
		js, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "items": items, "kind": "List",
			"metadata": map[string]any{"resourceVersion": ""}}, "", "    ")
		if err != nil {
			panic(err)
		}
		return js
	}},
}

func jsonToYAML(js []byte) []byte {
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		panic(err)
	}
	return y
}

// BenchmarkAssessGateways runs `loopguard assess -f FILE -o json` over Envoy Gateway
// Gateways at two sizes (1,000 and 5,000 Gateways with their generated Services) in every
// input shape: reading, attributing each Service to its Gateway, resolving each Gateway's
// ClientTrafficPolicies, judging and reporting. Cost should grow with the cluster, not with
// its square.
func BenchmarkAssessGateways(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		objs := gatewayObjects(n, 100)
		for _, s := range gatewayShapes {
			b.Run(fmt.Sprintf("%s/%dk", s.name, n/1000), func(b *testing.B) {
				path := filepath.Join(b.TempDir(), s.file)
				data := s.write(objs)
				if err := os.WriteFile(path, data, 0o644); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				defer debug.SetGCPercent(debug.SetGCPercent(400)) // as main.go runs it
				cpu0 := cpuTime()
				for b.Loop() {
					var out countingWriter
					var errOut bytes.Buffer
					if code := run([]string{"assess", "-f", path, "-o", "json"}, strings.NewReader(""), &out, &errOut); code != exitOK && code != exitAtRisk {
						b.Fatalf("exit %d: %s", code, errOut.String())
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e9, "cpu-s/op")
			})
		}
	}
}

// TestGatewayBenchmarkCluster keeps the benchmark honest: in every shape, every Gateway is
// judged as a Gateway (none of the generated Services is reported apart), the policies that
// name a Gateway make it need a PROXY protocol header, and the ones picking it by labels are
// applied.
func TestGatewayBenchmarkCluster(t *testing.T) {
	objs := gatewayObjects(40, 5)
	for _, s := range gatewayShapes {
		path := filepath.Join(t.TempDir(), s.file)
		if err := os.WriteFile(path, s.write(objs), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runCLI(t, "", "assess", "-f", path, "-o", "json")
		if code != exitOK && code != exitAtRisk {
			t.Fatalf("%s: exit %d: %s", s.name, code, errOut)
		}
		var rep Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: %v\n%s", s.name, err, out)
		}
		gateways, proxy, xff := 0, 0, 0
		for _, r := range rep.Results {
			if r.Object.Kind != "Gateway" {
				t.Errorf("%s: %s %s/%s reported apart from its Gateway", s.name, r.Object.Kind, r.Object.Namespace, r.Object.Name)
				continue
			}
			gateways++
			for _, why := range append(r.Reasons, r.Notes...) {
				switch {
				case why.Code == "gateway-proxy-protocol":
					proxy++
				case strings.Contains(why.Message, "X-Forwarded-For"):
					xff++
				}
			}
		}
		// Of 40 Gateways, 10 are named by a policy with proxyProtocol; labels pick the other
		// ten policies' Gateways (every Gateway of tier t-2 in the namespace: 10 of them).
		if gateways != 40 || proxy != 10 || xff != 10 {
			t.Errorf("%s: %d Gateways judged, %d needing a PROXY protocol header, %d trusting X-Forwarded-For; want 40, 10 and 10:\n%s", s.name, gateways, proxy, xff, out)
		}
	}
}
