package drivertest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// The in-memory provider: a cloud with one switch per Service port (source NAT on the
// listener), an allowlist, refusals and a busy state. It is the smallest driver that meets
// every scenario of RunConformance, and a model for a new cloud's driver.
const (
	// MemoryName is the in-memory provider's name.
	MemoryName = "memory"
	// MemorySNAT is the capability its source NAT needs.
	MemorySNAT core.Capability = "memory-snat"
	// MemorySNATAsk is what to ask "support" for.
	MemorySNATAsk = "source NAT on the in-memory load balancer's listeners"
)

// RuleMemorySNAT is the in-memory provider's one remedy.
var ruleMemorySNAT = core.Rule{Code: "memory-lb-snat", Summary: "turn source NAT on for every listener of the Service",
	Source: "core/drivertest/memory.go (a test provider)"}

// MemoryCloud is the in-memory provider's cloud. It is safe for concurrent use.
type MemoryCloud struct {
	mu      sync.Mutex
	snat    map[string]bool
	refuse  bool
	busy    bool
	writes  int
	granted bool
}

// NewMemoryCloud returns an empty cloud that grants MemorySNAT.
func NewMemoryCloud() *MemoryCloud { return &MemoryCloud{snat: map[string]bool{}, granted: true} }

// Refuse makes the cloud refuse MemorySNAT (the account was never granted it).
func (m *MemoryCloud) Refuse() { m.mu.Lock(); m.refuse = true; m.mu.Unlock() }

// SetBusy makes every write answer "busy" while on.
func (m *MemoryCloud) SetBusy(on bool) { m.mu.Lock(); m.busy = on; m.mu.Unlock() }

// Writes counts the writes the cloud accepted.
func (m *MemoryCloud) Writes() int { m.mu.Lock(); defer m.mu.Unlock(); return m.writes }

// Set sets a listener's source NAT, as another writer would.
func (m *MemoryCloud) Set(listener string, on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if on {
		m.snat[listener] = true
	} else {
		delete(m.snat, listener)
	}
}

// State renders the listeners with source NAT on.
func (m *MemoryCloud) State() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var on []string
	for k := range m.snat {
		on = append(on, k)
	}
	sort.Strings(on)
	return strings.Join(on, ",")
}

func (m *MemoryCloud) on(listener string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snat[listener]
}

// NewMemoryProvider returns the in-memory provider over a cloud.
func NewMemoryProvider(cloud *MemoryCloud) core.Provider {
	return core.NewProvider(memoryDialect{}, &memoryDriver{cloud: cloud})
}

type memoryDialect struct{}

func (memoryDialect) Name() string       { return MemoryName }
func (memoryDialect) Rules() []core.Rule { return []core.Rule{ruleMemorySNAT} }

// Translate reads a LoadBalancer Service as a private layer-4 LB that keeps the client's
// address and that nodes do not intercept: at risk wherever clients share a node with a
// backend.
func (memoryDialect) Translate(obj runtime.Object, c *core.Cluster) (*core.Result, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil, &core.KindError{Kind: core.ErrNotExposed, Msg: fmt.Sprintf("%T is not a Service", obj)}
	}
	e, ov, err := dialect.ServiceBase(MemoryName, svc, c, core.NodeFilter{})
	if err != nil {
		return nil, err
	}
	e.Scope, e.Intercept, e.InterceptMasquerades, e.LBSourceNAT, e.ProxyProtocol = core.Private, core.No, core.No, core.No, core.No
	ov.Apply(&e)
	snat := core.Offer{Remedy: core.LBSourceNAT, Path: core.PathProxy, Action: "turn source NAT on for every listener",
		Costs: core.Costs{ClientIP: core.ClientIPLost}, Reason: ruleMemorySNAT.Reason()}
	if c == nil || !c.Profile.HasAllowlist(MemorySNAT) {
		snat.Unmet = append(snat.Unmet, core.Precondition{Kind: core.PreconditionAllowlist, Capability: MemorySNAT, Reason: ruleMemorySNAT.Reason()})
	}
	return &core.Result{Exposure: e, Offers: []core.Offer{snat, dialect.DNSSteeringOffer(&e, svc.Namespace, svc.Name, nil)}}, nil
}

