package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loopguard/loopguard/core"
)

// version is set at build time: go build -ldflags "-X main.version=v0.1.0".
var version = ""

func newRootCommand(stdin io.Reader, stdout, stderr io.Writer) (*cobra.Command, *int) {
	code := exitOK
	root := &cobra.Command{
		Use:   "loopguard",
		Short: "Keep in-cluster clients of LoadBalancer Services and Ingresses from looping through the cloud load balancer",
		Long: `loopguard tells, for every LoadBalancer Service and Ingress, whether in-cluster clients that use
the load balancer's address loop through it (and fail, or wait ~4 s), how often, what the backend
sees as the source address, and which fix fits the cloud: intercept the VIP in the cluster, LB
source NAT, keeping clients off the backends' nodes, or DNS steering.

Reason codes in the output are listed in docs/reasons.md; loopguard.io annotations and the
ClusterProfile in docs/annotations.md.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Help and usage name the command as it was run: "kubectl loopguard" as a plugin.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: commandName()},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.CompletionOptions.DisableDefaultCmd = true
	// A flag error is a usage error like any other: exit code 2, with a hint.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{err.Error() + "\nSee '" + c.CommandPath() + " --help'."}
	})
	root.AddCommand(newAssessCommand(stdin, stdout, stderr, &code), newScanCommand(stdout, stderr, &code),
		newPlanCommand(stdin, stdout, stderr, &code), newApplyCommand(stdout, stderr, &code), newVersionCommand(stdout), newExplainCommand(stdout, &code),
		newDemoCommand(stdout, stderr, &code))
	root.AddCommand(newVerifyCommand(stdout, stderr, &code), newProbeCommand(stdout, stderr, &code))
	return root, &code
}

func newAssessCommand(stdin io.Reader, stdout, stderr io.Writer, code *int) *cobra.Command {
	o := &assessOptions{stdin: stdin}
	cmd := &cobra.Command{
		Use:   "assess -f FILE|FOLDER|- [flags]",
		Short: "Assess manifests offline: loop risk, symptom, probability and remedy for each exposure",
		Long: `assess reads Kubernetes manifests and reports, for every LoadBalancer Service and Ingress, whether
in-cluster clients loop through the load balancer, and which remedy fits. It needs no cluster and
no cloud.

Cluster facts come from the inputs themselves (Nodes, ConfigMaps such as the TKE controllers'
versions, EndpointSlices and Pods for the probabilities, TkeServiceConfigs, a ClusterProfile
document), then from --profile, then from the flags below, each overriding the one before.
The provider is --provider, else the profile's, else the one cloud whose marks the inputs carry,
else the plain Kubernetes (KEP-1860) dialect.

Exit codes: 0 every object assessed; 1 with --fail-on-risk when an object is at risk; 2 when an
input could not be read or parsed (the readable objects are still assessed and printed, the
errors go to standard error and, with -o json|yaml, into "errors").`,
		Example: `  loopguard assess -f examples/manifests
  loopguard assess -f svc.yaml -f nodes/ --profile cluster.yaml -o json
  kubectl get svc,ing,nodes,endpointslices,pods,cm -A -o yaml | loopguard assess -f - --provider tencent --proxy-mode ipvs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.set = func(name string) bool { return cmd.Flags().Changed(name) }
			rep, err := assess(o)
			if err != nil {
				*code = exitInput
				return err
			}
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
	addDiagramFlag(cmd, o)
	f := cmd.Flags()
	f.StringSliceVarP(&o.files, "filename", "f", nil, "manifests to read: a file, a folder (read recursively: .yaml, .yml, .json), or - for standard input; repeatable")
	addOutputFlags(cmd, o)
	f.BoolVar(&o.failOnRisk, "fail-on-risk", false, "exit with code 1 when an object is at risk")
	addFactsFlags(cmd, o)
	addGatewayFlags(cmd, o)
	return cmd
}

// addOutputFlags registers --profile and -o, which every command has.
func addOutputFlags(cmd *cobra.Command, o *assessOptions) {
	f := cmd.Flags()
	f.StringVar(&o.profile, "profile", "", "a ClusterProfile file (kind ClusterProfile, apiVersion loopguard.io/v1alpha1)")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
}

// addFactsFlags registers the cluster facts and policy flags, which override the profile.
func addFactsFlags(cmd *cobra.Command, o *assessOptions) {
	f := cmd.Flags()
	f.StringVar(&o.provider, flagProvider, "", "the cloud's dialect: "+strings.Join(providerNames(), ", "))
	f.StringVar(&o.kubernetesVersion, flagKubernetesVersion, "", "the API server's version, e.g. v1.30.2")
	f.StringVar(&o.proxyMode, flagProxyMode, "", "how nodes implement Services: iptables, ipvs, nftables or ebpf")
	f.StringVar(&o.kubeProxyVersion, flagKubeProxyVersion, "", "kube-proxy's version, with the cloud's revision (e.g. v1.20.6-tke.12)")
	f.StringVar(&o.ingressControllerVersion, flagIngressControllerVersion, "", "the cloud's ingress controller version (TKE: tke-ingress-controller-config VERSION)")
	f.StringVar(&o.serviceControllerVersion, flagServiceControllerVersion, "", "the cloud's service controller version (TKE: tke-service-controller-config VERSION)")
	f.StringVar(&o.ccmVersion, flagCCMVersion, "", "the cloud-controller-manager add-on's version (VKE: e.g. v1.43.0)")
	f.StringSliceVar(&o.allowlists, flagAllowlist, nil, "a capability granted to the account: "+strings.Join(capabilityNames(), ", ")+"; repeatable")
	f.StringVar(&o.prefer, flagPrefer, "", "policy: documented (the clouds' documented order), source-ip or lb-features")
	f.BoolVar(&o.allowTickets, flagAllowTickets, false, "policy: a remedy may need an allowlist that a support ticket grants")
	f.BoolVar(&o.allowDisruptive, flagAllowDisruptive, false, "policy: a remedy may need a new object (a new Service and LB address)")
	f.StringVar(&o.clients, flagClients, "", "a label selector for the in-cluster client Pods whose placement matters, e.g. app=frontend")
}

func newVersionCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print loopguard's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(stdout, versionString())
			return err
		},
	}
}

// versionString is the -X main.version value, else the module version Go recorded, else
// core.Version marked -devel, with the VCS revision when the build recorded one.
func versionString() string {
	v := version
	var rev string
	modified := false
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" {
		// Built from a checkout: the release in the source, marked as not a release build.
		v = "v" + core.Version + "-devel"
	}
	s := "loopguard " + v + " (" + runtime.Version()
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += ", " + rev
		if modified {
			s += "-dirty"
		}
	}
	return s + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")"
}

func printError(w io.Writer, err error) {
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(w, "loopguard: %s\n", ue.msg)
		return
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "unknown flag") {
		msg += "\nRun 'loopguard --help' for usage."
	}
	fmt.Fprintf(w, "loopguard: %s\n", msg)
}
