package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	k8sversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/loopguard/loopguard/adapters/manifest"
	"github.com/loopguard/loopguard/core"
)

// assessOptions are the assess command's flags.
type assessOptions struct {
	files      []string
	profile    string
	output     string
	failOnRisk bool
	// diagram (assess, scan) adds each result's path (diagram.go).
	diagram bool

	// Cluster facts and policy that override the profile (only those changed on the command
	// line count; see set).
	provider                 string
	kubernetesVersion        string
	proxyMode                string
	kubeProxyVersion         string
	ingressControllerVersion string
	serviceControllerVersion string
	ccmVersion               string
	allowlists               []string
	prefer                   string
	allowTickets             bool
	allowDisruptive          bool
	clients                  string

	// istioNamespace is istiod's namespace (--istio-namespace), for the Gateway layer.
	istioNamespace string

	// set reports whether a flag was given on the command line.
	set func(flag string) bool

	stdin io.Reader
	// workers decodes documents on this many goroutines; 0 means GOMAXPROCS.
	workers int
}

// usageError is a command-line mistake: nothing is assessed, exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// Flag names, shared by the command definition and the profile overrides.
const (
	flagProvider                 = "provider"
	flagKubernetesVersion        = "kubernetes-version"
	flagProxyMode                = "proxy-mode"
	flagKubeProxyVersion         = "kube-proxy-version"
	flagIngressControllerVersion = "ingress-controller-version"
	flagServiceControllerVersion = "service-controller-version"
	flagCCMVersion               = "ccm-version"
	flagAllowlist                = "allowlist"
	flagPrefer                   = "prefer"
	flagAllowTickets             = "allow-tickets"
	flagAllowDisruptive          = "allow-disruptive"
	flagClients                  = "clients"
)

var outputFormats = []string{"table", "json", "yaml"}

// validate checks flag values before anything is read, so a typo never produces a report
// that silently ignores it.
func (o *assessOptions) validate() error {
	if len(o.files) == 0 {
		return usagef("no input: give manifests with -f (a file, a folder, or - for standard input)")
	}
	if o.profile == "-" && contains(o.files, "-") {
		return usagef("standard input can be read once: give it to -f or to --profile, not both")
	}
	return o.validateFacts()
}

