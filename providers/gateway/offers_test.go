package gateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/gateway"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// hetznerGateway: an Envoy Gateway Gateway on Hetzner whose generated Service has the PROXY
// protocol on and an address the nodes intercept (ipMode VIP): in-cluster clients skip the
// load balancer, so the Hetzner unit offers its hostname annotation, an edit of the Service.
const hetznerGateway = `apiVersion: v1
kind: Node
metadata: {name: n1}
spec: {providerID: "hcloud://1001"}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: eg}
spec: {controllerName: gateway.envoyproxy.io/gatewayclass-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: edge}
spec:
  gatewayClassName: eg
  listeners: [{name: http, port: 80, protocol: HTTP}]
  infrastructure:
    annotations:
      load-balancer.hetzner.cloud/uses-proxyprotocol: "true"
      load-balancer.hetzner.cloud/disable-public-network: "true"
      external-dns.alpha.kubernetes.io/hostname: web.example.com
---
apiVersion: v1
kind: Service
metadata:
  name: envoy-edge-web-1a2b3c4d
  namespace: envoy-gateway-system
  labels:
    gateway.envoyproxy.io/owning-gateway-name: web
    gateway.envoyproxy.io/owning-gateway-namespace: edge
  annotations:
    load-balancer.hetzner.cloud/uses-proxyprotocol: "true"
    load-balancer.hetzner.cloud/disable-public-network: "true"
    external-dns.alpha.kubernetes.io/hostname: web.example.com
spec:
  type: LoadBalancer
  ports: [{name: http-80, port: 80, targetPort: 10080, protocol: TCP}]
status:
  loadBalancer:
    ingress: [{ip: 10.0.0.10, ipMode: VIP}]
`

// TestGatewayOffersNameWhereEditsStick: a Gateway's offers name each edit where it holds, as
// the Driver plans it: the hostname annotation the Hetzner unit would set on the generated
// Service is offered on the Gateway's spec.infrastructure.annotations (Envoy Gateway rewrites
// the Service from there), and planning the offer gives the same edit, with the check that
// waits for Envoy Gateway to carry it to the Service.
func TestGatewayOffersNameWhereEditsStick(t *testing.T) {
	objs := decode(t, hetznerGateway)
	c, err := core.NewCluster(core.ClusterProfile{ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: "v1.37.2"}, objs...)
	if err != nil {
		t.Fatal(err)
	}
	p := gateway.Wrap(kubernetes.NewProvider(nil), nil)
	gw := find(t, objs, "Gateway", "edge", "web")
	r, err := core.Evaluate(p.Dialect(), gw, c, core.Policy{AllowDisruptive: true})
	if err != nil {
		t.Fatal(err)
	}
	const key = "load-balancer.hetzner.cloud/hostname"
	gwKey := core.ObjectKey{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", Namespace: "edge", Name: "web"}
	wantPath := []core.PathElem{{Field: "spec"}, {Field: "infrastructure"}, {Field: "annotations"}, {Field: key}}
	var hostname *core.Offer
	for i := range r.Offers {
		o := &r.Offers[i]
		if strings.HasSuffix(o.ID, "/hostname") {
			hostname = o
		}
		for _, ch := range o.Changes {
			if ch.By == core.WriterCluster && ch.Object != nil && ch.Object.Kind == "Service" {
				t.Errorf("offer %s edits the generated Service, which Envoy Gateway rewrites: %s", o.ID, ch.String())
			}
		}
	}
	if hostname == nil {
		t.Fatalf("no hostname offer among %d offers (decision %s; %s %v; notes %v)", len(r.Offers), r.Decision.Remedy, r.Assessment.Risk, r.Assessment.Reasons, r.Exposure.Notes)
	}
	if len(hostname.Changes) != 1 || hostname.Changes[0].Object == nil || *hostname.Changes[0].Object != gwKey ||
		len(hostname.Changes[0].Edits) != 1 || !cmp.Equal(hostname.Changes[0].Edits[0].Path, wantPath) || hostname.Changes[0].Edits[0].Value != "web.example.com" {
		t.Fatalf("offer %s changes %v, want %v = web.example.com on %v", hostname.ID, hostname.Changes, wantPath, gwKey)
	}

	// Planned, the chosen offer is the same edit, and a check waits for the Service.
	r.Decision.Offer, r.Decision.Remedy = hostname.ID, hostname.Remedy
	drv, ok := p.Driver()
	if !ok {
		t.Fatal("no driver")
	}
	plan, err := drv.Plan(context.Background(), &core.PlanRequest{Object: gw, Cluster: c, Result: r})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Changes) != 1 || !cmp.Equal(plan.Changes[0].Edits, hostname.Changes[0].Edits) || *plan.Changes[0].Object != gwKey {
		t.Errorf("plan %v, want the offer's %s", plan.Changes, hostname.Changes[0].String())
	}
	checked := false
	for _, chk := range plan.Checks {
		checked = checked || chk.Object.Kind == "Service" && chk.Object.Name == "envoy-edge-web-1a2b3c4d" && chk.Edit.Value == "web.example.com"
	}
	if !checked {
		t.Errorf("no check that Envoy Gateway carried the hostname to the Service: %v", plan.Checks)
	}
}
