// Package campaign is loopguard's reliability campaign, a test that reconciles a mixed fleet
// through core.Reconciler while everything around it misbehaves, and prints its figures:
//
//	reliability: N reconciles, F faults, R restarts, C converged, 0 foreign fields lost, W extra writes (seed S)
//
// The fleet: TKE Services and Ingresses in service-config mode (entries merged into
// TkeServiceConfigs that others wrote, configs created, prevent-loopback) and in direct mode
// (CLB listener attributes through the CLB API), VKE Services (created with their ip-mode,
// externalTrafficPolicy on an existing one, CLB facts read through the Volcengine API) and plain
// Kubernetes Services (status ipMode, written by the host playing the cloud-controller-manager).
// It runs on a real kube-apiserver (internal/apiserver) and the in-process cloud servers
// (providers/tencent/clbtest, providers/volcengine/clbtest) with the official SDK clients.
//
// What goes wrong, at random from one seed:
//   - about 30% of cloud calls fail: throttling, HTTP 5xx, an internal error, latency, a busy
//     load balancer (FailedOperation.ResourceInOperating), a write whose task fails, and a
//     write accepted whose answer is lost with the connection;
//   - the API server times out (before a request is sent, and after a write was made) and a
//     concurrent writer edits the annotations, labels and TkeServiceConfig entries loopguard
//     does not own, racing loopguard's writes into conflicts;
//   - the reconciler is stopped right after a write and started again from scratch: a new
//     Reconciler, new drivers, new clients.
//
// What must hold: every object converges (its final plan changes nothing, and where loopguard's
// change is the remedy the assessment says no connection loops); nothing loopguard does not own
// is lost or changed, on the API server or on the CLB; and no write is made beyond the fewest
// the fleet needs (W, the extra writes, is 0): an ambiguous failure (an answer lost after a
// write was made, or a stop right after one) is no excuse for a repeat, since every retry reads
// before it writes (the Tencent driver's retries of a ModifyListener whose answer was lost
// among them).
//
// The campaign's host uses temporary Tencent credentials (a key and a session token) and a
// Volcengine key; every log line at trace level (reconcilers, drivers, the CLB reader, the
// cluster writer), every error and every outcome is kept, and the test then scans them for the
// secrets and prints "secret scan: N log and outcome lines, ..., 0 found".
//
// LOOPGUARD_CAMPAIGN_SEED reruns one seed; LOOPGUARD_CAMPAIGN_RECONCILES changes how many
// reconciles are run (at least 1,000 by default). Without KUBEBUILDER_ASSETS the test skips.
package campaign
