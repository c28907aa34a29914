// Command pause is the sandbox container of every Pod of the cluster hack/cluster brings
// up: it holds the Pod's namespaces and waits for SIGTERM or SIGINT, as
// registry.k8s.io/pause does, and reaps the children it inherits as the Pod's PID 1.
package main
