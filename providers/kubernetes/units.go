package kubernetes

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// A unit is everything loopguard knows about one cloud's (or one bare-metal implementation's)
// load balancers, in one file, cloud_<name>.go, with its tests beside it: how the cloud is
// recognised, how its controller reads each setting of a Service, what its load balancer does
// to the client's address, what the backends then expect, the fixes a user can make there, and
// the upstream source (file and tag) of every fact. The shared code of this package asks the
// units through the hooks below and names no cloud; registry.go is the one place that lists
// them, and docs/clouds.md is generated from them (TestCloudsTable).
//
// A unit embeds cloudBase and writes only what differs from its defaults, as external-dns's
// providers embed BaseProvider.
type cloud interface {
	// facts returns the unit's static facts (recognition, defaults, sources, its row of
	// docs/clouds.md). The pointer is the unit's identity.
	facts() *cloudFacts
	// read parses every setting of v.svc that the cloud's controller reads, exactly as that
	// controller parses it, into v.rd: what the load balancer does to the source address,
	// what the backends expect, the values the controller rejects or ignores, and the settings
	// the inputs do not show. It is asked for every unit whose annotations the Service carries,
	// and for the unit of the cloud the exposure is on (v.detected): only then may it state
	// the cloud's defaults (cloudView.byDefault) and what the controller does with ipMode.
	read(v *cloudView)
	// fixes lists the remedies a user can make on this cloud, once the exposure is known
	// (v.e, v.st, v.dp, v.rd). Asked only of the detected unit.
	fixes(v *cloudView) []cloudFix
	// userIPMode is the ipMode the controller publishes because of an annotation the user
	// wrote on the Service (its own ip-mode or PROXY switch), parsed as the controller does;
	// false when the Service says nothing the controller would act on.
	userIPMode(v *cloudView) (corev1.LoadBalancerIPMode, core.Reason, bool)
}

// cloudBase gives a unit the defaults: the row's source NAT when nothing else decides, the
// standard fixes its facts allow (a hostname annotation, an ipMode annotation, an upgrade of
// a controller that publishes Proxy by itself), and no user ipMode.
type cloudBase struct{}

func (cloudBase) read(v *cloudView)             { v.rowDefault() }
func (cloudBase) fixes(v *cloudView) []cloudFix { return standardFixes(v) }
func (cloudBase) userIPMode(*cloudView) (corev1.LoadBalancerIPMode, core.Reason, bool) {
	return "", core.Reason{}, false
}

// cloudFacts are a unit's static facts. A field no public source states stays at its zero
// value (unknown); the loopguard.io annotations override every one of them.
type cloudFacts struct {
	// name is the unit's stable name: offer IDs ("hetzner/hostname") and messages.
	name string
	// title names the cloud for people (docs/clouds.md).
	title string
	// classes are spec.loadBalancerClass values that select this implementation;
	// annotationPrefixes are annotation key prefixes only this cloud's controller reads;
	// providerIDPrefixes are the Node spec.providerID prefixes its controller sets.
	classes, annotationPrefixes, providerIDPrefixes []string
	// sourceNAT says whether the default load balancer replaces the client's source address
	// (a proxy: Yes; pass-through: No). Unknown when the unit decides per Service in read, or
	// no source says.
	sourceNAT core.Fact
	// hostnameAnnotation makes the controller publish a hostname instead of the IP, so no node
	// intercepts the address; hostnameValue is its value ("" means a DNS name that resolves to
	// the load balancer, the user's; anything else is the literal value).
	hostnameAnnotation, hostnameValue string
	// hostnameOn, when set, is how the controller reads a switch hostnameAnnotation
	// (strconv.ParseBool for most): a value it reads as on is not "declined".
	hostnameOn func(string) bool
	// ipMode is what the controller does with status.loadBalancer.ingress[].ipMode.
	ipMode ccmIPMode
	// noBox: there is no load-balancer box in front of the nodes (MetalLB, kube-vip, Cilium
	// LB IPAM): the nodes announce the address and their service proxy answers it.
	noBox bool
	// scope and scopeClasses are the cloud's internal-LB annotations and classes (scope.go).
	scope        []ScopeAnnotation
	scopeClasses []ScopeClass
	// rules are the unit's own documented rules (docs/reasons.md).
	rules []core.Rule
	// settings are the controller-level settings the unit reads (environment variables,
	// flags, cloud config keys), by the name the controller reads
	// (core.ClusterProfile.ControllerSettings).
	settings []controllerSetting
	// images are the controller's image repositories ("hetznercloud/hcloud-cloud-controller-manager"):
	// the tag of a Pod's image in the inputs is its release when the profile has no ccmVersion.
	images []string
	// source cites the public sources of the defaults above.
	source string
	// doc is the unit's row of docs/clouds.md.
	doc cloudDoc
}

// controllerSetting is one setting of a cloud's controller that no Service shows.
type controllerSetting struct {
	// name is what the controller reads.
	name string
	// env: an environment variable, which a fork of the controller shares (SettingsFromEnv);
	// otherwise a flag or a cloud config key.
	env bool
	// unset is the value the controller behaves as when the variable is not set, when it
	// behaves as one ("false"); "" when unset means something no value says.
	unset string
}

