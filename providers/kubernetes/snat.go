package kubernetes

import (
	"strings"

	"github.com/loopguard/loopguard/core"
)

// Whether the load balancer replaces the client's source address is not something a generic
// cloud says: the units read it from their controllers' settings and documented defaults
// (cloud_<name>.go); every unit is conservative (a value its controller would not act on draws
// no conclusion) and the loopguard.io/lb-source-nat annotation overrides them.

// snatFact is one conclusion about source NAT and what it rests on.
type snatFact struct {
	nat    core.Fact
	proxy  core.Fact // PROXY protocol, when the unit says so
	reason core.Reason
}

// applySourceNAT sets LBSourceNAT and ProxyProtocol on e from the units' facts; without any,
// it notes what is missing: the cloud's unseen setting where one decides, else the generic
// request to declare it.
func applySourceNAT(e *core.Exposure, facts []snatFact, unseen []core.Reason) {
	if len(facts) == 0 {
		if len(unseen) == 0 {
			unseen = []core.Reason{ruleSNATUndeclared.Reason()}
		}
		e.Notes = append(e.Notes, unseen...)
		return
	}
	nat := facts[0].nat
	for _, f := range facts[1:] {
		if f.nat != nat {
			msgs := make([]string, len(facts))
			for i := range facts {
				msgs[i] = facts[i].reason.Message
			}
			e.Notes = append(e.Notes, ruleSNATConflict.Because(strings.Join(msgs, "; ")))
			return
		}
	}
	e.LBSourceNAT = nat
	for _, f := range facts {
		if f.proxy != core.Unknown {
			e.ProxyProtocol = f.proxy
		}
		e.Reasons = append(e.Reasons, f.reason)
	}
}
