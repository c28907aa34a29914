package cluster

import (
	"fmt"
	"path/filepath"
	"strings"
)

// ProxyMode is kube-proxy's mode.
type ProxyMode string

const (
	ProxyNFTables ProxyMode = "nftables"
	ProxyIPTables ProxyMode = "iptables"
)

// Image references the cluster's own images are imported under (hack/cluster-assets.sh writes
// them; no registry is ever contacted: every Pod finds its image already on the node).
const (
	PauseImage   = "loopguard.invalid/pause:3.10.2"
	BackendImage = "loopguard.invalid/backend:dev"
	CoreDNSImage = "loopguard.invalid/coredns:v1.14.6"
)

// node is one node's paths.
type node struct {
	i    int
	name string
	dir  string
}

func (n node) sock() string       { return filepath.Join(n.dir, "containerd.sock") }
func (n node) kubeletDir() string { return filepath.Join(n.dir, "kubelet") }

// containerdConfig is containerd 2.x's configuration (version 3): every path in the node's
// folder, the CNI plugins from the assets, runc from the assets with cgroupfs, and the
// settings this machine needs:
//   - restrict_oom_score_adj: root here lacks CAP_SYS_RESOURCE, so runc cannot lower a
//     container's oom_score_adj below its own (-998 for the pause container);
//   - the sandbox image pinned to the pause image imported from the assets;
//   - NRI off: its socket path is fixed (/var/run/nri), shared by every containerd on a machine.
func containerdConfig(a Assets, n node) string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	return strings.Join([]string{
		`version = 3`,
		`root = ` + q(filepath.Join(n.dir, "containerd", "root")),
		`state = ` + q(filepath.Join(n.dir, "containerd", "state")),
		`temp = ` + q(filepath.Join(n.dir, "containerd", "tmp")),
		`[plugins]`,
		`  [plugins.'io.containerd.server.v1.grpc']`,
		`    address = ` + q(n.sock()),
		`  [plugins.'io.containerd.server.v1.ttrpc']`,
		`    address = ` + q(n.sock()+".ttrpc"),
		`  [plugins.'io.containerd.internal.v1.opt']`,
		`    path = ` + q(filepath.Join(n.dir, "containerd", "opt")),
		`  [plugins.'io.containerd.nri.v1.nri']`,
		`    disable = true`,
		`  [plugins.'io.containerd.cri.v1.images']`,
		`    snapshotter = 'overlayfs'`,
		`    [plugins.'io.containerd.cri.v1.images'.pinned_images]`,
		`      sandbox = ` + q(PauseImage),
		`  [plugins.'io.containerd.cri.v1.runtime']`,
		`    restrict_oom_score_adj = true`,
		`    [plugins.'io.containerd.cri.v1.runtime'.containerd]`,
		`      default_runtime_name = 'runc'`,
		`      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]`,
		`        runtime_type = 'io.containerd.runc.v2'`,
		`        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]`,
		`          BinaryName = ` + q(a.Bin("runc")),
		`          SystemdCgroup = false`,
		`    [plugins.'io.containerd.cri.v1.runtime'.cni]`,
		`      bin_dirs = [` + q(a.CNIDir()) + `]`,
		`      conf_dir = ` + q(filepath.Join(n.dir, "cni")),
		`      max_conf_num = 1`,
		``,
	}, "\n")
}

// cniConfig is the node's network: the bridge plugin (cni0, the Pods' gateway, hairpin on so
// a Pod reaches itself through its Service) with host-local addresses from the node's range.
// No masquerade: the router routes every node's Pod range.
func cniConfig(n node) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "loopguard",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": %q
      }
    }
  ]
}
`, nodePodCIDR(n.i), filepath.Join(n.dir, "cni-ipam"))
}

// kubeletConfig is the node's KubeletConfiguration, with what this kind of machine needs:
//   - failCgroupV1 false: the machine has cgroup v1 controllers (kubelet refuses them otherwise);
//   - cgroupfs, and a cgroupRoot of the cluster's own (never the cgroups others use);
//   - no swap check, no eviction, no image garbage collection, no local storage isolation:
//     the machine's disk and memory are shared with whatever else runs;
//   - oomScoreAdj 0: root here may not lower its own score (no CAP_SYS_RESOURCE);
//   - resolvConf: a file naming the router's DNS, the cloud's resolver (never the machine's);
//   - syncFrequency 10s: ConfigMap volumes (CoreDNS's Corefile) follow an edit within seconds.
func kubeletConfig(p *pki, n node, cgroupRoot, resolvConf string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %s
cgroupsPerQOS: true
failSwapOn: false
evictionHard: {}
imageGCHighThresholdPercent: 100
localStorageCapacityIsolation: false
oomScoreAdj: 0
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
clusterDNS: [%s]
clusterDomain: %s
resolvConf: %s
syncFrequency: 10s
serializeImagePulls: false
containerRuntimeEndpoint: unix://%s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %s}
authorization:
  mode: Webhook
tlsCertFile: %s
tlsPrivateKeyFile: %s
`, cgroupRoot, nodeAddr(n.i), DNSServiceIP, ClusterDomain, resolvConf, n.sock(), p.path("ca.crt"),
		p.path(n.name+"-serving.crt"), p.path(n.name+"-serving.key"))
}

// kubeProxyConfig: the node's KubeProxyConfiguration. No host sysctl (conntrack limits left
// alone), the health endpoint on every node address (the cloud's LB checks it, as cloud LBs
// check kube-proxy's /healthz for externalTrafficPolicy Cluster), fast syncs.
func kubeProxyConfig(mode ProxyMode, n node, kubeconfig string) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
mode: %s
clusterCIDR: %s
healthzBindAddress: 0.0.0.0:10256
metricsBindAddress: 127.0.0.1:10249
oomScoreAdj: 0
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
iptables:
  minSyncPeriod: 100ms
nftables:
  minSyncPeriod: 100ms
`, kubeconfig, n.name, mode, PodCIDR)
}
