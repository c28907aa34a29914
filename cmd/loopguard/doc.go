// Command loopguard is for people who run Kubernetes LoadBalancer Services and Ingresses and
// want to know, before users notice, whether in-cluster clients loop through the cloud load
// balancer, and which fix fits their cloud.
//
//	loopguard assess -f examples/manifests
//
// assess reads manifests (files, folders, multi-document YAML, Lists, standard input) and
// cluster facts (Nodes, ConfigMaps, EndpointSlices, Pods, cloud objects such as
// TkeServiceConfig, a ClusterProfile document or --profile file, and flags), picks the cloud's
// dialect (--provider, the profile, or what the objects show), and prints for every
// LoadBalancer Service and Ingress the risk, the symptom, the loop probability, the source
// address the backend sees, the reasons with their documented codes (docs/reasons.md) and the
// chosen remedy. It needs no cluster and no cloud.
//
// Exit codes: 0 when every object was assessed; 1 with --fail-on-risk when an object is at
// risk; 2 when an input could not be read or parsed (every readable object is still assessed
// and printed) or the command line is wrong.
package main
