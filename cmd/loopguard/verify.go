package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loopguard/loopguard/adapters/verify"
	"github.com/loopguard/loopguard/adapters/verify/probe"
	"github.com/loopguard/loopguard/core"
)

// VerifyReport is verify's -o json|yaml document.
const VerifyReportKind = "VerifyReport"

// VerifyReport is what verify found: per exposure and client placement, predicted and
// observed side by side.
type VerifyReport struct {
	APIVersion string                  `json:"apiVersion"`
	Kind       string                  `json:"kind"`
	Exposures  []verify.ExposureReport `json:"exposures"`
	Summary    VerifySummary           `json:"summary"`
}

// VerifySummary counts placements.
type VerifySummary struct {
	Exposures int `json:"exposures"`
	Agree     int `json:"agree"`
	Disagree  int `json:"disagree"`
	// NotHeld counts placements where, with --expect-fixed, connections still fail.
	NotHeld int `json:"fixNotHeld"`
	Errors  int `json:"errors"`
}

type verifyOptions struct {
	image        string
	all          bool
	expectFixed  bool
	quiet        bool
	startTimeout time.Duration
	probe        verify.Options
}

func newVerifyCommand(stdout, stderr io.Writer, code *int) *cobra.Command {
	o := &assessOptions{}
	l := &liveOptions{}
	v := &verifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify [--kubeconfig PATH] [--context NAME] [-n NAMESPACE] [NAME...] [flags]",
		Short: "Prove the verdict on a live cluster: probe each LB address from a backend's node and from another node",
		Long: `verify measures what assess and scan predict. For each selected LoadBalancer Service (every one at
risk by default; --all for every one; or the NAMEs given, in -n NAMESPACE) it starts two
short-lived probe Pods, pinned with spec.nodeName: one on a node that holds a ready backend, one
on a node that holds none. Each runs this binary's probe subcommand (the --image must hold it)
against every address and TCP port in the Service's status.loadBalancer.ingress, opening
--connections connections each, bounded by --connect-timeout and --read-timeout, and classifies
every connection: ok, timeout or no-answer (the loop), proxy-rejected (a backend that needs the
LB's PROXY header did not get it), reset, closed, refused. verify then prints, per placement,
what core.Assess predicted for a client there and what was observed, and the path a connection
takes (client Pod, node, LB, backend node, backend Pod) and where it breaks.

The probe Pods are labelled app.kubernetes.io/managed-by=loopguard-verify, owner-referenced to
their Service, limited (10m/16Mi requested, 100m/64Mi limit, non-root, read-only, no
service-account token, activeDeadlineSeconds), and deleted when verify ends, on success,
failure, timeout or interrupt (Ctrl-C). verify creates nothing else. RBAC: docs/verify.md.

After 'loopguard apply', run verify --expect-fixed: it checks every LoadBalancer Service (the
fixed ones are no longer at risk), every placement must then work, and a placement that still
fails is reported as a fix that did not hold, with the rules the verdict rested on.

` + liveAccessHelp + `

Exit codes: 0 every placement agrees with the prediction (and, with --expect-fixed, works);
1 a placement disagrees, or with --expect-fixed still fails; 2 the cluster could not be read or
the command line is wrong; 3 a probe Pod could not run (it never started, its image could not be
pulled) or a Service has no address to probe, or verify was interrupted (Ctrl-C, SIGTERM: it
removes its probe Pods first and prints what it has).`,
		Example: `  loopguard verify --image ghcr.io/loopguard/loopguard:v0.1.0
  loopguard verify -n shop checkout --connections 10 -o yaml
  loopguard apply --object Service/shop/checkout && loopguard verify -n shop checkout --expect-fixed`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.set = func(name string) bool { return cmd.Flags().Changed(name) }
			if err := o.validateFacts(); err != nil {
				*code = exitInput
				return err
			}
			// After apply the fixed Services are no longer at risk: check every one.
			if v.expectFixed {
				v.all = true
			}
			if len(args) > 0 && l.namespace == "" {
				*code = exitInput
				return usagef("Service names need -n NAMESPACE")
			}
			if v.image == "" && version != "" {
				v.image = "ghcr.io/loopguard/loopguard:" + version
			}
			if v.image == "" {
				*code = exitInput
				return usagef("--image is required: this binary has no version stamped to name its own image")
			}
			v.probe.Image, v.probe.StartTimeout = v.image, v.startTimeout
			// Interrupted, verify still removes its Pods: Run deletes them with a context of
			// their own once this one is cancelled.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cfg, in, _, err := l.load(ctx, o, stderr)
			if err != nil {
				*code = exitInput
				return err
			}
			targets, err := verifyTargets(in, args, v.all, stderr)
			if err != nil {
				*code = exitInput
				return err
			}
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				*code = exitInput
				return err
			}
			if !v.quiet {
				v.probe.Progress = progressPrinter(stderr)
				fmt.Fprintf(stderr, "verify: %d Services, 2 probe Pods each\n", len(targets))
			}
			res, err := verify.Run(ctx, client, targets, &v.probe)
			if err != nil && !errors.Is(err, context.Canceled) {
				*code = exitInput
				return err
			}
			out := VerifyReport{APIVersion: ReportAPIVersion, Kind: VerifyReportKind, Exposures: res.Exposures,
				Summary: VerifySummary{Exposures: len(res.Exposures), Agree: res.Agree, Disagree: res.Disagree, Errors: res.Errors}}
			if v.expectFixed {
				out.Summary.NotHeld = notHeld(res)
			}
			if rerr := renderVerify(stdout, o.output, &out, v.expectFixed); rerr != nil {
				*code = exitInput
				return rerr
			}
			switch {
			case err != nil:
				*code = exitBlocked
				return fmt.Errorf("interrupted: %w (probe Pods removed)", err)
			case out.Summary.Disagree > 0 || out.Summary.NotHeld > 0:
				*code = exitAtRisk
			case out.Summary.Errors > 0:
				*code = exitBlocked
			default:
				*code = exitOK
			}
			return nil
		},
	}
	addLiveFlags(cmd, l)
	addOutputFlags(cmd, o)
	addFactsFlags(cmd, o)
	f := cmd.Flags()
	f.StringVar(&v.image, "image", "", "the loopguard image the probe Pods run (its binary has the probe subcommand); default: ghcr.io/loopguard/loopguard:<this binary's version>")
	f.StringSliceVar(&v.probe.Command, "probe-command", nil, "the probe's command in --image; default: /loopguard probe")
	f.BoolVar(&v.all, "all", false, "verify every LoadBalancer Service, not only those at risk")
	f.BoolVar(&v.expectFixed, "expect-fixed", false, "a fix was applied: every LoadBalancer Service selected (not only those at risk), and every placement must work (exit code 1, and the rules the fix rested on, when one does not)")
	f.BoolVarP(&v.quiet, "quiet", "q", false, "no progress lines on standard error")
	f.IntVar(&v.probe.Connections, "connections", probe.DefaultConnections, fmt.Sprintf("connections per address and placement (at most %d)", probe.MaxConnections))
	f.DurationVar(&v.probe.ConnectTimeout, "connect-timeout", probe.DefaultConnectTimeout, "bound on each connect")
	f.DurationVar(&v.probe.ReadTimeout, "read-timeout", probe.DefaultReadTimeout, "bound on the wait for each answer's first byte")
	f.DurationVar(&v.startTimeout, "start-timeout", 60*time.Second, "how long a probe Pod may take to start before verify gives up on it")
	f.IntVar(&v.probe.Parallel, "parallel", 4, "Services verified at once (two probe Pods each)")
	f.BoolVar(&v.probe.NoProxyCheck, "no-proxy-check", false, "do not send the one PROXY-header check connection that tells a PROXY-protocol rejection apart")
	return cmd
}

