package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/loopguard/loopguard/adapters/kube/corednsedit"
	"github.com/loopguard/loopguard/core"
)

// apply --coredns: who carries out dns-steering.
const (
	// corednsPrint (the default): the plan's user change is printed for the user to make.
	corednsPrint = ""
	// corednsEdit: apply edits CoreDNS's Corefile itself (adapters/kube/corednsedit).
	corednsEdit = "edit"
	// corednsTakeBack: apply takes loopguard's rules for the --object Services back out of the
	// Corefile, and writes nothing else.
	corednsTakeBack = "take-back"
)

func validCoreDNSMode(m string) error {
	switch m {
	case corednsPrint, corednsEdit, corednsTakeBack:
		return nil
	}
	return fmt.Errorf("--coredns %q: want edit or take-back", m)
}

// corednsChange is the change the Corefile edit makes, as apply reports it.
func corednsChange(owner, from, to string) PlanChange {
	return PlanChange{By: string(core.WriterCluster), Strategy: string(core.StrategyUpdate),
		Object: &ObjectKey{APIVersion: "v1", Kind: "ConfigMap", Namespace: "kube-system", Name: "coredns"},
		Field:  "data.Corefile (lines of " + owner + ")", From: from, To: to}
}

// carryOutDNSSteering is the hook where apply carries a dns-steering decision out instead of
// printing it: for every Service whose decision is dns-steering (and not tentative), whether its
// driver left the change to the user (forUser) or has none for it (the plain dialect's CLI
// driver answers unsupported: the decision's action says who can), the rules go into CoreDNS's
// Corefile (corednsedit.Steer) and the change is reported as written. A Corefile another tool
// manages is reported as the plan's error, unwritten.
func carryOutDNSSteering(ctx context.Context, cfg *rest.Config, rep *PlanReport) error {
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for i := range rep.Plans {
		op := &rep.Plans[i]
		if op.Object.Kind != "Service" || op.Decision.Remedy != string(core.DNSSteering) || op.Decision.Tentative {
			continue
		}
		if op.Error != nil && op.Error.Kind != "unsupported" {
			continue
		}
		var rest []PlanChange
		for _, ch := range op.ForUser {
			if ch.By != string(core.WriterUser) || ch.Field != string(core.DNSSteering) {
				rest = append(rest, ch)
			}
		}
		svc, err := kc.CoreV1().Services(op.Object.Namespace).Get(ctx, op.Object.Name, metav1.GetOptions{})
		if err == nil {
			var rules []corednsedit.Rewrite
			if rules, err = corednsedit.RewritesFor(svc, nil); err == nil {
				owner := corednsedit.Owner(svc)
				var wrote bool
				if wrote, err = corednsedit.Steer(ctx, kc, owner, rules, nil); err == nil {
					op.ForUser, op.Error = rest, nil
					if wrote {
						op.Written = append(op.Written, corednsChange(owner, "", rulesText(rules)))
						op.Status = StatusApplied
					} else if op.Status != StatusApplied {
						op.Status = StatusUpToDate
					}
					continue
				}
			}
		}
		op.Status, op.Error = StatusFailed, coreDNSError(err)
	}
	return nil
}

// takeBackDNSSteering is apply --coredns take-back: loopguard's rules for each selected Service
// come out of the Corefile, byte for byte as they went in.
func takeBackDNSSteering(ctx context.Context, cfg *rest.Config, rep *PlanReport, want []ObjectRef) error {
	if len(want) == 0 {
		return errors.New("--coredns take-back needs --object: the Services whose rules to take back")
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for i := range rep.Plans {
		op := &rep.Plans[i]
		if op.Object.Kind != "Service" {
			continue
		}
		owner := "Service " + op.Object.Namespace + "/" + op.Object.Name
		op.Changes, op.Checks, op.ForUser = []PlanChange{}, []PlanCheck{}, nil
		wrote, err := corednsedit.Unsteer(ctx, kc, owner, nil)
		switch {
		case err != nil:
			op.Status, op.Error = StatusFailed, coreDNSError(err)
		case wrote:
			op.Status, op.Error = StatusApplied, nil
			op.Written = append(op.Written, corednsChange(owner, "loopguard's rewrite rules", ""))
		default:
			op.Status, op.Error = StatusUpToDate, nil
		}
	}
	return nil
}

func coreDNSError(err error) *PlanError {
	pe := planErrorOf(err)
	if errors.Is(err, corednsedit.ErrManaged) {
		pe.Kind = "managed"
	} else if errors.Is(err, corednsedit.ErrUnsupported) {
		pe.Kind = "unsupported"
	}
	return pe
}

func rulesText(rs []corednsedit.Rewrite) string {
	var lines []string
	for _, r := range rs {
		lines = append(lines, "rewrite name exact "+r.Name+" "+r.Target)
	}
	return strings.Join(lines, "\n")
}