type memoryDriver struct{ cloud *MemoryCloud }

var (
	_ core.Driver     = (*memoryDriver)(nil)
	_ dialect.Remover = (*memoryDriver)(nil)
)

func listenerName(svc *corev1.Service, p corev1.ServicePort) string {
	proto := p.Protocol
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	return svc.Namespace + "/" + svc.Name + ":" + string(proto) + "/" + strconv.Itoa(int(p.Port))
}

func (d *memoryDriver) Plan(_ context.Context, req *core.PlanRequest) (*core.Plan, error) {
	p := &core.Plan{Object: req.Result.Exposure.Object, Decision: req.Result.Decision}
	svc := req.Object.(*corev1.Service)
	switch p.Decision.Remedy {
	case core.LBSourceNAT:
		d.plan(p, svc, true)
		if !p.Empty() && (req.Cluster == nil || !req.Cluster.Profile.HasAllowlist(MemorySNAT)) {
			p.Block(&core.AllowlistError{Object: p.Object, Capability: MemorySNAT, Ask: MemorySNATAsk})
		}
		// The ticket is the one the block names; the plan carries it, not the decision.
		p.Decision.Tickets = nil
	case core.DNSSteering:
		p.Changes = append(p.Changes, core.Change{By: core.WriterUser, Resource: p.Object.String(), Field: "dns", To: p.Decision.Action})
	}
	return p, nil
}

// plan adds a change for each listener whose source NAT is not as wanted.
func (d *memoryDriver) plan(p *core.Plan, svc *corev1.Service, on bool) {
	for _, port := range svc.Spec.Ports {
		l := listenerName(svc, port)
		if d.cloud.on(l) == on {
			continue
		}
		ch := core.Change{By: core.WriterCloud, Resource: "listener " + l, Field: "snat",
			From: strconv.FormatBool(!on), To: strconv.FormatBool(on), Params: map[string]string{"listener": l, "on": strconv.FormatBool(on)},
			Reason: ruleMemorySNAT.Reason()}
		if on {
			ch.Needs = []core.Capability{MemorySNAT}
		}
		p.Changes = append(p.Changes, ch)
	}
}

func (d *memoryDriver) PlanRemoval(_ context.Context, req *core.PlanRequest) (*core.Plan, error) {
	svc, ok := req.Object.(*corev1.Service)
	if !ok {
		return nil, &core.KindError{Kind: core.ErrUnsupported, Msg: "only Services"}
	}
	p := &core.Plan{Object: core.ObjectRef{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name}, Removal: true}
	d.plan(p, svc, false)
	return p, nil
}

// errMemoryRefused is the cloud's answer to a capability it was not asked to grant.
var errMemoryRefused = errors.New("memory cloud: UnauthorizedOperation.SNATNotEnabled")

func (d *memoryDriver) ApplyCloud(_ context.Context, ch *core.Change) (core.ApplyResult, error) {
	l, on := ch.Params["listener"], ch.Params["on"] == "true"
	m := d.cloud
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.busy:
		return core.ApplyResult{}, &core.RetryError{After: time.Second, Msg: "memory cloud: the load balancer is busy"}
	case m.snat[l] == on:
		return core.ApplyResult{}, nil
	case on && m.refuse:
		return core.ApplyResult{}, &core.AllowlistError{Capability: MemorySNAT, Ask: MemorySNATAsk, Err: errMemoryRefused}
	}
	if on {
		m.snat[l] = true
	} else {
		delete(m.snat, l)
	}
	m.writes++
	return core.ApplyResult{Wrote: true}, nil
}
