// Package gateway is for hosts that expose traffic through Gateway API: it lets any cloud's
// provider judge and fix the LoadBalancer Service a Gateway's implementation generates.
//
// Wrap puts a Gateway layer around a core.Provider (tencent, volcengine, kubernetes). Its
// dialect reads a Gateway (sigs.k8s.io/gateway-api v1 types), finds the Service the
// implementation generated for it (Envoy Gateway, Istio, Cilium, NGINX Gateway Fabric,
// Contour's provisioner, kgateway: by their labels and ownerReferences; Traefik's own published
// Service, named by its arguments or the Gateway's status; docs/gateway.md), lets
// the wrapped dialect translate that Service, and reports the verdict for the Gateway with its
// listeners, those of the ListenerSets attached to it included. What the implementation makes
// its proxy expect from the load balancer (a PROXY protocol header, per listener where a policy
// names one) and whether it is told where the client address is (the backends then need it
// kept) go into the exposure's Needs. Envoy Gateway's merged Gateways share one Service, judged
// as each of them.
//
// Each implementation is one unit, one file of this package (envoygateway.go,
// nginxgatewayfabric.go, istio.go, cilium.go, contour.go, kgateway.go, traefik.go): how it is
// recognised, how each of its settings is read as the implementation reads it, what its proxy
// then expects, where a fix goes, and the upstream source of each fact with its release. The
// rest of the package asks the units (unit.go) and names no implementation; docs/gateway.md's
// tables of implementations are generated from the units.
//
// Its driver never writes a Service another controller owns: the implementation would rewrite
// it. A change the wrapped driver plans on the Service's annotations or labels is planned on
// Gateway.spec.infrastructure.annotations / labels instead (Gateway API v1.1+, which the
// implementations copy to the Service), and a check waits until the implementation carried it
// to the Service. A change on another Service field becomes a change for the user, naming the
// implementation's own resource that sets it.
//
// The package is pure: it reads the core.Cluster and writes nothing itself; the Reconciler
// and its ClusterWriter (adapters/kube, server-side apply) write the Gateway.
package gateway
