package volcengine_test

import (
	"strings"
	"testing"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/volcengine"
)

// Tests named after the statements of seed 003 (Volcengine, "LoadBalancer Service IP mode").
// Each row reads real manifests from testdata/ through the manifest adapter and runs
// core.Evaluate, so the provider and the core are tested together.

// verdict is the part of a result a seed statement speaks about.
type verdict struct {
	risk     core.Risk
	symptom  core.Symptom
	path     core.Path
	source   core.SourceKind
	worst    string // core.Probability.String()
	declared string
	remedy   core.Remedy
}

func checkVerdict(t *testing.T, r *core.Result, want verdict) {
	t.Helper()
	a := r.Assessment
	got := verdict{risk: a.Risk, symptom: a.Symptom, path: a.Path, source: a.Source.Kind,
		worst: a.WorstCase.String(), declared: a.DeclaredClients.String(), remedy: r.Decision.Remedy}
	if got != want {
		t.Errorf("verdict:\n got %+v\nwant %+v\nreasons: %v", got, want, codes(a.Reasons))
	}
}

// The table "IP 模式 | VIP（本地路由模式） | Proxy（代理模式）" and the annotation table.
func TestSeed003IPModeTable(t *testing.T) {
	d := volcengine.NewDialect(nil)
	w := load(t, "profiles/ready.yaml", "cluster/nodes.yaml", "modes/services.yaml")
	tests := map[string]struct {
		seed    string
		service string
		want    verdict
		codes   []core.Code
	}{
		"VIP: kube-proxy redirects traffic for the CLB IP and port straight to backend Pods, no loop": {
			seed:    "VIP：在该模式下，kube-proxy 会将目标为 CLB IP 和端口的流量直接重定向到后端 Pod。…防止 CLB 数据包目标 IP 为自身时的网络回环问题",
			service: "service-vip",
			want: verdict{risk: core.RiskNone, symptom: core.SymptomNone, path: core.PathVIP, source: core.SourceClientPod,
				worst: "0", declared: "unknown", remedy: core.RemedyNone},
			codes: []core.Code{"vke-ip-mode-vip", "node-intercepts-vip", "vke-ebpf-keeps-pod-source"},
		},
		"When the annotation is not configured, the mode is VIP": {
			seed:    "当未配置该 Annotation 时，默认为 VIP 模式。",
			service: "service-default",
			want: verdict{risk: core.RiskNone, symptom: core.SymptomNone, path: core.PathVIP, source: core.SourceClientPod,
				worst: "0", declared: "unknown", remedy: core.RemedyNone},
			codes: []core.Code{"vke-ip-mode-default", "vke-ip-mode-vip"},
		},
		"Proxy: all traffic goes through the CLB to backend Pods, which keeps the CLB's features and the client source IP": {
			seed:    "Proxy：在该模式下，kube-proxy 不会重定向流量，流量会全部经过 CLB 后，再转发至后端 Pod。",
			service: "service-demo",
			// externalTrafficPolicy Cluster on three nodes: a connection lands on the
			// client's node one time in three (DOMAIN.md §1). The CLB keeps the client's
			// address, but kube-proxy masquerades NodePort traffic under Cluster, so the
			// backend sees a node (core physics, checked in internal/dataplane).
			want: verdict{risk: core.RiskAtRisk, symptom: core.SymptomIntermittent, path: core.PathProxy, source: core.SourceNode,
				worst: "0.3333", declared: "unknown", remedy: core.InterceptVIP},
			codes: []core.Code{"vke-ip-mode-proxy", "vke-clb-keeps-source", "through-lb", "same-node-loop"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := w.evaluate(t, d, "", tc.service)
			checkVerdict(t, r, tc.want)
			wantCodes(t, r.Assessment.Reasons, tc.codes...)
			vip := offer(t, r, core.InterceptVIP)
			// VIP "局限性": no TLS termination, protocol proxying or Proxy-Protocol for
			// in-cluster traffic; Proxy "优势": every CLB feature.
			if !vip.Costs.LosesLBFeatures {
				t.Error("intercept-vip: want LosesLBFeatures")
			}
			if sep := offer(t, r, core.NodeSeparation); sep.Costs.LosesLBFeatures || sep.Path != core.PathProxy {
				t.Errorf("node-separation: want Proxy path keeping the LB features, got %+v", sep)
			}
			if r.Exposure.LBSourceNAT != core.No {
				t.Errorf("LBSourceNAT = %v, want no (classic CLB keeps the source)", r.Exposure.LBSourceNAT)
			}
		})
	}
}

