// Command demo is the first command to run: loopguard's whole job on built-in examples, with
// no cluster, no cloud and no credentials (package cmd/loopguard/internal/demo says what it
// does). It is `loopguard demo` without the rest of the CLI, so that a first
// `go run ./cmd/loopguard/demo` compiles only what the demo runs.
//
// Exit codes: 0 every exposure the demo could fix is safe afterwards (the others say why not);
// 3 otherwise; 1 the demo itself failed.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/loopguard/loopguard/cmd/loopguard/internal/demo"
)

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: demo (no arguments): runs loopguard on built-in examples; the report goes to standard output, progress to standard error")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	res, err := demo.Run(ctx, os.Stdout, os.Stderr)
	stop()
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	case !res.Safe:
		os.Exit(3)
	}
}
