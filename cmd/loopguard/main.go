package main

import (
	"io"
	"os"
	"runtime/debug"
)

func main() {
	// A short-lived command reading many documents spends a quarter of its time collecting
	// garbage at the default setting; trading memory for it is the right call here. GOGC,
	// when set, still decides.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK = 0
	// exitAtRisk: --fail-on-risk and some object is at risk.
	exitAtRisk = 1
	// exitInput: some input could not be read or parsed (or the cluster could not be read), or
	// the command line is wrong.
	exitInput = 2
	// exitBlocked (plan, apply): a plan is blocked or could not be computed, or (apply) a
	// write failed or is not verified yet.
	exitBlocked = 3
)

// run is the whole program: tests call it with their own streams.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd, code := newRootCommand(stdin, stdout, stderr)
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		printError(stderr, err)
		if *code == exitOK {
			return exitInput
		}
	}
	return *code
}
