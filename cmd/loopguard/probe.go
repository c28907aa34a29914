package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/loopguard/loopguard/adapters/verify/probe"
)

// newProbeCommand is what a verify probe Pod runs: the same static binary, so the probe
// image is the loopguard image (distroless: no shell, no curl needed). Hidden: people run
// verify, which runs this.
func newProbeCommand(stdout, stderr io.Writer, code *int) *cobra.Command {
	var (
		spec      probe.Spec
		send      string
		termLog   string
		withTries bool
	)
	cmd := &cobra.Command{
		Use:    "probe [flags] HOST:PORT...",
		Short:  "Open bounded TCP connections to each address and print what happened, as JSON (run by verify's probe Pods)",
		Hidden: true,
		Long: `probe opens --connections TCP connections, one after another, to each HOST:PORT, each bounded
by --connect-timeout and --read-timeout, sends a request and classifies each connection: ok,
timeout, no-answer, proxy-rejected, reset, closed, refused, unreachable, dns-error, error
(docs/verify.md says how each is detected). It prints the report as JSON on standard output and,
with --termination-log, a compact copy (counts and latencies) to that file, which Kubernetes
returns in the Pod's status.

Exit codes: 0 the probe ran (whatever the connections did); 2 the command line is wrong.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec.Targets = args
			switch send {
			case "http":
			case "none":
				spec.Payload = []byte{}
			default:
				*code = exitInput
				return &usageError{fmt.Sprintf("--send %q: want http or none", send)}
			}
			rep, err := probe.Run(cmd.Context(), spec)
			if err != nil {
				*code = exitInput
				return err
			}
			if termLog != "" {
				b, err := json.Marshal(rep.Compact())
				if err == nil {
					err = os.WriteFile(termLog, b, 0o644)
				}
				if err != nil {
					fmt.Fprintf(stderr, "loopguard probe: writing %s: %v\n", termLog, err)
				}
			}
			out := rep
			if !withTries {
				out = rep.Compact()
			}
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(out)
		},
	}
	f := cmd.Flags()
	f.IntVar(&spec.Connections, "connections", probe.DefaultConnections, fmt.Sprintf("connections per address (at most %d)", probe.MaxConnections))
	f.DurationVar(&spec.ConnectTimeout, "connect-timeout", probe.DefaultConnectTimeout, "bound on each connect (avoid exactly 1s and 3s: SYN retransmissions land there)")
	f.DurationVar(&spec.ReadTimeout, "read-timeout", probe.DefaultReadTimeout, "bound on the wait for the first byte of an answer")
	f.BoolVar(&spec.ProxyCheck, "proxy-check", true, "when a connection is reset or closed without an answer, try once more with a PROXY v1 header to tell a PROXY-protocol rejection apart")
	f.StringVar(&send, "send", "http", "what to send once connected: http (an HTTP/1.0 GET /) or none (wait for the server to speak)")
	f.StringVar(&termLog, "termination-log", "", "also write the compact report to this file (a Pod's terminationMessagePath)")
	f.BoolVar(&withTries, "attempts", true, "include every connection in the report on standard output")
	return cmd
}