// cloudDoc is a unit's row of the users' table (docs/clouds.md): recognition comes from the
// facts; these cells say the rest, each with its upstream source.
type cloudDoc struct {
	// lb: what the load balancer does to the client's source address.
	lb string
	// backend: what the backends then expect (PROXY protocol, X-Forwarded-For, nothing).
	backend string
	// status: what the controller publishes in status.loadBalancer.ingress.
	status string
	// remedy: the fixes loopguard offers there.
	remedy string
	// sources: upstream files with the tag read, and public pages.
	sources string
}

// ccmIPMode is how a cloud's controller publishes ipMode, as its source shows. It decides what
// loopguard offers when the backends need the load balancer and the nodes intercept its
// address: publishing Proxy is the controller's to do, so on a cloud whose controller never
// does, that offer is unsupported and the cloud's own knob (a hostname) is offered instead.
type ccmIPMode struct {
	// read: the controller's source was read for this; when false nothing below is known.
	read bool
	// withProxyProtocol: the controller publishes Proxy by itself while the Service turns the
	// PROXY protocol on (on every port, for Scaleway); since is the first release that does.
	withProxyProtocol bool
	since             string
	// annotation, when set, is read by the controller for the ipMode; proxyValue is the value
	// that makes it publish Proxy, compared case-insensitively when foldCase.
	annotation, proxyValue string
	foldCase               bool
	// offerRule, when set, is the rule of the offer that sets the annotation (a cloud's own
	// documented fix); otherwise the generic k8s-offer-ccm-ipmode-annotation.
	offerRule core.Rule
	// source cites the controller source read.
	source string
}

// cloudView is what a unit's hooks see of one Translate: the Service, the cluster, and, for
// fixes, what the shared code made of them. One view serves every unit asked, so a unit must
// not keep it.
type cloudView struct {
	svc    *corev1.Service
	c      *core.Cluster
	protos core.Protocols
	// f is the facts of the unit being asked; detected says it is the cloud the exposure is
	// on, and why from what (a class, an annotation, the Nodes' providerID).
	f          *cloudFacts
	detected   bool
	why        string
	ownsStatus bool
	rd         cloudReading

	// st is the status's facts (the view holds them, so that they are not a separate
	// allocation). e and dp are set before fixes is asked.
	st statusFacts
	e  *core.Exposure
	dp *dataplane
}

// cloudReading is what the units asked concluded about one Service.
type cloudReading struct {
	// snat: source NAT from the Service's own settings; defaults: the cloud's default, used
	// only when snat is empty; unseen: what decides the default and the inputs do not show.
	snat, defaults []snatFact
	unseen         []core.Reason
	// header: the backends expect the PROXY protocol; tls: the load balancer ends TLS and the
	// backends speak plain text.
	header []proxyHeaderFact
	tls    []core.Reason
	// notes: values the controller rejects or ignores, versions that decide a fact.
	notes []core.Reason
	// ccmProxy: the controller publishes ipMode Proxy for this Service by itself (the PROXY
	// protocol is on), since ccmSince; ccmSource cites why when it is not the facts' source.
	ccmProxy            bool
	ccmSince, ccmSource string
	// vipHint is added to the intercept offer's action: the cloud's own knob for ipMode VIP.
	vipHint string
	// kind is what the detected unit concluded its load balancer is ("REGIONAL_NETWORK"), and
	// kindFrom what says so, for its fixes.
	kind, kindFrom string
	// throughLBUnmet is added to the generic "publish ipMode Proxy" offer whoever publishes
	// the status (a load balancer that needs the nodes to answer its address).
	throughLBUnmet []core.Precondition
}

// sourceNAT records a conclusion from the Service's own settings.
func (v *cloudView) sourceNAT(nat, proxy core.Fact, r core.Reason) {
	v.rd.snat = append(v.rd.snat, snatFact{nat: nat, proxy: proxy, reason: r})
}

// byDefault records the cloud's default for a Service that says nothing; only the detected
// unit's count.
func (v *cloudView) byDefault(nat, proxy core.Fact, r core.Reason) {
	if v.detected {
		v.rd.defaults = append(v.rd.defaults, snatFact{nat: nat, proxy: proxy, reason: r})
	}
}

// unseenSetting names, for the detected unit, the setting that decides the default and what
// to confirm.
func (v *cloudView) unseenSetting(msg string) {
	if v.detected {
		v.rd.unseen = append(v.rd.unseen, ruleCloudDefaultUnseen.Because(msg))
	}
}

// expects records that the backends expect the PROXY protocol (version "v1", "v2" or "").
func (v *cloudView) expects(version string, r core.Reason) {
	v.rd.header = append(v.rd.header, proxyHeaderFact{version: version, reason: r})
}

// needsTLS records that the load balancer ends TLS and the backends speak plain text.
func (v *cloudView) needsTLS(r core.Reason) { v.rd.tls = append(v.rd.tls, r) }

