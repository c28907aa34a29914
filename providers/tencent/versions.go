package tencent

import (
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// Controller versions that change what an annotation or a TkeServiceConfig field does.
var (
	// l7SNATFieldVersion: from this ingress controller version layer-7 SNAT is snatEnable;
	// before it, keepaliveEnable: 1 (seeds 000/001 solution 3).
	l7SNATFieldVersion = version.MustParseGeneric("v2.9.0")
	// modeSkipVersion: mode: skip is honoured from this controller version (457/51258, 457/56112).
	modeSkipVersion = version.MustParseGeneric("v2.10.0")
)

// controllerVersion is a TKE controller's version and where it came from.
type controllerVersion struct {
	v *version.Version
	// raw is the text as found; source says where ("profile ingressControllerVersion",
	// "ConfigMap kube-system/tke-ingress-controller-config data.VERSION").
	raw, source string
	// note explains an unreadable ConfigMap value (the version is then unknown).
	note string
}

func (v controllerVersion) known() bool { return v.v != nil }

// atLeast reports Yes/No, or Unknown when the version is not known.
func (v controllerVersion) atLeast(min *version.Version) core.Fact {
	if v.v == nil {
		return core.Unknown
	}
	return dialect.FactOf(v.v.AtLeast(min))
}

// controllerVersionOf reads a controller's version from the profile (already validated by
// core.ParseProfile), else from its kube-system ConfigMap's data.VERSION (457/51258,
// 457/56112: kubectl -n kube-system get cm tke-ingress-controller-config -o
// jsonpath='{.data.VERSION}').
func controllerVersionOf(c *core.Cluster, profileValue, profileField, configMap string) controllerVersion {
	if profileValue != "" {
		v, err := version.ParseGeneric(profileValue)
		if err == nil {
			return controllerVersion{v: v, raw: profileValue, source: "profile " + profileField}
		}
		return controllerVersion{raw: profileValue, source: "profile " + profileField,
			note: "profile " + profileField + " " + profileValue + " is not a version"}
	}
	cm := c.ConfigMap(ControllerNamespace, configMap)
	if cm == nil {
		return controllerVersion{}
	}
	src := "ConfigMap " + ControllerNamespace + "/" + configMap + " data." + ControllerConfigMapVersionKey
	raw, ok := cm.Data[ControllerConfigMapVersionKey]
	if !ok || raw == "" {
		return controllerVersion{source: src, note: src + " is missing"}
	}
	v, err := version.ParseGeneric(raw)
	if err != nil {
		return controllerVersion{raw: raw, source: src, note: src + " is " + quote(raw) + ", not a version"}
	}
	return controllerVersion{v: v, raw: raw, source: src}
}

func (d *Dialect) ingressController(c *core.Cluster) controllerVersion {
	return controllerVersionOf(c, c.Profile.IngressControllerVersion, "ingressControllerVersion", IngressControllerConfigMap)
}

func (d *Dialect) serviceController(c *core.Cluster) controllerVersion {
	return controllerVersionOf(c, c.Profile.ServiceControllerVersion, "serviceControllerVersion", ServiceControllerConfigMap)
}

func quote(s string) string { return "\"" + s + "\"" }