// "当配置 IP 模式为 Proxy 时，客户端 Pod 和服务端 Pod 不能运行在同一个节点上。"
func TestSeed003ProxyClientAndServerPodsMustNotShareANode(t *testing.T) {
	d := volcengine.NewDialect(nil)
	tests := map[string]struct {
		clients string
		service string
		want    verdict
		codes   []core.Code
	}{
		"a client Pod on a backend's node loops with the share of backends on its node": {
			clients: "samenode/client-on-backend-node.yaml",
			service: "web", // pass-through: the CLB sends to Pod ENIs, one on node-a, one on node-b
			want: verdict{risk: core.RiskAtRisk, symptom: core.SymptomIntermittent, path: core.PathProxy, source: core.SourceClientPod,
				worst: "0.5", declared: "0.5", remedy: core.InterceptVIP},
			codes: []core.Code{"vke-pass-through", "backend-share", "declared-clients", "same-node-loop"},
		},
		"with externalTrafficPolicy Local the CLB sends only to nodes with a backend": {
			clients: "samenode/client-on-backend-node.yaml",
			service: "web-local",
			want: verdict{risk: core.RiskAtRisk, symptom: core.SymptomIntermittent, path: core.PathProxy, source: core.SourceClientPod,
				worst: "0.5", declared: "0.5", remedy: core.InterceptVIP},
			codes: []core.Code{"vke-nodeport-backends", "backend-share", "same-node-loop"},
		},
		"with externalTrafficPolicy Cluster any of the N nodes can get the connection": {
			clients: "samenode/client-elsewhere.yaml",
			service: "web-nodeport",
			want: verdict{risk: core.RiskAtRisk, symptom: core.SymptomIntermittent, path: core.PathProxy, source: core.SourceNode,
				worst: "0.3333", declared: "0.3333", remedy: core.InterceptVIP},
			codes: []core.Code{"vke-nodeport-backends", "nodeport-cluster-any-node"},
		},
		"a client on another node today, with nothing keeping it there, is still at risk": {
			clients: "samenode/client-elsewhere.yaml",
			service: "web",
			want: verdict{risk: core.RiskAtRisk, symptom: core.SymptomIntermittent, path: core.PathProxy, source: core.SourceClientPod,
				worst: "0.5", declared: "0", remedy: core.InterceptVIP},
			codes: []core.Code{"declared-clients", "same-node-loop"},
		},
		"required pod anti-affinity against the backends keeps every client off their nodes: no loop": {
			clients: "samenode/client-anti-affinity.yaml",
			service: "web",
			want: verdict{risk: core.RiskNone, symptom: core.SymptomNone, path: core.PathProxy, source: core.SourceClientPod,
				worst: "0", declared: "0", remedy: core.RemedyNone},
			codes: []core.Code{"vke-ip-mode-proxy", "clients-separated"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := load(t, "profiles/ready.yaml", "cluster/nodes.yaml", "samenode/services.yaml", tc.clients)
			r := w.evaluate(t, d, "shop", tc.service)
			checkVerdict(t, r, tc.want)
			wantCodes(t, r.Assessment.Reasons, tc.codes...)
		})
	}

	t.Run("the node-separation offer is ready once clients are declared, and keeps the LB features", func(t *testing.T) {
		w := load(t, "profiles/ready.yaml", "cluster/nodes.yaml", "samenode/services.yaml", "samenode/client-on-backend-node.yaml")
		w.cluster.Profile.Policy.Prefer = core.PreferLBFeatures
		r := w.evaluate(t, d, "shop", "web")
		sep := offer(t, r, core.NodeSeparation)
		if !sep.Ready() {
			t.Errorf("node-separation unmet: %+v", sep.Unmet)
		}
		wantContains(t, "action", sep.Action, "keep "+volcengine.AnnotationIPMode+" Proxy", "podAntiAffinity", "app=web")
		if strings.Contains(sep.Action, "externalTrafficPolicy") {
			t.Errorf("pass-through sends to Pods; no externalTrafficPolicy change wanted: %q", sep.Action)
		}
		if r.Decision.Remedy != core.NodeSeparation {
			t.Errorf("prefer lb-features: remedy = %s, want node-separation (%s)", r.Decision.Remedy, r.Decision.Why)
		}
	})
}

