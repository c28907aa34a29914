package main

import (
	"github.com/spf13/cobra"
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
		e.cloudDialect, e.cloudProvider = e.newDialect, e.newProvider
		*e = e.withGatewayOptions(nil)
	}
	return entries
}

// withGatewayOptions is e with its Gateway layer built with opts (--istio-namespace); nil
// means the layer's defaults.
func (e dialectEntry) withGatewayOptions(opts *gateway.Options) dialectEntry {
	cloudDialect := e.cloudDialect
	e.newDialect = func() core.Dialect { return gateway.NewDialect(cloudDialect(), opts) }
	if cloudProvider := e.cloudProvider; cloudProvider != nil {
		e.newProvider = func(env driverEnv) (core.Provider, error) {
			p, err := cloudProvider(env)
			if err != nil {
				return nil, err
			}
			return gateway.Wrap(p, opts), nil
		}
	}
	return e
}

// flagIstioNamespace names istiod's namespace, where Istio's class defaults are read.
const flagIstioNamespace = "istio-namespace"

// addGatewayFlags registers the Gateway layer's flags (every command that judges Gateways).
func addGatewayFlags(cmd *cobra.Command, o *assessOptions) {
	cmd.Flags().StringVar(&o.istioNamespace, flagIstioNamespace, gateway.DefaultIstioNamespace,
		"istiod's namespace, where Istio's GatewayClass defaults ConfigMaps (labelled gateway.istio.io/defaults-for-class) are read for Istio Gateways")
}

// gatewayOptions are the Gateway layer's options the flags give.
func (o *assessOptions) gatewayOptions() *gateway.Options {
	return &gateway.Options{IstioNamespace: o.istioNamespace}
}

// isGateway reports whether an input object is a Gateway to evaluate.
func isGateway(obj runtime.Object) bool { return gateway.IsGateway(obj) }

// gatewayResources are the Gateway API and implementation resources scan and apply read.
func gatewayResources() (namespaced, clusterScoped []schema.GroupVersionResource) {
	return gateway.Resources()
}

// gatewayConfigMaps are the ConfigMaps scan reads for the Gateways among read, besides
// kube-system's: Istio's parameters and class defaults (in opts' Istio namespace).
func gatewayConfigMaps(read []runtime.Object, opts *gateway.Options) []kube.ConfigMapRef {
	refs := gateway.ConfigMaps(read, opts)
	out := make([]kube.ConfigMapRef, len(refs))
	for i, r := range refs {
		out[i] = kube.ConfigMapRef(r)
	}
	return out
}

// gatewayNamespaces are the other namespaces scan -n reads for the Gateways among objs (Envoy
// Gateway's, the GatewayClasses' parameters).
func gatewayNamespaces(objs []runtime.Object, opts *gateway.Options) []string {
	return gateway.Namespaces(objs, opts)
}

// forGateways keeps, of what was read from namespace ns, what the Gateways of gatewayNS (among
// read) need.
func forGateways(objs []runtime.Object, ns, gatewayNS string, read []runtime.Object) []runtime.Object {
	return gateway.ForGatewaysOf(objs, ns, gatewayNS, read)
}
