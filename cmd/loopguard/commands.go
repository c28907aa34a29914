package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loopguard/loopguard/adapters/kube"
)

const liveAccessHelp = `Cluster access follows client-go's standard rules: --kubeconfig, else $KUBECONFIG, else
~/.kube/config, else the in-cluster service account; --context picks a context of the file.
Credentials are used to talk to the API server and never printed.`

func newScanCommand(stdout, stderr io.Writer, code *int) *cobra.Command {
	o := &assessOptions{}
	l := &liveOptions{}
	cmd := &cobra.Command{
		Use:   "scan [--kubeconfig PATH] [--context NAME] [-n NAMESPACE] [flags]",
		Short: "Assess a live cluster, read-only: the same report as assess",
		Long: `scan reads a live cluster and prints the same report as assess: for every LoadBalancer Service and
Ingress, whether in-cluster clients loop through the load balancer, and which remedy fits. It only
reads (list on Services, Ingresses, IngressClasses, Nodes, EndpointSlices, Pods, ConfigMaps in
kube-system and, where served, TkeServiceConfigs); it writes nothing.

` + liveAccessHelp + `

Facts the objects do not show (the proxy mode, kube-proxy's version, allowlists) come from
--profile and the flags below, as with assess; the provider is detected from the cluster's objects
unless given.

Exit codes: 0 every object assessed; 1 with --fail-on-risk when an object is at risk; 2 when the
cluster could not be read, an object could not be translated, or the command line is wrong.`,
		Example: `  loopguard scan --profile cluster.yaml
  loopguard scan --context prod -n shop --proxy-mode ipvs --kube-proxy-version v1.20.6-tke.12 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.set = func(name string) bool { return cmd.Flags().Changed(name) }
			if err := o.validateFacts(); err != nil {
				*code = exitInput
				return err
			}
			_, in, rep, err := l.load(cmd.Context(), o, stderr)
			if err != nil {
				*code = exitInput
				return err
			}
			evaluateAll(in.entry.newDialect, in.set, in.cluster, in.profile.Policy, rep, 0)
			if o.diagram {
				attachDiagrams(in, rep)
			}
			rep.finish()
			for _, e := range rep.Errors {
				fmt.Fprintf(stderr, "loopguard: %s\n", e)
			}
			if err := render(stdout, o.output, rep); err != nil {
				*code = exitInput
				return err
			}
			if o.diagram && o.output == "table" {
				printDiagrams(stdout, rep)
			}
			*code = rep.exitCode(o.failOnRisk)
			return nil
		},
	}
	addLiveFlags(cmd, l)
	addOutputFlags(cmd, o)
	addDiagramFlag(cmd, o)
	cmd.Flags().BoolVar(&o.failOnRisk, "fail-on-risk", false, "exit with code 1 when an object is at risk")
	addFactsFlags(cmd, o)
	addGatewayFlags(cmd, o)
	return cmd
}

func newPlanCommand(stdin io.Reader, stdout, stderr io.Writer, code *int) *cobra.Command {
	o := &assessOptions{stdin: stdin}
	cmd := &cobra.Command{
		Use:   "plan -f FILE|FOLDER|- [flags]",
		Short: "Plan offline from manifests: the concrete changes each decision needs, and what blocks them",
		Long: `plan reads manifests as assess does and prints, for every LoadBalancer Service and Ingress, the
decision and the plan that carries it out, computed by the cloud's driver:

  - each change, with who makes it (cluster: loopguard writes a Kubernetes object; user:
    loopguard does not, you do), the field, its value now and the value it gets. The CLI
    never calls a cloud API: on TKE the service and ingress controllers carry what it writes
    to the CLB (a "cloud" change appears only in hosts that use the Tencent driver's direct
    mode through the library);
  - the checks made after writing, and notes worth reading before applying;
  - what blocks the plan, by kind: not-allowlisted (the allowlist to ask the cloud's support
    for), precondition (a component too old, a fact unknown), immutable (the change needs a new
    object; --allow-disruptive), unsupported, invalid (an object the driver cannot plan for as
    it is written).

The inputs are taken as the cluster's state: nothing is read from a cluster or written. 'loopguard
apply' plans against the live cluster and writes. The plain Kubernetes dialect has no driver
(status.loadBalancer.ingress[].ipMode belongs to the cloud-controller-manager): its plans are
reported as unsupported, with the decision's action saying who can make the change.

Exit codes: 0 every plan computed (unsupported ones included); 2 when an input could not be read
or parsed, or the command line is wrong; 3 when a plan is blocked or could not be computed.`,
		Example: `  loopguard plan -f examples/manifests
  loopguard plan -f examples/volcengine -o yaml
  loopguard plan -f svc.yaml --profile cluster.yaml --allowlist clb-l4-snat --prefer source-ip -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.set = func(name string) bool { return cmd.Flags().Changed(name) }
			in, rep, err := o.readManifests()
			if err != nil {
				*code = exitInput
				return err
			}
			pl := &planner{in: in}
			prep, _, _, err := pl.plan(cmd.Context(), rep, PlanReportKind, "offline")
			if err != nil {
				*code = exitInput
				return err
			}
			prep.finish()
			return finishPlan(stdout, stderr, o.output, prep, code)
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.files, "filename", "f", nil, "manifests to read: a file, a folder (read recursively: .yaml, .yml, .json), or - for standard input; repeatable")
	addOutputFlags(cmd, o)
	addFactsFlags(cmd, o)
	addGatewayFlags(cmd, o)
	return cmd
}

