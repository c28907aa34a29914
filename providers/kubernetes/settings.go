package kubernetes

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

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

// ControllerConfig is a cloud controller's own configuration as a host that knows it states
// it: its release and the settings it runs with that no Service shows (an environment
// variable that sets a default for every Service). Each unit with such settings has a type
// (HetznerController, DigitalOceanController, AWSController, OpenStackController); a host
// passes one to adapters/cloudprovider, or a profile file states the same fields (ccmVersion,
// controllerSettings).
type ControllerConfig interface {
	// Overlay writes the release (ClusterProfile.CCMVersion) and the settings
	// (ClusterProfile.ControllerSettings, by the name the controller reads) into p; a field
	// left empty states nothing.
	Overlay(p *core.ClusterProfile)
}

// overlayController states a release and name/value pairs in p, keeping p's other settings.
func overlayController(p *core.ClusterProfile, release string, kv ...string) {
	later := core.ClusterProfile{CCMVersion: release}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		if later.ControllerSettings == nil {
			later.ControllerSettings = map[string]string{}
		}
		later.ControllerSettings[kv[i]] = kv[i+1]
	}
	p.Overlay(&later)
}

// ControllerSettingNames returns, sorted, the name of every controller-level setting some unit
// reads (core.ClusterProfile.ControllerSettings keys).
func ControllerSettingNames() []string {
	var out []string
	for _, u := range registry {
		for _, s := range u.facts().settings {
			out = append(out, s.name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// SettingsFromEnv states the controller-level settings that are environment variables, as a
// fork of the cloud's controller has them: its environment (lookup is os.LookupEnv there) is
// the controller's whole environment, so a variable it does not set is stated as the value the
// controller behaves as without it ("false" for HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL), where
// one value says that; a variable whose absence depends on the controller's release (DigitalOcean's
// DEFAULT_LB_TYPE) is left out when unset. Flags and cloud config keys are not read here.
func SettingsFromEnv(lookup func(string) (string, bool)) map[string]string {
	out := map[string]string{}
	for _, u := range registry {
		for _, s := range u.facts().settings {
			if !s.env {
				continue
			}
			if v, ok := lookup(s.name); ok {
				out[s.name] = v
			} else if s.unset != "" {
				out[s.name] = s.unset
			}
		}
	}
	return out
}

// UserIPMode is the ipMode the Service's own cloud controller publishes because of an
// annotation the user wrote (its ip-mode annotation, or a PROXY-protocol switch it publishes
// Proxy for), parsed as that controller parses it; false when the Service sets none, or sets a
// value the controller rejects or ignores. The Reason (code k8s-user-ipmode) names the key and
// value. c may be nil.
func UserIPMode(svc *corev1.Service, c *core.Cluster) (corev1.LoadBalancerIPMode, core.Reason, bool) {
	if svc == nil {
		return "", core.Reason{}, false
	}
	if c == nil {
		c, _ = core.NewCluster(core.ClusterProfile{})
	}
	det := detectCloud(svc, c)
	if det.unit == nil {
		return "", core.Reason{}, false
	}
	v := &cloudView{svc: svc, c: c, f: det.unit.facts(), detected: true, why: det.why}
	return det.unit.userIPMode(v)
}

// UserIPModeNote is the note for a Service whose ipMode the user set (UserIPMode) while the
// decision's path is the other ipMode: the user's ipMode stands on its IP entries, and the note
// says what loopguard would publish instead and why. Only where the cloud's controller reads an
// ip-mode annotation, and the decision is firm, does it say how to let loopguard: a PROXY-protocol
// switch is the backends' protocol, not a knob for the path, and a tentative decision would
// change nothing yet. PlanStatus adds it; a host that carries a decision out otherwise (a
// cloud's own annotation fix) asks for it itself. ok is false when the user set no ipMode, the
// decision has no path, or they agree.
func UserIPModeNote(req *core.PlanRequest) (note core.Reason, ok bool) {
	svc, isSvc := req.Object.(*corev1.Service)
	if !isSvc || req.Result == nil {
		return core.Reason{}, false
	}
	user, why, set := UserIPMode(svc, req.Cluster)
	dec := &req.Result.Decision
	mode, path := decidedIPMode(dec)
	if !set || !path || mode == user {
		return core.Reason{}, false
	}
	var ips []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			ips = append(ips, in.IP)
		}
	}
	if len(ips) == 0 {
		return core.Reason{}, false
	}
	msg := "kept ipMode " + string(user) + " on " + strings.Join(ips, ", ") + " as the Service says (" + why.Message + "); loopguard's decision, " +
		string(dec.Remedy)
	if dec.Tentative {
		msg += " (tentative: the risk is unknown)"
	}
	msg += ", would publish " + string(mode) + ": " + strings.TrimSuffix(dec.Why, ".")
	if det := detectCloud(svc, req.Cluster); det.unit != nil && !dec.Tentative {
		if m := det.unit.facts().ipMode; m.annotation != "" {
			// "VIP" is the other value every such controller reads: Oracle lower-cases it,
			// Scaleway takes "Proxy" or "VIP" as written.
			value := "VIP"
			if mode == corev1.LoadBalancerIPModeProxy {
				value = m.proxyValue
			}
			msg += "; to let it, set " + m.annotation + ": " + quote(value)
		}
	}
	return ruleUserIPMode.Because(msg), true
}
