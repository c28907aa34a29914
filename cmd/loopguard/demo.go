package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/loopguard/loopguard/cmd/loopguard/internal/demo"
)

func newDemoCommand(stdout, stderr io.Writer, code *int) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Run the whole job on the built-in examples: no cluster, no cloud, no credentials",
		Long: `demo runs what scan and apply do, on built-in example clusters, with no cluster, no cloud
and no credentials: an in-memory cluster made from the example manifests (the TKE example of
examples/manifests, the VKE example of examples/volcengine) and the in-process Tencent and
Volcengine CLB API servers, which the official SDK clients talk to. It assesses, plans and
applies through the same Reconciler and drivers as apply, assesses again and shows what changed
in the "cluster" and on the "cloud":

  1. TKE, as 'loopguard apply' does it: annotations written to the in-memory cluster;
  2. TKE, as a host that owns the CLB does it (the Tencent driver's direct mode, which the CLI
     never uses against a real cloud): listener SNAT turned on through the CLB API of the
     in-process server with the official SDK client, and read back;
  3. VKE: the CLBs' facts read through the Volcengine API (address type, PROXY protocol),
     then what can be fixed, and what is left for you and why.

go run ./cmd/loopguard/demo runs the same without the rest of the CLI. Progress goes to
standard error, the report to standard output.

Exit codes: 0 every exposure the demo could fix is safe afterwards (the others say why not);
3 otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := demo.Run(cmd.Context(), stdout, stderr)
			if err != nil {
				*code = exitBlocked
				return err
			}
			if !res.Safe {
				*code = exitBlocked
			}
			return nil
		},
	}
}
