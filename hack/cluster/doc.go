// Command cluster brings the real cluster of internal/cluster up and takes it down, for a
// contributor at a shell (make cluster, make cluster-down) rather than a test:
//
//	bin/cluster-tool up [-name dev] [-nodes 2] [-proxy-mode nftables] [-ccm bin/loopguard-ccm]
//	bin/cluster-tool exec [-name dev] router|node1|node2 -- COMMAND...
//	bin/cluster-tool down [-name dev]
//
// (make cluster builds it as bin/cluster-tool and runs up; make cluster-down runs down.)
//
// up returns once the nodes are Ready and CoreDNS answers, leaving every process running (in
// sessions of their own) and the state in /tmp/lgc-<name>; down stops them by the PIDs
// recorded there, removes the cgroups, namespaces and folder, and fails if anything was left
// behind. The assets come from LOOPGUARD_CLUSTER_ASSETS (hack/cluster-assets.sh).
package main