// verifyTargets are the LoadBalancer Services to verify: those named, else those at risk (or
// every one with all), each with what the dialect made of it and the nodes a probe may use.
func verifyTargets(in *inputs, names []string, all bool, stderr io.Writer) ([]verify.Target, error) {
	var list []*corev1.Node
	for _, obj := range in.set.Objects {
		if n, ok := obj.Object.(*corev1.Node); ok {
			list = append(list, n)
		}
	}
	nodes := verify.UsableNodes(list)
	d := in.entry.newDialect()
	var out []verify.Target
	found := map[string]bool{}
	for _, x := range exposures(in.set) {
		svc, ok := x.obj.Object.(*corev1.Service)
		if !ok || svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		if len(names) > 0 && !slices.Contains(names, svc.Name) {
			continue
		}
		found[svc.Name] = true
		res, err := evaluate(d, svc, in.cluster, in.profile.Policy)
		if err != nil {
			fmt.Fprintf(stderr, "loopguard: Service %s/%s: %v\n", svc.Namespace, svc.Name, err)
			continue
		}
		if len(names) == 0 && !all && res.Assessment.Risk != core.RiskAtRisk {
			continue
		}
		e := res.Exposure
		out = append(out, verify.Target{Service: svc, Exposure: &e, Nodes: nodes})
	}
	for _, n := range names {
		if !found[n] {
			return nil, fmt.Errorf("no LoadBalancer Service %q in the namespace read", n)
		}
	}
	return out, nil
}