func newApplyCommand(stdout, stderr io.Writer, code *int) *cobra.Command {
	o := &assessOptions{}
	l := &liveOptions{}
	cmd := &cobra.Command{
		Use:   "apply [--kubeconfig PATH] [--context NAME] [-n NAMESPACE] [--object Kind/namespace/name ...] [--dry-run] [flags]",
		Short: "Plan against a live cluster and write the changes (--dry-run: write nothing)",
		Long: `apply reads the cluster as scan does, plans every LoadBalancer Service and Ingress (or those named
with --object) against the objects as they are now, and writes the plans nothing blocks:

  - annotations by server-side apply as field manager "loopguard", never forced: a field another
    manager owns is a conflict, not a takeover;
  - TkeServiceConfig entries by read-modify-write with the resourceVersion read;
  - every field and annotation loopguard does not own is left as it is.

Every plan is computed and validated before the first write. A blocked plan writes nothing and
says why, by kind (not-allowlisted: the allowlist to ask for; precondition; immutable: a new
object is needed, applied only with --allow-disruptive). Changes loopguard does not make
(scheduling rules, DNS) are printed for you to make; with --coredns edit, dns-steering is made in
CoreDNS's Corefile, and --coredns take-back takes it out again. After writing, apply re-reads what each plan
promised. A second apply with nothing changed writes nothing and says so. --dry-run computes the
same plans against the cluster and writes nothing.

The CLI makes no cloud API calls and needs no cloud credentials: on TKE the service and ingress
controllers carry what it writes to the CLB. Writing CLB listener attributes directly (the
Tencent driver's direct mode) is for hosts that own the CLB, through the library.

` + liveAccessHelp + `

Exit codes: 0 every plan applied or already in place (or, with --dry-run, computed and not
blocked); 2 when the cluster could not be read, an object could not be translated, --object names
no Service or Ingress, or the command line is wrong; 3 when a plan is blocked or could not be
computed, a write failed, or what was written is not visible yet (apply again later).`,
		Example: `  loopguard apply --dry-run --profile cluster.yaml
  loopguard apply --context prod --object Service/shop/checkout --profile cluster.yaml
  loopguard apply -n shop --allow-tickets --allowlist clb-l4-snat -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.set = func(name string) bool { return cmd.Flags().Changed(name) }
			if err := o.validateFacts(); err != nil {
				*code = exitInput
				return err
			}
			if err := validCoreDNSMode(l.coredns); err != nil {
				*code = exitInput
				return err
			}
			want, err := l.parseObjects()
			if err != nil {
				*code = exitInput
				return err
			}
			ctx := cmd.Context()
			cfg, in, rep, err := l.load(ctx, o, stderr)
			if err != nil {
				*code = exitInput
				return err
			}
			w, err := kube.NewWriter(cfg, nil)
			if err != nil {
				*code = exitInput
				return err
			}
			dc, err := serverVersion(cfg)
			if err != nil {
				*code = exitInput
				return err
			}
			pl := &planner{in: in, writer: w, env: driverEnv{serverVersion: dc}}
			if len(want) > 0 {
				pl.selected = func(r ObjectRef) bool {
					for _, x := range want {
						if x == r {
							return true
						}
					}
					return false
				}
			}
			prep, rec, plans, err := pl.plan(ctx, rep, ApplyReportKind, "live")
			if err != nil {
				*code = exitInput
				return err
			}
			prep.DryRun = l.dryRun
			if pl.selected != nil {
				prep.keepSelected(want)
			}
			switch {
			case l.dryRun:
			case l.coredns == corednsTakeBack:
				if err := takeBackDNSSteering(ctx, cfg, prep, want); err != nil {
					*code = exitInput
					return err
				}
			case rec != nil:
				apply(ctx, rec, prep, plans)
				if l.coredns == corednsEdit {
					if err := carryOutDNSSteering(ctx, cfg, prep); err != nil {
						*code = exitInput
						return err
					}
				}
			}
			prep.finish()
			return finishPlan(stdout, stderr, o.output, prep, code)
		},
	}
	addLiveFlags(cmd, l)
	f := cmd.Flags()
	f.StringSliceVar(&l.objects, "object", nil, "plan and apply only this Service or Ingress, as Kind/namespace/name (Service/shop/checkout); repeatable")
	f.BoolVar(&l.dryRun, "dry-run", false, "compute the plans against the cluster and write nothing")
	f.StringVar(&l.coredns, "coredns", "", "carry out dns-steering in CoreDNS's Corefile (ConfigMap kube-system/coredns): edit adds a rewrite rule per load-balancer hostname between loopguard's markers; take-back removes them for the --object Services and writes nothing else; a Corefile another tool manages is reported and left alone")
	addOutputFlags(cmd, o)
	addFactsFlags(cmd, o)
	addGatewayFlags(cmd, o)
	return cmd
}

// finishPlan prints the input errors to standard error and the report, and sets the exit code.
func finishPlan(stdout, stderr io.Writer, format string, rep *PlanReport, code *int) error {
	for _, e := range rep.Errors {
		fmt.Fprintf(stderr, "loopguard: %s\n", e)
	}
	if err := renderPlan(stdout, format, rep); err != nil {
		*code = exitInput
		return err
	}
	*code = rep.exitCode()
	return nil
}

// keepSelected drops the skipped objects and translation errors of objects --object did not
// name, and reports each named object the cluster does not have.
func (rep *PlanReport) keepSelected(want []ObjectRef) {
	named := map[string]bool{}
	for _, r := range want {
		named[objectColumn(r)] = true
	}
	isExposure := func(s string) bool { return strings.HasPrefix(s, "Service ") || strings.HasPrefix(s, "Ingress ") }
	found := map[string]bool{}
	for _, p := range rep.Plans {
		found[objectColumn(p.Object)] = true
	}
	skipped := rep.Skipped[:0]
	for _, s := range rep.Skipped {
		if named[objectColumn(s.Object)] {
			skipped = append(skipped, s)
			found[objectColumn(s.Object)] = true
		}
	}
	rep.Skipped = skipped
	errs := rep.Errors[:0]
	for _, e := range rep.Errors {
		if isExposure(e.Object) && !named[e.Object] {
			continue
		}
		found[e.Object] = true
		errs = append(errs, e)
	}
	rep.Errors = errs
	for _, r := range want {
		if s := objectColumn(r); !found[s] {
			rep.Errors = append(rep.Errors, InputError{File: "--object", Object: s, Message: "no such object in the cluster"})
		}
	}
}
