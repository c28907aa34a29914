package kubernetes

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/loopguard/loopguard/core"
)

// taken is how a cloud's controller took one value of a Service: every unit's parser returns
// it beside the value, so that what the controller would do with a spelling (take it, fall back
// to its default, refuse the Service) is decided in one place per setting.
type taken uint8

const (
	// valueAbsent: the key is not set; the controller's default applies.
	valueAbsent taken = iota
	// valueTaken: the controller takes the value.
	valueTaken
	// valueIgnored: the controller ignores the value and applies its default (a log line at
	// most).
	valueIgnored
	// valueRejected: the controller returns an error for the Service (or its admission
	// webhook refuses it): it applies nothing, so the load balancer and the status stay as
	// they were.
	valueRejected
)

// goBool is strconv.ParseBool, the parser of every controller that reads a Go bool: true for
// 1, t, T, TRUE, true, True; false for 0, f, F, FALSE, false, False; anything else is an error.
func goBool(v string) (b, ok bool) {
	b, err := strconv.ParseBool(v)
	return b, err == nil
}

// strictBool reads a bool annotation as a controller that fails the request on a bad value
// reads it: absent is false, anything strconv.ParseBool refuses (empty included) is rejected.
// Each unit that calls it names its controller's function at the call.
func strictBool(svc *corev1.Service, key string) (bool, taken) {
	raw, set := svc.Annotations[key]
	if !set {
		return false, valueAbsent
	}
	b, ok := goBool(raw)
	if !ok {
		return false, valueRejected
	}
	return b, valueTaken
}

// Codes of the rules every unit's parser uses to say what its controller does with a value.
const (
	codeValueRejected core.Code = "k8s-controller-rejects-value"
	codeValueIgnored  core.Code = "k8s-controller-ignores-value"
	// codeReleaseDecides: a fact differs between the controller's releases, and the release in
	// this cluster is not known.
	codeReleaseDecides core.Code = "k8s-controller-release-decides"
)

var (
	ruleValueRejected = core.Rule{Code: codeValueRejected,
		Summary: "The cloud's controller rejects this value (its parser returns an error): it applies nothing for the Service until the value is fixed, so the load balancer and the status stay as they were, and loopguard concludes nothing from the value.",
		Source:  srcClouds}
	ruleValueIgnored = core.Rule{Code: codeValueIgnored,
		Summary: "The cloud's controller ignores this value and applies its default; loopguard reads the Service the same way.",
		Source:  srcClouds}
	ruleReleaseDecides = core.Rule{Code: codeReleaseDecides,
		Summary: "What the cloud's controller does here changed between its releases, and the release this cluster runs is not known (the profile's ccmVersion, or the image tag of the controller's Pod in the inputs): the verdict is tentative and names the release that decides.",
		Source:  srcClouds}
)

// valueNote reports what the controller does with a value it does not take (valueIgnored,
// valueRejected), naming the object and the key; what is the controller's behaviour ("the
// hcloud-cloud-controller-manager reads a Go bool"), src the upstream file and tag.
func (v *cloudView) valueNote(st taken, key, what, src string) {
	obj := "Service " + v.svc.Namespace + "/" + v.svc.Name + ": " + key + ": " + quote(v.svc.Annotations[key]) + ": "
	switch st {
	case valueRejected:
		v.note(ruleValueRejected.Because(obj + what + "; it rejects this value and applies nothing for the Service, so the load balancer and the status stay as they were [" + src + "]"))
	case valueIgnored:
		v.note(ruleValueIgnored.Because(obj + what + "; it ignores this value and applies its default [" + src + "]"))
	}
}

// setting is a controller-level setting (an environment variable, a flag) as the inputs state
// it: in the profile (core.ClusterProfile.ControllerSettings), else in the environment of a Pod
// in the inputs (the controller's, as `kubectl get pods -A -o yaml` prints it).
type setting struct {
	value string
	// from says where: "the profile" or "Pod <namespace>/<name>".
	from string
	// found: stated somewhere; fromRef: the Pod takes it from a Secret or ConfigMap the inputs
	// may not hold (value is then empty).
	found, fromRef bool
}

// setting reads a controller-level setting by the name the controller reads.
func (v *cloudView) setting(name string) setting {
	if val, ok := v.c.Profile.ControllerSettings[name]; ok {
		return setting{value: val, from: "the profile", found: true}
	}
	env := podEnv(v.c, name)
	if !env.found {
		return setting{}
	}
	return setting{value: env.value, from: "Pod " + env.pod, found: true, fromRef: env.fromRef}
}

// release is the controller's release as the inputs state it: the profile's ccmVersion, else
// the tag of a Pod container image the unit names (cloudFacts.images).
type release struct {
	v    *version.Version
	raw  string
	from string
}

type releaseMemoKey struct{ unit string }

// release returns the release of the unit's controller; v is nil when it is not known.
func (v *cloudView) release() release {
	if raw := v.c.Profile.CCMVersion; raw != "" {
		p, _ := version.ParseGeneric(raw)
		return release{v: p, raw: raw, from: "the profile's ccmVersion"}
	}
	if len(v.f.images) == 0 {
		return release{}
	}
	images := v.f.images
	r, _ := v.c.Memo(releaseMemoKey{v.f.name}, func() any {
		for _, p := range v.c.Pods() {
			for _, ctr := range p.Spec.Containers {
				for _, img := range images {
					if tag, ok := imageTag(ctr.Image, img); ok {
						pv, _ := version.ParseGeneric(tag)
						return release{v: pv, raw: tag, from: "the image of Pod " + p.Namespace + "/" + p.Name}
					}
				}
			}
		}
		return release{}
	}).(release)
	return r
}

// imageTag returns the tag of image when its repository ends with repo
// ("registry.k8s.io/provider-aws/cloud-controller-manager:v1.34.0" for
// "provider-aws/cloud-controller-manager"); a digest after the tag is dropped.
func imageTag(image, repo string) (string, bool) {
	image, _, _ = strings.Cut(image, "@")
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return "", false
	}
	name, tag := image[:i], image[i+1:]
	if name != repo && !strings.HasSuffix(name, "/"+repo) {
		return "", false
	}
	return tag, true
}

// atLeast says whether the release is at least since (core.Unknown when it is not known or
// does not parse).
func (r release) atLeast(since string) core.Fact {
	if r.v == nil {
		return core.Unknown
	}
	if r.v.AtLeast(version.MustParseGeneric(since)) {
		return core.Yes
	}
	return core.No
}

// yesIf is core.Yes for true and core.No for false.
func yesIf(b bool) core.Fact {
	if b {
		return core.Yes
	}
	return core.No
}
