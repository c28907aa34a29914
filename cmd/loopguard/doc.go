// Command loopguard is for people who run Kubernetes LoadBalancer Services and Ingresses and
// want to know, before users notice, whether in-cluster clients loop through the cloud load
// balancer, and which fix fits their cloud; and then to have the fix planned and applied.
//
//	loopguard assess -f examples/manifests    # offline, from manifests
//	loopguard scan                            # the same report, read from a live cluster
//	loopguard plan -f examples/manifests      # offline: the concrete changes each decision needs
//	loopguard apply --dry-run                 # plan against the live cluster; without --dry-run, write
//
// assess reads manifests (files, folders, multi-document YAML, Lists, standard input) and
// cluster facts (Nodes, ConfigMaps, EndpointSlices, Pods, cloud objects such as
// TkeServiceConfig, a ClusterProfile document or --profile file, and flags), picks the cloud's
// dialect (--provider, the profile, or what the objects show), and prints for every
// LoadBalancer Service and Ingress the risk, the symptom, the loop probability, the source
// address the backend sees, the reasons with their documented codes (docs/reasons.md) and the
// chosen remedy. It needs no cluster and no cloud. scan reads the same objects from a live
// cluster (client-go's kubeconfig rules) and prints the same report; it only reads.
//
// plan computes, with the cloud's Driver, the plan that carries each decision out: the
// changes (who writes them, the field, from and to), the checks after writing, the notes, and
// what blocks the plan (an allowlist to request, a precondition, an immutable field). apply
// computes the plans against the live cluster and writes them through core.Reconciler and
// adapters/kube (server-side apply as field manager "loopguard"); a second apply with nothing
// changed writes nothing. The CLI makes no cloud API calls.
//
// Exit codes: 0 when everything was done; 1 with --fail-on-risk (assess, scan) when an object
// is at risk; 2 when an input or the cluster could not be read, or the command line is wrong
// (every readable object is still assessed and printed); 3 (plan, apply) when a plan is
// blocked or could not be computed, a write failed, or what was written is not visible yet.
package main
