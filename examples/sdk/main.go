// Command sdk is the platform-SDK use of loopguard a user copies: read a cluster's manifests,
// evaluate every LoadBalancer Service and Ingress with the TKE dialect, and print the plan that
// would fix each one, offline (no cluster, no cloud).
//
//	go run ./examples/sdk examples/manifests
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/adapters/manifest"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
)

func main() {
	dir := "examples/manifests"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := run(context.Background(), os.Stdout, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, dir string) error {
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

	// One value for the cloud; without a ClusterWriter the Reconciler only plans.
	prov, err := tencent.NewProvider(nil)
	if err != nil {
		return err
	}
	rec := core.NewReconciler(prov, core.WithPolicy(profile.Policy))
	for _, o := range set.Objects {
		plan, err := rec.Plan(ctx, o.Object, cluster)
		switch {
		case core.IsNotExposed(err):
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
		}
	}
	return nil
}
