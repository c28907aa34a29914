package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/gateway"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// benchImplementations are, per implementation, its GatewayClass's controllerName, the marks of
// the Service it generates for Gateway edge/web, and the objects that configure its PROXY
// protocol and client address for that Gateway, so that each benchmark reads the settings the
// implementation's unit reads.
var benchImplementations = []struct {
	name, controller, svcName, svcMarks, config string
}{
	{"envoy-gateway", "gateway.envoyproxy.io/gatewayclass-controller", "envoy-edge-web-0a1b2c3d",
		"labels: {gateway.envoyproxy.io/owning-gateway-name: web, gateway.envoyproxy.io/owning-gateway-namespace: edge}", `
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: web, namespace: edge}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web}]
  proxyProtocol: {}
  clientIPDetection: {xForwardedFor: {numTrustedHops: 1}}`},
	{"nginx-gateway-fabric", "gateway.nginx.org/nginx-gateway-controller", "web-bench",
		"labels: {gateway.networking.k8s.io/gateway-name: web}", `
apiVersion: gateway.nginx.org/v1alpha2
kind: NginxProxy
metadata: {name: web, namespace: edge}
spec: {rewriteClientIP: {mode: ProxyProtocol}}`},
	{"istio", "istio.io/gateway-controller", "web-bench",
		"labels: {gateway.networking.k8s.io/gateway-name: web, istio.io/gateway-name: web}", ""},
	{"cilium", "io.cilium/gateway-controller", "cilium-gateway-web",
		"labels: {io.cilium.gateway/owning-gateway: web}", `
apiVersion: v1
kind: ConfigMap
metadata: {name: cilium-config, namespace: kube-system}
data: {enable-gateway-api-proxy-protocol: "true"}`},
	{"contour", "projectcontour.io/gateway-controller", "envoy-web",
		"labels: {projectcontour.io/owning-gateway-name: web}", `
apiVersion: projectcontour.io/v1alpha1
kind: ContourConfiguration
metadata: {name: contourconfig-web, namespace: edge}
spec: {envoy: {listener: {useProxyProtocol: true}, network: {numTrustedHops: 1}}}`},
	{"kgateway", "kgateway.dev/kgateway", "web",
		"labels: {kgateway: kube-gateway, gateway.networking.k8s.io/gateway-name: web}", `
apiVersion: gateway.kgateway.dev/v1alpha1
kind: ListenerPolicy
metadata: {name: web, namespace: edge}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web}]
  default: {proxyProtocol: {}, httpSettings: {xffNumTrustedHops: 1}}`},
	{"traefik", "traefik.io/gateway-controller", "traefik", "labels: {app: traefik}", ""},
}

