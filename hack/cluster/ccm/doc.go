// Command ccm is the cloud-controller-manager of the cluster hack/cluster brings up, built
// as a fork builds one: the upstream k8s.io/cloud-provider/app command, its cloud registered
// under a name (machine: internal/cluster/machinelb, whose load balancers are real and on this
// machine), wrapped by loopguard's decorator (adapters/cloudprovider.Wrap) with the plain
// Kubernetes provider, the cluster's profile, klog and the controller manager's event
// recorder. internal/cluster starts it in the router namespace:
//
//	ccm --kubeconfig ccm.kubeconfig --cloud-provider machine --controllers service \
//	  --leader-elect=false --secure-port 0 --machine-lb-pool 10.99.0.0/24 \
//	  --machine-lb-hosts-file lb-hosts --machine-lb-domain lb.machine.invalid \
//	  --machine-lb-state-dir lb --loopguard-profile profile.yaml
package main
