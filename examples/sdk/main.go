// Command sdk is the platform-SDK use of loopguard a user copies: read a cluster's manifests,
// evaluate every LoadBalancer Service, Ingress and Gateway (Gateway API, through the Service its
// implementation generates) with the TKE dialect and print the plan that would fix each one; given a kubeconfig, apply each plan to that cluster (server-side apply
// under the "loopguard" field manager) and then remove what it set, as a platform SDK's
// install and uninstall would.
//
//	go run ./examples/sdk examples/manifests                          # plan only, offline
//	go run ./examples/sdk --kubeconfig ~/.kube/config examples/manifests  # plan, apply, remove
//	go run ./examples/sdk examples/gateway                           # Gateways: fixed on the Gateway
//
// With a kubeconfig the manifests' Services, Ingresses and TkeServiceConfigs must exist in
// that cluster (kubectl apply -f them first); the facts still come from the manifests.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/loopguard/loopguard/adapters/kube"
	"github.com/loopguard/loopguard/adapters/manifest"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/gateway"
	"github.com/loopguard/loopguard/providers/tencent"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "apply each plan to this cluster, then remove what loopguard set")
	flag.Parse()
	dir := "examples/manifests"
	if flag.NArg() > 0 {
		dir = flag.Arg(0)
	}
	var cfg *rest.Config
	if *kubeconfig != "" {
		var err error
		if cfg, err = clientcmd.BuildConfigFromFlags("", *kubeconfig); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if err := run(context.Background(), os.Stdout, dir, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run plans every exposed object of the manifests in dir; with cfg it applies each plan to
// that cluster and then removes what was set.
func run(ctx context.Context, w io.Writer, dir string, cfg *rest.Config) error {
	var r manifest.Reader
	set, errs := r.Read(dir)
	for _, err := range errs {
		return err // a platform SDK would collect these; the example stops at the first
	}
	var profile core.ClusterProfile
	if len(set.Profiles) > 0 {
		profile = *set.Profiles[0].Profile
	}
	objs := make([]runtime.Object, len(set.Objects))
	for i, o := range set.Objects {
		objs[i] = o.Object
	}
	cluster, err := core.NewCluster(profile, objs...)
	if err != nil {
		return err
	}

	// One value for the cloud; without a ClusterWriter the Reconciler only plans. The Gateway
	// API layer around it judges a Gateway through the Service its implementation generated
	// and plans the fix on the Gateway's spec.infrastructure (or the implementation's own
	// resource), never on that Service; Services and Ingresses are planned as without it.
	tke, err := tencent.NewProvider(&tencent.DriverOptions{Allowlists: profile.Allowlists})
	if err != nil {
		return err
	}
	prov := gateway.Wrap(tke, nil)
	opts := &core.ReconcilerOptions{Policy: profile.Policy}
	if cfg != nil {
		writer, err := kube.NewWriter(cfg, nil)
		if err != nil {
			return err
		}
		opts.ClusterWriter = writer
	}
	rec := core.NewReconciler(prov, opts)
	var applied []runtime.Object
	for _, o := range set.Objects {
		plan, err := rec.Plan(ctx, o.Object, cluster)
		switch {
		case errors.Is(err, core.ErrNotExposed):
			continue
		case err != nil:
			fmt.Fprintf(w, "%s: %v\n", o.Source, err)
			continue
		case plan.Decision.Remedy == core.RemedyNone:
			continue
		}
		fmt.Fprintln(w, plan)
		if plan.Blocked != nil {
			fmt.Fprintln(w, "  blocked:", plan.Blocked.Message)
			continue
		}
		if cfg == nil || plan.Empty() {
			continue
		}
		out, err := rec.Apply(ctx, plan)
		var pending *core.RetryError
		if errors.As(err, &pending) {
			// Written, and another controller has yet to act on it (a Gateway's implementation
			// copying the value to the Service it generated): a platform SDK requeues after
			// pending.After; this example reports it and goes on.
			fmt.Fprintln(w, "  pending:", pending.Error())
			err = nil
		}
		if err != nil {
			return fmt.Errorf("apply %s: %w", plan.Object, err)
		}
		for _, ch := range out.Written {
			fmt.Fprintln(w, "  applied:", ch.String())
		}
		for _, ch := range out.ForUser {
			fmt.Fprintln(w, "  yours to do:", ch.String())
		}
		applied = append(applied, o.Object)
	}
	// Uninstall: take back what loopguard set, and nothing that others set.
	for _, obj := range applied {
		out, err := rec.Remove(ctx, obj, cluster)
		if err != nil {
			return fmt.Errorf("remove: %w", err)
		}
		for _, ch := range out.Written {
			fmt.Fprintln(w, "  removed:", ch.String())
		}
	}
	return nil
}
