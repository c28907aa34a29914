package dataplane

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/internal/netlab"
	"github.com/loopguard/loopguard/internal/proxylab"
)

func TestMain(m *testing.M) {
	// Most cases wait out a client timeout rather than use the CPU (netlab rations the
	// CPU-bound builds itself), so run many at once unless the caller chose otherwise.
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", "32")
	}
	// proxylab.Main is netlab's sandbox, and stops the real-component tests' control plane.
	os.Exit(proxylab.Main(m))
}

// verdict is one side's answer for the declared client's connection.
type verdict struct {
	connected core.Fact
	// source is the kind of address the backend saw; only when connected is Yes.
	source core.SourceKind
	// failure is how the connection failed; only when connected is No.
	failure failure
}

type failure string

const (
	// failureLoop: a SYN-ACK came back from an address the client did not dial; the reply
	// short-circuited (DOMAIN.md §1), and the client's kernel answered it with a RST.
	failureLoop failure = "reply-short-circuited"
	// failureDropped: nothing answered at all (martian drop, a bridge that will not send a
	// frame back out its port, a node with no endpoint).
	failureDropped failure = "dropped"
)

func (v verdict) String() string {
	switch v.connected {
	case core.Yes:
		return "connects, source " + string(v.source)
	case core.No:
		return "fails (" + string(v.failure) + ")"
	}
	return "cannot tell"
}

// predict is the model's verdict for the declared client.
//
// For a Pod dialing the LB, Assess gives a risk and the loop probability for the declared
// client: a case is built so that probability is 0 or 1 (the lab forces the LB's pick), and
// at 1 the model says the connection fails by the reply short-circuiting (RuleSameNodeLoop).
// A probability strictly between, or an unknown verdict, is no prediction of one connection:
// "cannot tell", which never agrees with the kernel.
//
// For a Pod dialing its own Service, HairpinFacts.Assess says whether it works; when it does not,
// every kube-proxy reason it gives is a drop (martian, or a bridge that will not reflect).
func predict(c *kcase) verdict {
	if c.hairpin != nil {
		a := c.hairpin.Assess()
		v := verdict{connected: a.Works}
		switch a.Works {
		case core.Yes:
			v.source = a.Source.Kind
		case core.No:
			v.failure = failureDropped
		}
		return v
	}
	a := core.Assess(c.exposure)
	switch a.Risk {
	case core.RiskNone:
		return verdict{connected: core.Yes, source: a.Source.Kind}
	case core.RiskAtRisk:
		p := a.DeclaredClients
		switch {
		case p.Known() && p.Value() >= 1:
			return verdict{connected: core.No, failure: failureLoop}
		case p.Known() && p.Value() == 0:
			return verdict{connected: core.Yes, source: a.Source.Kind}
		}
	}
	return verdict{connected: core.Unknown}
}

// observe is the kernel's verdict, read from netlab's Result.
func observe(r netlab.Result, client string) verdict {
	if !r.Connected {
		f := failureDropped
		if len(r.StrayReplies) > 0 {
			f = failureLoop
		}
		return verdict{connected: core.No, failure: f}
	}
	return verdict{connected: core.Yes, source: sourceKind(r.Source, client)}
}

// sourceKind maps the owner of the address the backend saw to core's SourceKind:
//   - the client Pod itself → client-pod (for a Pod calling its own Service, that Pod);
//   - the VIP or the LB's address on a node link → lb-address;
//   - a node's own address AND a bridge node's cni0 address → node-address: core has one kind
//     for "a node address" (kube-proxy's masquerade picks the address of the interface the
//     packet leaves by, which is cni0 toward a Pod on the same bridge; TESTING.md §1 row 9);
//   - anything else (another Pod, an address the lab does not own) has no core kind and is
//     reported as such, so it can never agree by accident.
func sourceKind(o netlab.Origin, client string) core.SourceKind {
	switch o.Kind {
	case netlab.OriginPod:
		if o.Name == client {
			return core.SourceClientPod
		}
		return core.SourceKind("other-pod/" + o.Name)
	case netlab.OriginLB:
		return core.SourceLB
	case netlab.OriginNode, netlab.OriginNodeBridge:
		return core.SourceNode
	}
	return core.SourceKind("unowned-address")
}

