package kubernetes

import (
	"github.com/loopguard/loopguard/core"
)

// Some clouds' defaults are not the Service's to say: a cluster-wide setting of the cloud's
// controller decides (an environment variable, a flag, a cloud config file), or the cloud
// API's own default, which no public source states. Where the inputs show the setting (the
// controller's Pod with its environment), the unit reads it; otherwise the exposure's note
// names the setting and what to confirm, and the fact stays unknown.

// controllerEnv is one environment variable of a Pod container in the inputs.
type controllerEnv struct {
	pod, value string
	fromRef    bool // valueFrom: a Secret or ConfigMap the inputs may not hold
	found      bool
}

type envMemoKey struct{ name string }

// podEnv finds the first Pod container in the inputs that sets the variable (the cloud's
// controller, as `kubectl get pods -A` shows it).
func podEnv(c *core.Cluster, name string) controllerEnv {
	if c == nil {
		return controllerEnv{}
	}
	e, _ := c.Memo(envMemoKey{name}, func() any {
		for _, p := range c.Pods() {
			for _, ctr := range p.Spec.Containers {
				for _, v := range ctr.Env {
					if v.Name == name {
						return controllerEnv{pod: p.Namespace + "/" + p.Name, value: v.Value, fromRef: v.ValueFrom != nil, found: true}
					}
				}
			}
		}
		return controllerEnv{}
	}).(controllerEnv)
	return e
}
