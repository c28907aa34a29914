package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/loopguard/loopguard/internal/cluster"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: cluster up|down|exec [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	name := fs.String("name", "dev", "the cluster's name (its namespaces, cgroups and /tmp/lgc-<name>)")
	switch args[0] {
	case "up":
		nodes := fs.Int("nodes", 2, "nodes (1 or 2)")
		mode := fs.String("proxy-mode", "nftables", "kube-proxy's mode: nftables or iptables")
		ccm := fs.String("ccm", "", "a cloud-controller-manager built from hack/cluster/ccm (none: LoadBalancer Services stay pending)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *ccm != "" {
			abs, err := filepath.Abs(*ccm)
			if err != nil {
				return err
			}
			*ccm = abs
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		start := time.Now()
		c, err := cluster.Up(ctx, cluster.Config{Name: *name, Assets: cluster.AssetsFromEnv(), Nodes: *nodes,
			ProxyMode: cluster.ProxyMode(*mode), CCM: *ccm, Log: os.Stderr})
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "cluster %s is up (%s). The API server listens at %s:%d, inside network namespace %s:\n",
			*name, time.Since(start).Round(time.Second), cluster.RouterAddr, cluster.APIServerPort, filepath.Base(c.RouterNetns()))
		fmt.Fprintf(os.Stderr, "  bin/cluster-tool exec -name %s router -- kubectl get nodes   (KUBECONFIG=%s)\n", *name, c.Kubeconfig())
		fmt.Fprintf(os.Stderr, "  make cluster-down CLUSTER=%s\n", *name)
		fmt.Println(c.Kubeconfig())
		return nil
	case "down":
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		dir := filepath.Join(os.TempDir(), "lgc-"+*name)
		c, err := cluster.Load(dir)
		if err != nil {
			return fmt.Errorf("no cluster %s here: %w", *name, err)
		}
		c.SetLog(os.Stderr)
		procs := c.Procs()
		err = c.Down()
		return errors.Join(err, cluster.Leftovers(*name, dir, procs))
	case "exec":
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		rest := fs.Args()
		if len(rest) > 0 && rest[0] == "--" {
			rest = rest[1:]
		}
		if len(rest) < 2 {
			return errors.New("usage: cluster exec [-name dev] router|NODE -- COMMAND...")
		}
		c, err := cluster.Load(filepath.Join(os.TempDir(), "lgc-"+*name))
		if err != nil {
			return fmt.Errorf("no cluster %s here: %w", *name, err)
		}
		where, argv := rest[0], rest[1:]
		if len(argv) > 0 && argv[0] == "--" {
			argv = argv[1:]
		}
		cmd := exec.Command("nsenter", append(c.Enter(where), argv...)...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig())
		return cmd.Run()
	}
	return fmt.Errorf("unknown command %q: want up, down or exec", args[0])
}