// disagreement is one way the model and the kernel differ for a case.
type disagreement struct {
	field         string // "connected", "source" or "failure"
	model, kernel string
}

func (d disagreement) String() string {
	return fmt.Sprintf("%s: model %s, kernel %s", d.field, d.model, d.kernel)
}

// compare returns the first way the verdicts differ, or nil. The source is compared only
// when both connect, and the failure kind only when both fail. abstains lets a model
// "unknown" source pass when the case says why that is by design.
func compare(model, kernel verdict, abstains bool) *disagreement {
	switch {
	case model.connected != kernel.connected:
		return &disagreement{"connected", model.connected.String(), kernel.connected.String()}
	case kernel.connected == core.Yes && model.source != kernel.source:
		if abstains && model.source == core.SourceUnknown {
			return nil
		}
		return &disagreement{"source", string(model.source), string(kernel.source)}
	case kernel.connected == core.No && model.failure != kernel.failure:
		return &disagreement{"failure", string(model.failure), string(kernel.failure)}
	}
	return nil
}

// tally counts outcomes across parallel subtests for the summary.
type tally struct {
	mu         sync.Mutex
	ran        int
	agree      int
	abstained  []string       // agreeing cases where the model's unknown source is by design
	gaps       map[string]int // known model gap → cases that still disagree as recorded
	unexpected int
	noVerdict  int                 // harness errors and starved runs
	skipped    map[string][]string // skip category → case names
}

func (t *tally) add(f func(*tally)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f(t)
}

// TestModelAgreesWithKernel runs every case in its own lab, in parallel, and compares the
// model's verdict with the kernel's.
func TestModelAgreesWithKernel(t *testing.T) {
	cases := allCases()
	if err := netlab.Available(); err != nil {
		fmt.Printf("dataplane: 0 scenarios, 0 agree; all %d cases skipped: %v\n", len(cases), err)
		netlab.Require(t)
	}
	ipvsErr := netlab.IPVSAvailable()
	tl := &tally{gaps: map[string]int{}, skipped: map[string][]string{}}
	start := time.Now()
	t.Run("case", func(t *testing.T) {
		for i := range cases {
			c := &cases[i]
			t.Run(c.name, func(t *testing.T) {
				if category, detail := skipReason(c, ipvsErr); category != "" {
					tl.add(func(tl *tally) { tl.skipped[category] = append(tl.skipped[category], c.name) })
					t.Skip(category + detail)
				}
				t.Parallel()
				runCase(t, c, tl)
			})
		}
	})
	wall := time.Since(start)
	nSkipped := 0
	for _, names := range tl.skipped {
		nSkipped += len(names)
	}
	nGaps := 0
	for _, n := range tl.gaps {
		nGaps += n
	}
	fmt.Printf("dataplane: %d scenarios, %d agree, %d known model gaps, %d unexpected disagreements, %d without a verdict; %d skipped; wall %v\n",
		tl.ran, tl.agree, nGaps, tl.unexpected, tl.noVerdict, nSkipped, wall.Round(10*time.Millisecond))
	for _, g := range slices.Sorted(maps.Keys(tl.gaps)) {
		fmt.Printf("dataplane:   known model gap %s: %d scenarios\n", g, tl.gaps[g])
	}
	if len(tl.abstained) > 0 {
		slices.Sort(tl.abstained)
		fmt.Printf("dataplane:   %d agree on connectivity with the model abstaining on the source by design: %s\n",
			len(tl.abstained), strings.Join(tl.abstained, ", "))
	}
	for _, category := range slices.Sorted(maps.Keys(tl.skipped)) {
		names := tl.skipped[category]
		slices.Sort(names)
		list := ""
		if len(names) <= 6 {
			list = ": " + strings.Join(names, ", ")
		}
		fmt.Printf("dataplane:   skipped %d, %s%s\n", len(names), category, list)
	}

	// A gap entry that covers nothing any more is stale. Only judge it when every case ran
	// (a -run filter selects fewer) and the gap has cases this machine can run.
	if tl.ran+nSkipped == len(cases) && !t.Failed() {
		for _, g := range knownModelGaps {
			if tl.gaps[g.name] == 0 && runnableCases(cases, &g, ipvsErr) > 0 {
				t.Errorf("known model gap %q covers no case that ran: remove it from knownModelGaps", g.name)
			}
		}
	}
}