// validateFacts checks the flags every command shares: the output format and the cluster
// facts and policy.
func (o *assessOptions) validateFacts() error {
	ok := false
	for _, f := range outputFormats {
		ok = ok || f == o.output
	}
	if !ok {
		return usagef("--output %q: supported values: %s", o.output, quoteList(outputFormats))
	}
	if o.set(flagProvider) {
		if _, ok := findDialect(o.provider); !ok {
			return usagef("--provider %q: supported values: %s", o.provider, quoteList(providerNames()))
		}
	}
	if o.set(flagProxyMode) {
		if fe := core.ProxyMode(o.proxyMode).Validate(nil); fe != nil {
			return usagef("--proxy-mode %q: %s", o.proxyMode, fe.Detail)
		}
	}
	for _, v := range []struct{ flag, val string }{
		{flagKubernetesVersion, o.kubernetesVersion}, {flagKubeProxyVersion, o.kubeProxyVersion},
		{flagIngressControllerVersion, o.ingressControllerVersion}, {flagServiceControllerVersion, o.serviceControllerVersion},
		{flagCCMVersion, o.ccmVersion},
	} {
		if o.set(v.flag) {
			if _, err := k8sversion.ParseGeneric(v.val); err != nil {
				return usagef("--%s %q: not a version (want e.g. v1.30.2)", v.flag, v.val)
			}
		}
	}
	if o.set(flagAllowlist) {
		accepted := capabilityNames()
		for _, a := range o.allowlists {
			if !contains(accepted, a) {
				return usagef("--allowlist %q: supported values: %s", a, quoteList(accepted))
			}
		}
	}
	if o.set(flagPrefer) {
		if fe := core.Preference(o.prefer).Validate(nil); fe != nil {
			return usagef("--prefer %q: %s", o.prefer, fe.Detail)
		}
	}
	if o.set(flagClients) {
		if _, err := labels.Parse(o.clients); err != nil {
			return usagef("--clients %q: not a label selector: %v", o.clients, err)
		}
	}
	if o.set(flagIstioNamespace) {
		if errs := validation.IsDNS1123Label(o.istioNamespace); len(errs) > 0 {
			return usagef("--%s %q: not a namespace name: %s", flagIstioNamespace, o.istioNamespace, strings.Join(errs, "; "))
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// assess reads the inputs and evaluates every exposure. It returns a usage error only when
// nothing sensible can be printed; every problem with an input is in Report.Errors and the
// readable objects are still assessed.
func assess(o *assessOptions) (*Report, error) {
	in, rep, err := o.readManifests()
	if err != nil {
		return nil, err
	}
	evaluateAll(in.entry.newDialect, in.set, in.cluster, in.profile.Policy, rep, o.workers)
	if o.diagram {
		attachDiagrams(in, rep)
	}
	rep.finish()
	return rep, nil
}

// inputs are the objects and cluster facts a command evaluates, wherever they came from
// (manifests for assess and plan, a live cluster for scan and apply).
type inputs struct {
	set     *manifest.Set
	profile core.ClusterProfile
	entry   dialectEntry
	cluster *core.Cluster
}

func newReport() *Report {
	return &Report{APIVersion: ReportAPIVersion, Kind: ReportKind, Results: []Result{}, Skipped: []Skipped{}, Errors: []InputError{}}
}

// readManifests validates the flags and reads the -f inputs into cluster facts; problems
// with single inputs are in the report's errors.
func (o *assessOptions) readManifests() (*inputs, *Report, error) {
	if err := o.validate(); err != nil {
		return nil, nil, err
	}
	rep := newReport()
	reader := manifest.Reader{Stdin: o.stdin, Workers: o.workers}
	set, errs := reader.Read(o.files...)
	rep.addErrors(errs)
	in, err := o.prepare(set, rep)
	if err != nil {
		return nil, nil, err
	}
	return in, rep, nil
}

// prepare merges the profile, chooses the dialect and indexes the objects: the steps after
// reading that every command shares.
func (o *assessOptions) prepare(set *manifest.Set, rep *Report) (*inputs, error) {
	profile := o.clusterProfile(set, rep)

	entry, err := o.chooseDialect(set, &profile, rep)
	if err != nil {
		return nil, err
	}
	entry = entry.withGatewayOptions(o.gatewayOptions())
	profile.Provider = entry.name

	objs := make([]k8sruntime.Object, len(set.Objects))
	for i := range set.Objects {
		objs[i] = set.Objects[i].Object
	}
	cluster, err := core.NewCluster(profile, objs...)
	if err != nil {
		// The profile's values were validated above; this is the core refusing a selector.
		return nil, usagef("cluster facts: %v", err)
	}
	return &inputs{set: set, profile: profile, entry: entry, cluster: cluster}, nil
}

// clusterProfile merges, field by field, a ClusterProfile document among the inputs, the
// --profile file, and the command-line flags, each overriding the one before.
func (o *assessOptions) clusterProfile(set *manifest.Set, rep *Report) core.ClusterProfile {
	p := core.ClusterProfile{APIVersion: core.ProfileAPIVersion, Kind: core.ProfileKind}
	var sources []*manifest.Profile
	for i := range set.Profiles {
		in := &set.Profiles[i]
		if i > 0 {
			rep.Errors = append(rep.Errors, InputError{File: in.Source.Name, Line: in.Source.Line, Object: core.ProfileKind,
				Message: fmt.Sprintf("more than one ClusterProfile among the inputs; only the one at %s is used", set.Profiles[0].Source)})
			continue
		}
		overlayProfile(&p, in.Profile)
		sources = append(sources, in)
	}
	if o.profile != "" {
		data, err := readProfileFile(o.profile, o.stdin)
		if err != nil {
			rep.Errors = append(rep.Errors, InputError{File: o.profile, Object: core.ProfileKind, Message: err.Error()})
		} else {
			fp, errs := manifest.ReadProfile(o.profile, data)
			rep.addErrors(errs)
			if fp != nil {
				overlayProfile(&p, fp.Profile)
				sources = append(sources, fp)
			}
		}
	}
	for _, s := range sources {
		rep.Cluster.Profile = append(rep.Cluster.Profile, s.Source.String())
	}
	p.Provider, p.Allowlists = o.checkProfileNames(p, sources, rep)
	if o.overlayFlags(&p) {
		rep.Cluster.Profile = append(rep.Cluster.Profile, "flags")
	}
	return p
}

func readProfileFile(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		if stdin == nil {
			stdin = os.Stdin
		}
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}

// checkProfileNames refuses provider and allowlist names no dialect knows: core validates
// the rest of the profile, but only the host knows the dialects. Unknown values are reported
// at the line that set them and dropped.
func (o *assessOptions) checkProfileNames(p core.ClusterProfile, sources []*manifest.Profile, rep *Report) (string, []core.Capability) {
	// The last source that sets a field is the one that counts.
	where := func(path string, has func(*core.ClusterProfile) bool) manifest.Source {
		for i := len(sources) - 1; i >= 0; i-- {
			if has(sources[i].Profile) {
				return sources[i].Locate(path)
			}
		}
		return manifest.Source{}
	}
	provider := p.Provider
	if provider != "" && !o.set(flagProvider) {
		if _, ok := findDialect(provider); !ok {
			at := where("provider", func(c *core.ClusterProfile) bool { return c.Provider != "" })
			fe := field.NotSupported(field.NewPath("provider"), provider, providerNames())
			rep.Errors = append(rep.Errors, InputError{File: at.Name, Line: at.Line, Object: core.ProfileKind, Field: "provider",
				Message: fe.ErrorBody() + "; the provider is detected from the inputs instead"})
			provider = ""
		}
	}
	var caps []core.Capability
	accepted := capabilityNames()
	for i, c := range p.Allowlists {
		if contains(accepted, string(c)) {
			caps = append(caps, c)
			continue
		}
		if o.set(flagAllowlist) {
			continue // replaced by the flag anyway
		}
		path := fmt.Sprintf("allowlists[%d]", i)
		at := where(path, func(cp *core.ClusterProfile) bool { return len(cp.Allowlists) > 0 })
		fe := field.NotSupported(field.NewPath("allowlists").Index(i), c, accepted)
		rep.Errors = append(rep.Errors, InputError{File: at.Name, Line: at.Line, Object: core.ProfileKind, Field: path, Message: fe.ErrorBody()})
	}
	return provider, caps
}

func overlayProfile(dst, src *core.ClusterProfile) { dst.Overlay(src) }

// overlayFlags writes the flags given on the command line over the profile and reports
// whether there were any.
func (o *assessOptions) overlayFlags(p *core.ClusterProfile) bool {
	any := false
	str := func(flag string, d *string, v string) {
		if o.set(flag) {
			*d, any = v, true
		}
	}
	str(flagProvider, &p.Provider, o.provider)
	str(flagKubernetesVersion, &p.KubernetesVersion, o.kubernetesVersion)
	if o.set(flagProxyMode) {
		p.ProxyMode, any = core.ProxyMode(o.proxyMode), true
	}
	str(flagKubeProxyVersion, &p.KubeProxyVersion, o.kubeProxyVersion)
	str(flagIngressControllerVersion, &p.IngressControllerVersion, o.ingressControllerVersion)
	str(flagServiceControllerVersion, &p.ServiceControllerVersion, o.serviceControllerVersion)
	str(flagCCMVersion, &p.CCMVersion, o.ccmVersion)
	if o.set(flagAllowlist) {
		p.Allowlists = nil
		for _, a := range o.allowlists {
			p.Allowlists = append(p.Allowlists, core.Capability(a))
		}
		any = true
	}
	if o.set(flagPrefer) {
		pref := core.Preference(o.prefer)
		p.Policy.Prefer, any = pref, true
	}
	if o.set(flagAllowTickets) {
		p.Policy.AllowTickets, any = o.allowTickets, true
	}
	if o.set(flagAllowDisruptive) {
		p.Policy.AllowDisruptive, any = o.allowDisruptive, true
	}
	str(flagClients, &p.Clients, o.clients)
	return any
}

// maxEvidence bounds how many objects the report names as evidence for a detected provider.
const maxEvidence = 3

// chooseDialect picks the provider: the flag, else the profile, else the one cloud whose marks
// the inputs carry, else the plain Kubernetes dialect. Inputs that carry the marks of two
// clouds are a usage error: guessing would assess half of them with the wrong rules.
func (o *assessOptions) chooseDialect(set *manifest.Set, p *core.ClusterProfile, rep *Report) (dialectEntry, error) {
	if p.Provider != "" {
		d, _ := findDialect(p.Provider)
		rep.Cluster.Provider = d.name
		rep.Cluster.ProviderFrom = "profile"
		if o.set(flagProvider) {
			rep.Cluster.ProviderFrom = "flag"
		}
		return d, nil
	}
	var found []dialectEntry
	evidence := map[string][]string{}
	for _, d := range dialectEntries() {
		if d.fallback {
			continue
		}
		for i := range set.Objects {
			obj := &set.Objects[i]
			if d.recognizes(obj.Object) {
				if len(evidence[d.name]) == 0 {
					found = append(found, d)
				}
				if len(evidence[d.name]) < maxEvidence {
					evidence[d.name] = append(evidence[d.name], fmt.Sprintf("%s (%s)", obj.Ref(), obj.Source))
				}
			}
		}
	}
	switch len(found) {
	case 0:
		for _, d := range dialectEntries() {
			if d.fallback {
				rep.Cluster.Provider, rep.Cluster.ProviderFrom = d.name, "default"
				return d, nil
			}
		}
		return dialectEntry{}, usagef("no fallback dialect registered") // unreachable: the table has one
	case 1:
		d := found[0]
		rep.Cluster.Provider, rep.Cluster.ProviderFrom, rep.Cluster.Evidence = d.name, "detected", evidence[d.name]
		return d, nil
	}
	var parts []string
	for _, d := range found {
		parts = append(parts, fmt.Sprintf("%s (%s)", d.name, strings.Join(evidence[d.name], ", ")))
	}
	return dialectEntry{}, usagef("the inputs carry the marks of more than one cloud: %s; pass --provider (one of %s) or set provider in the ClusterProfile",
		strings.Join(parts, "; "), quoteList(providerNames()))
}

// exposure is one Service, Ingress or Gateway to evaluate.
type exposure struct {
	obj *manifest.Object
	// also lists earlier definitions of the same object, which the later one replaces.
	also []string
}

// exposures lists the Services and Ingresses of the inputs, once each: a later definition of
// the same object replaces an earlier one, as a sequence of kubectl applies would. The list
// keeps the order of first definitions. Duplicates are found by sorting indices rather than
// with a map keyed by object: on 10,000 Services the map was a few per cent of what plan
// allocated.
func exposures(set *manifest.Set) []*exposure {
	var objs []int32 // the exposures' indices in set.Objects
	for i := range set.Objects {
		switch set.Objects[i].Object.(type) {
		case *corev1.Service, *networkingv1.Ingress:
			objs = append(objs, int32(i))
		default:
			if isGateway(set.Objects[i].Object) {
				objs = append(objs, int32(i))
			}
		}
	}
	refs := make([]core.ObjectRef, len(objs))
	byObject := make([]int32, len(objs)) // positions in objs, sorted by object, stable
	for p, i := range objs {
		refs[p] = set.Objects[i].Ref()
		byObject[p] = int32(p)
	}
	slices.SortStableFunc(byObject, func(a, b int32) int {
		x, y := &refs[a], &refs[b]
		return cmp.Or(strings.Compare(x.Kind, y.Kind), strings.Compare(x.Namespace, y.Namespace), strings.Compare(x.Name, y.Name))
	})
	all := make([]exposure, 0, len(objs))
	slot := make([]int32, len(objs)) // for an object's first definition, its index in all + 1
	for k := 0; k < len(byObject); {
		end := k + 1
		for end < len(byObject) && refs[byObject[end]] == refs[byObject[k]] {
			end++
		}
		// byObject[k:end] are the definitions of one object, in input order: the last is used.
		e := exposure{obj: &set.Objects[objs[byObject[end-1]]]}
		for _, p := range byObject[k : end-1] {
			e.also = append(e.also, set.Objects[objs[p]].Source.String())
		}
		all = append(all, e)
		slot[byObject[k]] = int32(len(all))
		k = end
	}
	order := make([]*exposure, 0, len(all))
	for p := range objs {
		if s := slot[p]; s > 0 {
			order = append(order, &all[s-1])
		}
	}
	return order
}

// evaluateAll evaluates every exposure on several goroutines: a large input is thousands of
// independent objects. Each goroutine has its own dialect; the Cluster is only read once
// built ("built once and read by many evaluations", core.Cluster). Results are gathered in
// input order, then sorted, so the report does not depend on scheduling.
func evaluateAll(newDialect func() core.Dialect, set *manifest.Set, c *core.Cluster, policy core.Policy, rep *Report, workers int) {
	evaluateExposures(newDialect, exposures(set), c, policy, rep, workers, false)
}

// evaluateExposures is evaluateAll over exposures already listed. slim results carry only
// what a plan report shows of the verdict (the object, where it is, risk and symptom): plan
// takes the decision from the driver's plan, and building every reason and rejected remedy
// of 10,000 objects only to drop them was a tenth of plan's allocations. With slim it also
// returns each exposure's evaluation (nil where it failed), in the order of exps, for the
// Reconciler to plan from without evaluating again.
func evaluateExposures(newDialect func() core.Dialect, exps []*exposure, c *core.Cluster, policy core.Policy, rep *Report, workers int, slim bool) []*core.Result {
	// The report's results are written in place, in the order of exps, then compacted: a
	// second slice of outcomes to copy from was as large as the report.
	base := len(rep.Results)
	rep.Results = slices.Grow(rep.Results, len(exps))[:base+len(exps)]
	results := rep.Results[base:]
	errs := make([]error, len(exps))
	var full []*core.Result
	if slim {
		full = make([]*core.Result, len(exps))
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Below a few hundred objects a goroutine costs more than it saves.
	if n := len(exps) / 256; workers > n {
		workers = max(n, 1)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	dialectName := ""
	for w := 0; w < workers; w++ {
		d := newDialect()
		dialectName = d.Name()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(exps) {
					return
				}
				res, err := evaluate(d, exps[i].obj.Object, c, policy)
				if err != nil {
					errs[i] = err
					continue
				}
				if slim {
					full[i] = res
					a := &res.Assessment
					results[i] = Result{Object: refOf(res.Exposure.Object), Location: exps[i].obj.Source.String(),
						Provider: res.Exposure.Provider, Risk: string(a.Risk), Symptom: string(a.Symptom)}
					continue
				}
				results[i] = resultOf(res, exps[i].obj.Source.String())
			}
		}()
	}
	wg.Wait()
	kept := 0
	for i, e := range exps {
		err := errs[i]
		switch {
		case err == nil:
			r := &results[i]
			if r.Provider == "" {
				r.Provider = dialectName
			}
			for _, a := range e.also {
				r.Notes = append(r.Notes, reasonOf(RuleDuplicateObject.Because(
					fmt.Sprintf("Also defined at %s; the later definition at %s is used.", a, r.Location))))
			}
			if kept != i {
				results[kept] = *r
			}
			kept++
			continue
		}
		loc := e.obj.Source.String()
		ref := e.obj.Ref()
		switch {
		case errors.Is(err, core.ErrNotExposed):
			why := err.Error()
			var ke *core.KindError
			if errors.As(err, &ke) {
				why = ke.Msg
				if ke.Reason.Code != "" {
					why += " (" + string(ke.Reason.Code) + ")"
				}
			}
			rep.Skipped = append(rep.Skipped, Skipped{Object: refOf(ref), Location: loc, Why: why})
		default:
			rep.Errors = append(rep.Errors, translationErrors(e.obj, err)...)
		}
	}
	clear(results[kept:])
	rep.Results = rep.Results[:base+kept]
	return full
}

// evaluate is core.Evaluate, with a dialect's panic turned into an error for this object so
// that one bad object cannot hide the verdicts on all the others.
func evaluate(d core.Dialect, obj k8sruntime.Object, c *core.Cluster, p core.Policy) (res *core.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("internal error in the %s dialect (please report it): %v", d.Name(), r)
		}
	}()
	return core.Evaluate(d, obj, c, p)
}

// translationErrors reports a dialect's refusal at the line of each field at fault.
func translationErrors(obj *manifest.Object, err error) []InputError {
	ref := obj.Ref().String()
	var inv *core.InvalidError
	if errors.As(err, &inv) && len(inv.Errs) > 0 {
		out := make([]InputError, 0, len(inv.Errs))
		for _, fe := range inv.Errs {
			at := obj.Locate(fe.Field)
			e := *fe
			if v, ok := e.BadValue.(string); ok {
				e.BadValue = truncateValue(v)
			}
			out = append(out, InputError{File: at.Name, Line: at.Line, Object: ref, Field: fe.Field, Message: truncateMessage(e.ErrorBody())})
		}
		return out
	}
	msg := err.Error()
	msg = strings.TrimPrefix(msg, ref+": ")
	return []InputError{{File: obj.Source.Name, Line: obj.Source.Line, Object: ref, Message: truncateMessage(msg)}}
}

// Bounds on what an error message repeats of the input: a 300 KB annotation value echoed in
// full buries the message (and a CI log) under it.
const (
	maxValueInMessage = 64
	maxMessage        = 1024
)

// truncateValue shortens a value quoted in a message to its first bytes (on a character
// boundary), saying how long it was.
func truncateValue(v string) string {
	if len(v) <= maxValueInMessage {
		return v
	}
	cut := maxValueInMessage
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", v[:cut], len(v))
}

// truncateMessage bounds a whole message, for the messages that quote input loopguard did
// not produce field by field (a parser's, a dialect's).
func truncateMessage(m string) string {
	if len(m) <= maxMessage {
		return m
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (message cut at %d of %d bytes)", m[:cut], cut, len(m))
}

func (rep *Report) addErrors(errs []error) {
	for _, err := range errs {
		var me *manifest.Error
		if errors.As(err, &me) {
			rep.Errors = append(rep.Errors, InputError{File: me.Source.Name, Line: me.Source.Line, Object: me.Object, Field: me.Field, Message: truncateMessage(me.Err.Error())})
			continue
		}
		rep.Errors = append(rep.Errors, InputError{Message: truncateMessage(err.Error())})
	}
}

// refLess orders objects by namespace, kind and name, as reports list them.
func refLess(a, b ObjectRef) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	return a.Name < b.Name
}

// finish orders everything deterministically and counts.
func (rep *Report) finish() {
	less := refLess
	sort.SliceStable(rep.Results, func(i, j int) bool { return less(rep.Results[i].Object, rep.Results[j].Object) })
	sort.SliceStable(rep.Skipped, func(i, j int) bool { return less(rep.Skipped[i].Object, rep.Skipped[j].Object) })
	sort.SliceStable(rep.Errors, func(i, j int) bool {
		a, b := rep.Errors[i], rep.Errors[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	s := Summary{Assessed: len(rep.Results), Skipped: len(rep.Skipped), Errors: len(rep.Errors)}
	for _, r := range rep.Results {
		switch core.Risk(r.Risk) {
		case core.RiskAtRisk:
			s.AtRisk++
		case core.RiskNone:
			s.None++
		default:
			s.Unknown++
		}
	}
	rep.Summary = s
}

// exitCode: 2 when an input could not be read, parsed or translated; else 1 when asked to
// fail on risk and an object is at risk; else 0.
func (rep *Report) exitCode(failOnRisk bool) int {
	switch {
	case len(rep.Errors) > 0:
		return exitInput
	case failOnRisk && rep.Summary.AtRisk > 0:
		return exitAtRisk
	}
	return exitOK
}