// "前提条件": Kubernetes v1.30+, VPC-CNI + IPVlan + eBPF, cloud-controller-manager v1.43.0+.
func TestSeed003Prerequisites(t *testing.T) {
	d := volcengine.NewDialect(nil)
	tests := map[string]struct {
		profile string
		code    core.Code
		kinds   []core.PreconditionKind
		message string
		// source of the intercepted traffic: the client Pod on VKE's eBPF forwarding
		// (assumption 7), a node address under kube-proxy with externalTrafficPolicy Cluster
		// (dialect.KubeProxyMasquerades).
		source core.SourceKind
	}{
		"the cluster's Kubernetes version is v1.30 or later": {
			profile: "profiles/kubernetes-1.28.yaml", code: "vke-prereq-kubernetes",
			kinds: []core.PreconditionKind{core.PreconditionVersion}, message: "v1.28.9 is older than v1.30.0",
			source: core.SourceClientPod},
		"the network model is VPC-CNI (not Flannel), with IPVlan Pod interfaces and eBPF forwarding": {
			profile: "profiles/flannel.yaml", code: "vke-prereq-network",
			kinds:   []core.PreconditionKind{core.PreconditionUnsupported},
			message: `CNI "flannel" (need vpc-cni), Pod interface "veth" (need ipvlan), service forwarding "iptables" (need ebpf)`,
			source:  core.SourceNode},
		"the Pod network interface is IPVlan": {
			profile: "profiles/vpc-cni-veth.yaml", code: "vke-prereq-network",
			kinds: []core.PreconditionKind{core.PreconditionUnsupported}, message: `Pod interface "veth" (need ipvlan)`,
			source: core.SourceClientPod},
		"cloud-controller-manager is installed and upgraded to v1.43.0 or later": {
			profile: "profiles/ccm-1.42.yaml", code: "vke-prereq-ccm",
			kinds: []core.PreconditionKind{core.PreconditionVersion}, message: "v1.42.3 is older than v1.43.0",
			source: core.SourceClientPod},
	}
	for name, tc := range tests {
		t.Run(name+": Proxy does not take effect, VIP stays", func(t *testing.T) {
			w := load(t, tc.profile, "cluster/nodes.yaml", "modes/services.yaml")
			r := w.evaluate(t, d, "", "service-demo")
			checkVerdict(t, r, verdict{risk: core.RiskNone, symptom: core.SymptomNone, path: core.PathVIP,
				source: tc.source, worst: "0", declared: "unknown", remedy: core.RemedyNone})
			wantCodes(t, r.Assessment.Reasons, tc.code, "vke-proxy-not-in-effect", "vke-ip-mode-vip")
			wantNoCodes(t, r.Assessment.Reasons, "vke-ip-mode-proxy")
			rs, _ := reasonFor(r.Assessment.Reasons, tc.code)
			wantContains(t, "reason", rs.Message, tc.message)
			if u, _ := reasonFor(r.Assessment.Reasons, "vke-proxy-not-in-effect"); !strings.Contains(u.Message, "UNCONFIRMED") {
				t.Errorf("the inference must be marked UNCONFIRMED: %q", u.Message)
			}
			sep := offer(t, r, core.NodeSeparation)
			got := unmetKinds(sep)
			if len(got) < len(tc.kinds) || !equalKinds(got[:len(tc.kinds)], tc.kinds) {
				t.Errorf("node-separation unmet kinds = %v, want %v first", got, tc.kinds)
			}
			if sep.Unmet[0].Reason.Code != tc.code {
				t.Errorf("first unmet precondition = %s, want %s", sep.Unmet[0].Reason.Code, tc.code)
			}
		})
	}

	t.Run("a prerequisite unmet, with the VIP inference switched off: the path is unknown", func(t *testing.T) {
		d := volcengine.NewDialect(&volcengine.Options{Assumptions: volcengine.Assumptions{UnmetProxyUnknown: true}})
		w := load(t, "profiles/ccm-1.42.yaml", "cluster/nodes.yaml", "modes/services.yaml")
		r := w.evaluate(t, d, "", "service-demo")
		if r.Assessment.Risk != core.RiskUnknown || !r.Decision.Tentative {
			t.Errorf("risk = %s tentative = %v, want unknown and tentative", r.Assessment.Risk, r.Decision.Tentative)
		}
	})

	t.Run("prerequisites unknown: the risk is unknown and the missing profile fields are named", func(t *testing.T) {
		w := load(t, "profiles/unknown.yaml", "cluster/nodes.yaml", "modes/services.yaml")
		r := w.evaluate(t, d, "", "service-demo")
		if r.Assessment.Risk != core.RiskUnknown {
			t.Fatalf("risk = %s, want unknown", r.Assessment.Risk)
		}
		if want := []string{core.MissingIntercept}; !equalStrings(r.Assessment.Missing, want) {
			t.Errorf("missing = %v, want %v", r.Assessment.Missing, want)
		}
		rs, ok := reasonFor(r.Assessment.Reasons, "vke-prereq-unknown")
		if !ok {
			t.Fatalf("no vke-prereq-unknown among %v", codes(r.Assessment.Reasons))
		}
		wantContains(t, "reason", rs.Message, "kubernetesVersion, dataplane.cni, dataplane.podInterface, proxyMode, ccmVersion")
		if !r.Decision.Tentative {
			t.Error("decision must be tentative while the risk is unknown")
		}
		sep := offer(t, r, core.NodeSeparation)
		want := []core.PreconditionKind{core.PreconditionVersion, core.PreconditionUnknown, core.PreconditionVersion, core.PreconditionUnknown}
		if got := unmetKinds(sep); !equalKinds(got, want) {
			t.Errorf("node-separation unmet kinds = %v, want %v (k8s, network, CCM, clients)", got, want)
		}
	})

	t.Run("VIP needs none of them", func(t *testing.T) {
		w := load(t, "profiles/unknown.yaml", "cluster/nodes.yaml", "modes/services.yaml")
		r := w.evaluate(t, d, "", "service-default")
		if r.Assessment.Risk != core.RiskNone || r.Assessment.Path != core.PathVIP {
			t.Errorf("risk %s path %s, want none VIP", r.Assessment.Risk, r.Assessment.Path)
		}
		if vip := offer(t, r, core.InterceptVIP); !vip.Ready() {
			t.Error("intercept-vip must be ready")
		}
	})
}