// skipReason says why a case does not run here: a short category the summary counts by, and
// a detail for the subtest's skip message. An empty category means it runs.
func skipReason(c *kcase, ipvsErr error) (category, detail string) {
	if c.notExpressible != "" {
		return "not expressible in netlab", ": " + c.notExpressible
	}
	if err := c.scenario.Validate(); err != nil {
		return "rejected by netlab.Validate: " + firstLine(err.Error()), ""
	}
	if ipvsErr != nil && c.dims.intercept == interceptIPVS && c.hairpin == nil {
		return "real IPVS unavailable: " + ipvsErr.Error(), ""
	}
	return "", ""
}

// runnableCases counts the cases of gap g that do not skip here.
func runnableCases(cases []kcase, g *modelGap, ipvsErr error) int {
	n := 0
	for i := range cases {
		if cat, _ := skipReason(&cases[i], ipvsErr); cat == "" && g.covers(&cases[i]) {
			n++
		}
	}
	return n
}

func runCase(t *testing.T, c *kcase, tl *tally) {
	ctx := t.Context()
	model := predict(c)
	lab, err := netlab.Build(ctx, c.scenario)
	if err != nil {
		tl.add(func(tl *tally) { tl.noVerdict++ })
		t.Fatalf("harness: %v", err)
	}
	defer func() {
		if err := lab.Close(); err != nil {
			t.Errorf("harness: %v", err)
		}
	}()
	res := lab.Connect(ctx)
	client := c.scenario.Client
	if errors.Is(res.Err, netlab.ErrStarved) {
		tl.add(func(tl *tally) { tl.noVerdict++ })
		t.Fatalf("no verdict: %v (%s)", res.Err, res.Detail)
	}
	kernel := observe(res, client)
	d := compare(model, kernel, c.sourceAbstains != "")
	detail := "" // Result.String has the detail for a failure only
	if res.Connected {
		detail = " (" + res.Detail + ")"
	}
	t.Logf("model: %v; kernel: %v; %v%s", model, kernel, res, detail)
	if c.seed != "" {
		t.Logf("seed row: %s", c.seed)
	}

	gap := gapFor(c)
	switch {
	case gap == nil && d == nil:
		tl.add(func(tl *tally) {
			tl.ran++
			tl.agree++
			if c.sourceAbstains != "" && kernel.connected == core.Yes && model.source == core.SourceUnknown {
				tl.abstained = append(tl.abstained, c.name)
			}
		})
	case gap == nil:
		tl.add(func(tl *tally) { tl.ran++; tl.unexpected++ })
		t.Errorf("model and kernel disagree: %v\nfacts: %s\n%s", d, facts(c), lab.Dump(ctx))
	case d == nil:
		tl.add(func(tl *tally) { tl.ran++; tl.agree++ })
		t.Errorf("known model gap %q no longer disagrees here (model and kernel: %v): core was fixed; narrow or remove the entry in knownModelGaps", gap.name, kernel)
	case *d != gap.disagrees:
		tl.add(func(tl *tally) { tl.ran++; tl.unexpected++ })
		t.Errorf("known model gap %q expected %v, got %v: the model or the lab changed; update knownModelGaps\nfacts: %s", gap.name, gap.disagrees, d, facts(c))
	default:
		tl.add(func(tl *tally) { tl.ran++; tl.gaps[gap.name]++ })
		t.Logf("known model gap %q: %v", gap.name, d)
	}
}

// facts is the model's side of a case, for a failure message.
func facts(c *kcase) string {
	if c.hairpin != nil {
		h := c.hairpin
		return fmt.Sprintf("HairpinFacts{Dataplane:%s SelfMasquerade:%v Attachment:%s BridgeHairpin:%v BridgeNetfilter:%v}",
			h.Dataplane, h.SelfMasquerade, h.Attachment, h.BridgeHairpin, h.BridgeNetfilter)
	}
	e := c.exposure
	a := core.Assess(e)
	return fmt.Sprintf("Exposure{Access:%q Intercept:%v InterceptMasquerades:%v LBSourceNAT:%v Binding:%s Placement:%+v} → Assess{Risk:%s DeclaredClients:%v Source:%s}",
		e.Access, e.Intercept, e.InterceptMasquerades, e.LBSourceNAT, e.Binding, e.Placement, a.Risk, a.DeclaredClients, a.Source.Kind)
}