// benchCluster is a cluster of three nodes with one Gateway edge/web of the implementation,
// with n listeners (ports 8000 and up), the Service generated for it (Traefik: its own, named by
// its Pod's arguments) with an endpoint on every node, and the implementation's settings.
func benchCluster(b *testing.B, impl int, n int) (runtime.Object, *core.Cluster) {
	b.Helper()
	bi := benchImplementations[impl]
	var docs []string
	for i := 1; i <= 3; i++ {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Node\nmetadata: {name: node-%d}", i))
	}
	docs = append(docs, fmt.Sprintf("apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: bench}\nspec: {controllerName: %s}", bi.controller))
	var listeners, ports, epPorts, args strings.Builder
	for i := 0; i < n; i++ {
		port := 8000 + i
		fmt.Fprintf(&listeners, "  - {name: l%d, port: %d, protocol: HTTP}\n", i, port)
		fmt.Fprintf(&ports, "  - {name: l%d, port: %d, targetPort: %d, protocol: TCP}\n", i, port, port)
		fmt.Fprintf(&epPorts, "- {name: l%d, port: %d, protocol: TCP}\n", i, port)
		fmt.Fprintf(&args, "    - --entryPoints.l%d.address=:%d/tcp\n    - --entryPoints.l%d.proxyProtocol.trustedIPs=10.0.0.0/8\n    - --entryPoints.l%d.forwardedHeaders.trustedIPs=10.0.0.0/8\n", i, port, i, i)
	}
	annotations := ""
	if bi.name == "istio" {
		annotations = "\n  annotations: {proxy.istio.io/config: '{gatewayTopology: {proxyProtocol: {}, numTrustedProxies: 1}}'}"
	}
	infra := ""
	if bi.name == "nginx-gateway-fabric" {
		infra = "  infrastructure: {parametersRef: {group: gateway.nginx.org, kind: NginxProxy, name: web}}\n"
	}
	docs = append(docs, fmt.Sprintf("apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata:\n  name: web\n  namespace: edge%s\nspec:\n  gatewayClassName: bench\n%s  listeners:\n%s", annotations, infra, listeners.String()))
	svcNS := "edge"
	if bi.name == "envoy-gateway" {
		svcNS = gateway.DefaultEnvoyGatewayNamespace
	}
	if bi.name == "traefik" {
		svcNS = "traefik"
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: traefik-0, namespace: traefik, labels: {app: traefik}}\nspec:\n  nodeName: node-1\n  containers:\n  - name: traefik\n    args:\n%s    - --providers.kubernetesgateway\n    - --providers.kubernetesgateway.statusaddress.service.name=traefik\n    - --providers.kubernetesgateway.statusaddress.service.namespace=traefik\n", args.String()))
	}
	docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: %s\n  namespace: %s\n  %s\nspec:\n  type: LoadBalancer\n  externalTrafficPolicy: Local\n  selector: {app: proxy}\n  ports:\n%s", bi.svcName, svcNS, bi.svcMarks, ports.String()))
	docs = append(docs, fmt.Sprintf("apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: %s-1\n  namespace: %s\n  labels: {kubernetes.io/service-name: %s}\naddressType: IPv4\nendpoints:\n- {addresses: [172.16.0.1], nodeName: node-1, conditions: {ready: true}}\n- {addresses: [172.16.1.1], nodeName: node-2, conditions: {ready: true}}\n- {addresses: [172.16.2.1], nodeName: node-3, conditions: {ready: true}}\nports:\n%s", bi.svcName, svcNS, bi.svcName, epPorts.String()))
	if bi.config != "" {
		docs = append(docs, bi.config)
	}
	var objs []runtime.Object
	var gw runtime.Object
	for _, doc := range docs {
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			b.Fatalf("%v\n%s", err, doc)
		}
		u := &unstructured.Unstructured{Object: m}
		var obj runtime.Object = u
		var typed runtime.Object
		switch u.GetKind() {
		case "Node":
			typed = &corev1.Node{}
		case "Service":
			typed = &corev1.Service{}
		case "Pod":
			typed = &corev1.Pod{}
		case "ConfigMap":
			typed = &corev1.ConfigMap{}
		case "EndpointSlice":
			typed = &discoveryv1.EndpointSlice{}
		}
		if typed != nil {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, typed); err != nil {
				b.Fatal(err)
			}
			obj = typed
		}
		if u.GetKind() == "Gateway" {
			gw = obj
		}
		objs = append(objs, obj)
	}
	c, err := core.NewCluster(core.ClusterProfile{}, objs...)
	if err != nil {
		b.Fatal(err)
	}
	return gw, c
}

// BenchmarkEvaluateGateway is Translate + Assess + Decide for one Gateway of each
// implementation, with 1 and with 50 listeners, through the Gateway layer over the Kubernetes
// dialect, the cluster's indexes built once (as assess over many Gateways does).
// Run with: go test -run XXX -bench EvaluateGateway -benchmem ./providers/gateway/
func BenchmarkEvaluateGateway(b *testing.B) {
	d := gateway.NewDialect(kubernetes.NewDialect(nil), nil)
	for i, bi := range benchImplementations {
		for _, n := range []int{1, 50} {
			b.Run(fmt.Sprintf("%s/listeners=%d", bi.name, n), func(b *testing.B) {
				gw, c := benchCluster(b, i, n)
				r, err := core.Evaluate(d, gw, c, core.Policy{})
				if err != nil {
					b.Fatal(err)
				}
				// Each case reads its implementation's Service and settings: not a Service
				// judged from the Gateway alone, and a PROXY-protocol reading.
				codes := map[core.Code]bool{}
				for _, r := range append(r.Exposure.Reasons, r.Exposure.Notes...) {
					codes[r.Code] = true
				}
				if codes[gateway.CodeAssumedService] || !(codes[gateway.CodeProxyProtocol] || codes[gateway.CodeProxyOptional]) {
					b.Fatalf("%s did not read its Service and PROXY protocol: %v", bi.name, codes)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := core.Evaluate(d, gw, c, core.Policy{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
