// Package verify is for operators and platform code that want to see, on their own cluster,
// whether loopguard's verdict holds: does a LoadBalancer Service loop for a client Pod on a
// backend's node, and does the fix hold after apply?
//
// Run (orchestrate.go) starts short-lived probe Pods through client-go, one on a node that
// holds a backend of the Service and one on a node that holds none, each running the
// loopguard binary's own `probe` subcommand (package probe) against every address and port
// the LB publishes; it reads their reports from the Pods' logs, removes the Pods, and
// compares what each placement observed with what core.Assess predicted for a client there
// (Predict, Observe, Agree). The comparison functions are the same ones loopguard's own
// dataplane lab (internal/verifylab) checks against the real kube-proxy and HAProxy.
//
// What it creates, and nothing else: one Pod per placement in the Service's namespace,
// labelled app.kubernetes.io/managed-by=loopguard-verify and owner-referenced to the Service
// (so deleting the Service takes a left-over probe Pod with it; a host confined to one
// namespace names it in Options.Namespace, and the Pods' owner in Options.Owner), pinned with spec.nodeName
// (the scheduler is bypassed, so it needs no scheduling), with resource requests and limits,
// restartPolicy Never, activeDeadlineSeconds, no service account token, a read-only root file
// system, running as non-root with every capability dropped. The Pods are deleted when Run
// returns, whatever the reason (success, failure, timeout, a cancelled context such as an
// interrupt).
//
// RBAC it needs (docs/verify.md lists it as a Role): pods: create, get, list, watch, delete;
// pods/log: get; and read access to what loopguard scan reads to make its prediction.
package verify