// "配置确认：…通过 status 字段确认配置是否生效。其中 status.ipMode 字段即为该 Service 的 IP 模式。"
func TestSeed003StatusIPModeIsTheModeInEffect(t *testing.T) {
	d := volcengine.NewDialect(nil)

	t.Run("Proxy asked, status VIP, old CCM: VIP is in effect and the disagreement names the CCM", func(t *testing.T) {
		w := load(t, "profiles/ccm-1.42.yaml", "cluster/nodes.yaml", "status/services.yaml")
		r := w.evaluate(t, d, "shop", "payments")
		checkVerdict(t, r, verdict{risk: core.RiskNone, symptom: core.SymptomNone, path: core.PathVIP,
			source: core.SourceClientPod, worst: "0", declared: "unknown", remedy: core.RemedyNone})
		wantCodes(t, r.Assessment.Reasons, "vke-status-ip-mode", "vke-status-disagrees")
		rs, _ := reasonFor(r.Assessment.Reasons, "vke-status-disagrees")
		wantContains(t, "reason", rs.Message, "asks for Proxy", "ipMode is VIP", "cloud-controller-manager", "v1.42.3 is older than v1.43.0")
	})

	t.Run("Proxy asked, status VIP, prerequisites met: not reconciled yet, or edited after creation", func(t *testing.T) {
		w := load(t, "profiles/ready.yaml", "cluster/nodes.yaml", "status/services.yaml")
		r := w.evaluate(t, d, "shop", "payments")
		if r.Assessment.Path != core.PathVIP || r.Assessment.Risk != core.RiskNone {
			t.Errorf("path %s risk %s, want VIP none", r.Assessment.Path, r.Assessment.Risk)
		}
		rs, _ := reasonFor(r.Assessment.Reasons, "vke-status-disagrees")
		wantContains(t, "reason", rs.Message, "has not reconciled", "edited after the Service was created")
	})

	t.Run("VIP asked, status Proxy: nodes act on the status, so the Service loops", func(t *testing.T) {
		w := load(t, "profiles/ready.yaml", "cluster/nodes.yaml", "status/services.yaml")
		r := w.evaluate(t, d, "shop", "search")
		if r.Assessment.Path != core.PathProxy || r.Assessment.Risk != core.RiskAtRisk {
			t.Errorf("path %s risk %s, want Proxy at-risk", r.Assessment.Path, r.Assessment.Risk)
		}
		wantCodes(t, r.Assessment.Reasons, "vke-status-disagrees", "vke-ip-mode-proxy")
	})

	t.Run("ingress points with different ipModes: the path is unknown", func(t *testing.T) {
		w := load(t, "profiles/ready.yaml", "cluster/nodes.yaml", "status/services.yaml")
		r := w.evaluate(t, d, "shop", "mixed")
		if r.Assessment.Risk != core.RiskUnknown {
			t.Errorf("risk %s, want unknown", r.Assessment.Risk)
		}
		wantCodes(t, r.Assessment.Reasons, "vke-status-mixed")
	})
}

