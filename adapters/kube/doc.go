// Package kube is for hosts that run loopguard against a live cluster: it writes the plan's
// cluster changes through the Kubernetes API (core.ClusterWriter) and reads live objects as
// unstructured, so no field loopguard does not know is ever lost on the way.
//
// Annotations are written with server-side apply under the "loopguard" field manager, never
// forced, so a field another manager owns is a conflict rather than a silent takeover. Objects
// whose lists the server cannot merge by key (TKE's TkeServiceConfig) are written with
// read-modify-write and the resourceVersion read, so concurrent writers are detected.
package kube
