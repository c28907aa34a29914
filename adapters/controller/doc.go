// Package controller is for platform teams that run no cloud-controller-manager of their own:
// it runs loopguard in the cluster as a controller-runtime controller that keeps every
// LoadBalancer Service and Ingress loop-safe through core.Reconciler, with the Provider the
// host passes.
//
// What it does, per object:
//   - evaluates it from the manager's informer cache (Nodes, EndpointSlices, declared client
//     Pods, the cloud controllers' version ConfigMaps the host names, custom objects such as
//     TKE's TkeServiceConfig when their CRD is served);
//   - makes the verdict visible to kubectl: a status.conditions entry of type
//     [ConditionType] on a Service (server-side apply of the status subresource under the
//     "loopguard" field manager), an annotation [AnnotationVerdict] on an Ingress, which has
//     no conditions;
//   - records an events.k8s.io Event on a new verdict, a change written, or a failure, and none
//     when a resync finds nothing new;
//   - in enforcing mode ([Options.Enforce]) applies the plan; the default only reports;
//   - with [Options.Verify] (off by default), verifies a LoadBalancer Service with probe Pods
//     (adapters/verify) when its verdict turns at-risk and after a fix is written, one at a
//     time and rate-limited, and records the outcome as its [VerifiedConditionType] condition.
//
// Re-evaluation follows what an object depends on: an EndpointSlice maps to its Service (and
// the Ingresses routing to it); a Node, a named ConfigMap or a declared client Pod maps to the
// objects whose evaluation it changes, found by evaluating the cached objects in memory (pure,
// no API call) and comparing with what the last reconcile saw; a custom object maps to the
// objects of its namespace that name it. A core.RetryError requeues after its delay; a
// conflict requeues without an Event or an error.
//
// Metrics go to controller-runtime's registry (loopguard_exposures, loopguard_writes_total,
// loopguard_reconcile_duration_seconds, loopguard_reconcile_errors_total, and, through
// [CloudAPIMetrics] wired into the provider's options, loopguard_cloud_api_calls_total and
// loopguard_cloud_api_errors_total by action); [ManagerOptions]
// turns on leader election and the health and readiness probes. docs/controller.md is the
// user guide; examples/controller is a runnable main.
package controller