// userSet is the reason for an ipMode the user's own annotation makes the controller publish.
func (v *cloudView) userSet(key string, mode corev1.LoadBalancerIPMode, src string) core.Reason {
	r := ruleUserIPMode.Because("Service " + v.svc.Namespace + "/" + v.svc.Name + ": " + key + ": " + quote(v.svc.Annotations[key]) +
		": the " + v.f.name + " controller publishes ipMode " + string(mode) + " [" + src + "]")
	return r
}

// note records a value the controller rejects or ignores, naming the object and the key.
func (v *cloudView) note(r core.Reason) { v.rd.notes = append(v.rd.notes, r) }

// on is " (<why the cloud was recognised>)" for messages.
func (v *cloudView) on() string { return " (" + v.why + ")" }

// rowDefault is cloudBase's read: the facts' source NAT, stated when the unit is detected.
func (v *cloudView) rowDefault() {
	f := v.f
	if !v.detected || f.sourceNAT == core.Unknown {
		return
	}
	what := "passes the client's address through"
	if f.sourceNAT == core.Yes {
		what = "is a proxy: the backend sees the load balancer's address"
	}
	v.byDefault(f.sourceNAT, core.Unknown, ruleCloudDefault.Because(f.name+": the load balancer "+what+v.on()+" ["+f.source+"]"))
}

// needsLB says the backends need what only the load balancer adds.
func (v *cloudView) needsLB() bool {
	return v.e.Needs.Any() == core.Yes || v.e.ProxyProtocol == core.Yes
}

// detection is which unit an exposure is on and why, and which units' annotations the
// Service carries (bit i: registry[i]).
type detection struct {
	unit      cloud
	why       string
	annotated uint64
}

// marks are the units' recognition marks, flattened once: i is the unit's index in registry.
type mark struct {
	s string
	i int
}

var annotationMarks, classMarks, providerIDMarks = func() (ann, cls, node []mark) {
	for i, u := range registry {
		f := u.facts()
		for _, p := range f.annotationPrefixes {
			ann = append(ann, mark{p, i})
		}
		for _, c := range f.classes {
			cls = append(cls, mark{c, i})
		}
		for _, p := range f.providerIDPrefixes {
			node = append(node, mark{p, i})
		}
	}
	return ann, cls, node
}()

// detectCloud finds the cloud from, in order, the Service's loadBalancerClass, its annotations,
// and the Nodes' providerID. An object's own marks win over the cluster's, because a bare-metal
// implementation (MetalLB) can run on a cloud's nodes.
func detectCloud(svc *corev1.Service, c *core.Cluster) detection {
	var det detection
	// Annotations of two clouds say nothing (a manifest copied between clouds); the smallest
	// key names the evidence, so the message does not depend on map order.
	byAnn, key, two := -1, "", false
	for k := range svc.Annotations {
		for _, m := range annotationMarks {
			if !strings.HasPrefix(k, m.s) {
				continue
			}
			det.annotated |= 1 << m.i
			switch {
			case byAnn < 0:
				byAnn, key = m.i, k
			case byAnn != m.i:
				two = true
			case k < key:
				key = k
			}
		}
	}
	if cls := svc.Spec.LoadBalancerClass; cls != nil {
		for _, m := range classMarks {
			if m.s == *cls {
				det.unit, det.why = registry[m.i], "spec.loadBalancerClass "+*cls
				return det
			}
		}
	}
	switch {
	case two:
		return det
	case byAnn >= 0:
		det.unit, det.why = registry[byAnn], "annotation "+key
		return det
	case c == nil:
		return det
	}
	n, _ := c.Memo(cloudMemoKey{}, func() any { return nodeCloud(c) }).(detection)
	det.unit, det.why = n.unit, n.why
	return det
}

type cloudMemoKey struct{}

// nodeCloud reads the Nodes' spec.providerID: the cloud only when every Node that has one
// agrees.
func nodeCloud(c *core.Cluster) detection {
	var found detection
	for _, n := range c.Nodes() {
		id := n.Spec.ProviderID
		if id == "" {
			continue
		}
		unit := -1
		for _, m := range providerIDMarks {
			if strings.HasPrefix(id, m.s) {
				unit = m.i
			}
		}
		if unit < 0 || found.unit != nil && found.unit != registry[unit] {
			return detection{}
		}
		if found.unit == nil {
			found = detection{unit: registry[unit], why: "Node " + n.Name + " spec.providerID " + id}
		}
	}
	return found
}

// readClouds asks the units the Service concerns to read it into v.rd.
func readClouds(v *cloudView, det *detection) {
	for i, u := range registry {
		if det.annotated&(1<<i) == 0 && u != det.unit {
			continue
		}
		v.f, v.detected, v.why = u.facts(), u == det.unit, det.why
		u.read(v)
	}
	if det.unit != nil {
		v.f, v.detected, v.why = det.unit.facts(), true, det.why
	}
}

// unitNamed returns the registry's unit of that name, for tests and the docs table.
func unitNamed(name string) cloud {
	for _, u := range registry {
		if u.facts().name == name {
			return u
		}
	}
	return nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