// Annotation table: "是否支持修改: 否" (not modifiable after creation).
func TestSeed003IPModeCannotBeModified(t *testing.T) {
	d := volcengine.NewDialect(nil)

	t.Run("existing Proxy Service: VIP needs a new Service, which the default policy refuses", func(t *testing.T) {
		w := load(t, "profiles/ready.yaml", "cluster/nodes.yaml", "existing/services.yaml")
		r := w.evaluate(t, d, "shop", "orders")
		if r.Assessment.Risk != core.RiskAtRisk || r.Assessment.Path != core.PathProxy {
			t.Fatalf("risk %s path %s, want at-risk Proxy", r.Assessment.Risk, r.Assessment.Path)
		}
		vip := offer(t, r, core.InterceptVIP)
		if !vip.Costs.NewObject || !equalKinds(unmetKinds(vip), []core.PreconditionKind{core.PreconditionImmutable}) {
			t.Errorf("intercept-vip: want NewObject and an immutable precondition, got %+v", vip)
		}
		if vip.Unmet[0].Reason.Code != "vke-ip-mode-immutable" {
			t.Errorf("immutable reason = %s", vip.Unmet[0].Reason.Code)
		}
		wantContains(t, "action", vip.Action, "create a new Service like shop/orders", `ip-mode: "VIP"`, "new CLB address")
		if rej := rejection(t, r.Decision, core.InterceptVIP); rej.Reason.Code != core.CodeDecideDisruptive {
			t.Errorf("intercept-vip rejected with %s, want %s", rej.Reason.Code, core.CodeDecideDisruptive)
		}
		// No clients are declared, so separation is not ready either; DNS steering is left.
		if r.Decision.Remedy != core.DNSSteering {
			t.Errorf("remedy = %s, want dns-steering", r.Decision.Remedy)
		}
		if sep := offer(t, r, core.NodeSeparation); sep.Costs.NewObject {
			t.Error("node-separation keeps Proxy: no new Service needed")
		}
	})

	t.Run("existing Proxy Service with AllowDisruptive: a new VIP Service is chosen", func(t *testing.T) {
		w := load(t, "profiles/allow-disruptive.yaml", "cluster/nodes.yaml", "existing/services.yaml")
		r := w.evaluate(t, d, "shop", "orders")
		if r.Decision.Remedy != core.InterceptVIP || r.Decision.Costs == nil || !r.Decision.Costs.NewObject {
			t.Errorf("decision = %+v, want intercept-vip with a new object", r.Decision)
		}
	})

	t.Run("a Service not created yet: switching to VIP is an annotation, not a new Service", func(t *testing.T) {
		w := load(t, "profiles/ready.yaml", "cluster/nodes.yaml", "modes/services.yaml")
		r := w.evaluate(t, d, "", "service-demo")
		vip := offer(t, r, core.InterceptVIP)
		if vip.Costs.NewObject || !vip.Ready() {
			t.Errorf("intercept-vip = %+v, want ready without a new object", vip)
		}
		wantContains(t, "action", vip.Action, "before the Service is created")
	})

	t.Run("existing VIP Service: Proxy needs a new Service", func(t *testing.T) {
		w := load(t, "profiles/ready.yaml", "cluster/nodes.yaml", "existing/services.yaml")
		r := w.evaluate(t, d, "shop", "catalog")
		if r.Decision.Remedy != core.RemedyNone {
			t.Errorf("remedy %s, want none (VIP cannot loop)", r.Decision.Remedy)
		}
		sep := offer(t, r, core.NodeSeparation)
		if !sep.Costs.NewObject || sep.Unmet[0].Kind != core.PreconditionImmutable {
			t.Errorf("node-separation = %+v, want a new object and an immutable precondition first", sep)
		}
		wantContains(t, "action", sep.Action, "create a new Service like shop/catalog", `ip-mode: "Proxy"`)
	})
}

// "结果验证": status.ipMode, then CLB monitoring from a Pod that is not on a backend's node.
func TestSeed003VerificationHints(t *testing.T) {
	d := volcengine.NewDialect(nil)
	w := load(t, "profiles/ready.yaml", "cluster/nodes.yaml", "modes/services.yaml")
	for service, mode := range map[string]string{"service-demo": "Proxy", "service-vip": "VIP", "service-default": "VIP"} {
		r := w.evaluate(t, d, "", service)
		n, ok := reasonFor(r.Exposure.Notes, "vke-verify")
		if !ok {
			t.Fatalf("%s: no vke-verify note among %v", service, codes(r.Exposure.Notes))
		}
		wantContains(t, service+" note", n.Message,
			"status.loadBalancer.ingress[*].ipMode of Service default/"+service,
			"must be "+mode, "node without backends", "new connections in Proxy mode and none in VIP mode")
		if !strings.Contains(n.Source, "结果验证") {
			t.Errorf("source %q must cite seed 003 §结果验证", n.Source)
		}
	}
}

func equalKinds(a, b []core.PreconditionKind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