func notHeld(r verify.Report) int {
	n := 0
	for _, e := range r.Exposures {
		for _, p := range e.Placements {
			if p.Observed != nil && p.Observed.Behaviour != verify.Works {
				n++
			}
		}
	}
	return n
}

func progressPrinter(w io.Writer) func(verify.Event) {
	start := time.Now()
	return func(e verify.Event) {
		msg := fmt.Sprintf("verify: %5.1fs %s/%s %s (node %s): %s %s", time.Since(start).Seconds(), e.Object.Namespace, e.Object.Name, e.Side, e.Node, e.Phase, e.Pod)
		if e.Detail != "" {
			msg += ": " + e.Detail
		}
		fmt.Fprintln(w, strings.TrimRight(msg, " "))
	}
}

func renderVerify(w io.Writer, format string, rep *VerifyReport, expectFixed bool) error {
	switch format {
	case "json":
		return renderJSON(w, rep)
	case "yaml":
		return renderYAML(w, rep)
	}
	bw := bufio.NewWriter(w)
	for _, e := range rep.Exposures {
		fmt.Fprintf(bw, "%s/%s (%s) %s\n", e.Object.Namespace, e.Object.Name, e.Assessment, strings.Join(e.Addresses, " "))
		if e.Error != "" {
			fmt.Fprintf(bw, "  error: %s\n\n", e.Error)
			continue
		}
		tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  CLIENT ON\tNODE\tPREDICTED\tOBSERVED\tAGREE\tCONNECTIONS")
		for _, p := range e.Placements {
			obs, conns, agree := "-", "-", "-"
			if p.Observed != nil {
				obs, conns, agree = string(p.Observed.Behaviour), countsText(p.Observed.Counts), yesNo(p.Agree)
				if expectFixed && p.Observed.Behaviour != verify.Works {
					agree += " (fix did not hold)"
				}
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", p.Side, orDash(p.Node), p.Predicted.Behaviour, obs, agree, conns)
		}
		tw.Flush()
		for _, p := range e.Placements {
			if p.Error != "" {
				fmt.Fprintf(bw, "  %s: %s\n", p.Side, p.Error)
			} else if p.Why != "" {
				fmt.Fprintf(bw, "  %s: %s\n", p.Side, p.Why)
			}
			if expectFixed && p.Observed != nil && p.Observed.Behaviour != verify.Works {
				fmt.Fprintf(bw, "  the fix did not hold from %s (node %s): observed %s (%s); the verdict rested on %s\n",
					p.Side, p.Node, p.Observed.Behaviour, countsText(p.Observed.Counts), strings.Join(e.Reasons, ", "))
			}
			if len(p.Path.Hops) > 0 {
				fmt.Fprintf(bw, "  path from %s: %s\n", p.Side, strings.ReplaceAll(p.Path.Text(), "\n", "\n  "))
			}
		}
		fmt.Fprintln(bw)
	}
	s := rep.Summary
	fmt.Fprintf(bw, "verify: %d Services, %d placements agree, %d disagree, %d without an observation", s.Exposures, s.Agree, s.Disagree, s.Errors)
	if expectFixed {
		fmt.Fprintf(bw, ", %d where the fix did not hold", s.NotHeld)
	}
	fmt.Fprintln(bw)
	return bw.Flush()
}

func countsText(c map[probe.Outcome]int) string {
	var parts []string
	for _, o := range probe.Outcomes {
		if c[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[o], o))
		}
	}
	return strings.Join(parts, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// verifyHint is the line plan and apply end with: how to see the verdict, and after apply the
// fix, on the cluster itself. After a real apply it names the Services written to when they
// share a namespace, so the line is the command to run.
func verifyHint(applying, dryRun bool, plans []ObjectPlan) string {
	if !applying || dryRun {
		return "See it on the cluster: 'loopguard verify' probes each LB address from a backend's node and from another (docs/verify.md); after apply, 'loopguard verify --expect-fixed' shows whether the fix held."
	}
	cmd := "loopguard verify --expect-fixed"
	var ns string
	var names []string
	for _, p := range plans {
		if p.Object.Kind != "Service" || (p.Status != StatusApplied && p.Status != StatusPending) {
			continue
		}
		if ns != "" && p.Object.Namespace != ns {
			names = nil
			break
		}
		ns = p.Object.Namespace
		names = append(names, p.Object.Name)
	}
	if len(names) > 0 {
		cmd = fmt.Sprintf("loopguard verify -n %s %s --expect-fixed", ns, strings.Join(names, " "))
	}
	return "Check that the fix held: '" + cmd + "' probes each LB address from a backend's node and from another (docs/verify.md)."
}
