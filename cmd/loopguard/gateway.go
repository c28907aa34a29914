package main

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loopguard/loopguard/adapters/kube"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/gateway"
)

// withGateways puts the Gateway API layer (providers/gateway) around every cloud's dialect and
// provider: a Gateway is judged through the Service its implementation generated, and its
// remedies are planned where the implementation copies them from (docs/gateway.md).
func withGateways(entries []dialectEntry) []dialectEntry {
	for i := range entries {
		e := &entries[i]
		newDialect := e.newDialect
		e.newDialect = func() core.Dialect { return gateway.NewDialect(newDialect(), nil) }
		if newProvider := e.newProvider; newProvider != nil {
			e.newProvider = func(env driverEnv) (core.Provider, error) {
				p, err := newProvider(env)
				if err != nil {
					return nil, err
				}
				return gateway.Wrap(p, nil), nil
			}
		}
	}
	return entries
}

// isGateway reports whether an input object is a Gateway to evaluate.
func isGateway(obj runtime.Object) bool { return gateway.IsGateway(obj) }

// gatewayResources are the Gateway API and implementation resources scan and apply read.
func gatewayResources() (namespaced, clusterScoped []schema.GroupVersionResource) {
	return gateway.Resources()
}

// gatewayConfigMaps are the ConfigMaps scan reads for the Gateways among read, besides
// kube-system's: Istio's parameters and class defaults.
func gatewayConfigMaps(read []runtime.Object) []kube.ConfigMapRef {
	refs := gateway.ConfigMaps(read, nil)
	out := make([]kube.ConfigMapRef, len(refs))
	for i, r := range refs {
		out[i] = kube.ConfigMapRef(r)
	}
	return out
}

// gatewayNamespaces are the other namespaces scan -n reads for the Gateways among objs (Envoy
// Gateway's, the GatewayClasses' parameters).
func gatewayNamespaces(objs []runtime.Object) []string { return gateway.Namespaces(objs, nil) }

// forGateways keeps, of what was read from namespace ns, what the Gateways of gatewayNS (among
// read) need.
func forGateways(objs []runtime.Object, ns, gatewayNS string, read []runtime.Object) []runtime.Object {
	return gateway.ForGatewaysOf(objs, ns, gatewayNS, read)
}
