package tencent_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
)

// seedRow is one row of the TKE guide's tables (seeds 000 Chinese, 001 English), run through
// the Tencent dialect and the core together on real manifests from testdata/.
type seedRow struct {
	section string
	// en and zh are the row as each language version writes it (zh is "" for the English-only
	// row); TestSeedRowsAreQuoted checks both against the seed files.
	en, zh string
	// variant tells apart several inputs for one row (node kind, proxy mode, language).
	variant string
	files   []string
	object  string
	want    seedWant
	check   func(t *testing.T, res *core.Result)
}

type seedWant struct {
	risk    core.Risk
	symptom core.Symptom
	path    core.Path
	// worst is the worst-case loop probability as core.Probability prints it.
	worst string
	// source is checked when set.
	source core.SourceKind
	// clientIP is checked when set.
	clientIP core.ClientIP
	// reasons must all appear among the assessment's reasons.
	reasons []core.Code
	notes   []core.Code
	remedy  core.Remedy
	// decisionPath is the path once the remedy is in place.
	decisionPath core.Path
	tickets      []core.Capability
}

const (
	svcWeb = "Service/default/web"
	ingWeb = "Ingress/default/web"
)

var (
	// These rows' Services use NodePort backends with externalTrafficPolicy Cluster, where
	// kube-proxy masquerades every NodePort connection: the backend sees the node the CLB
	// picked (core's physics, checked against the kernel in internal/dataplane).
	atRiskL4 = seedWant{risk: core.RiskAtRisk, symptom: core.SymptomIntermittent, path: core.PathProxy, worst: "0.3333",
		source: core.SourceNode, clientIP: core.ClientIPLost}
	atRiskL7 = seedWant{risk: core.RiskAtRisk, symptom: core.SymptomDelay, path: core.PathProxy, worst: "0.3333",
		source: core.SourceNode, clientIP: core.ClientIPLost}
	// Which address the backend sees behind interception is the core's physics (kube-proxy's
	// masquerade, DOMAIN.md §7), not a seed row: these rows do not check it.
	interceptedVIP = seedWant{risk: core.RiskNone, symptom: core.SymptomNone, path: core.PathVIP, worst: "0",
		remedy: core.RemedyNone, decisionPath: core.PathVIP}
)

func with(w seedWant, f func(*seedWant)) seedWant { f(&w); return w }

func seedRows() []seedRow {
	const (
		s1  = "§1 quick check"
		s2  = "§2 node types in IPVS mode"
		s3  = "§3 layer-4 quick reference"
		s4  = "§4 layer-7 quick reference"
		faq = "FAQ"
		cmp = "comparison of solutions 1 and 2"
	)
	superVIP := func(extra ...core.Code) seedWant {
		return with(interceptedVIP, func(w *seedWant) {
			w.reasons = append([]core.Code{"tke-internal-subnet", "tke-super-node-intercepts", "node-intercepts-vip"}, extra...)
		})
	}
	iptablesVIP := with(interceptedVIP, func(w *seedWant) {
		w.reasons = []core.Code{"tke-internal-subnet", "tke-iptables-intercepts", "node-intercepts-vip"}
	})
	ipvsLoop := with(atRiskL4, func(w *seedWant) {
		w.reasons = []core.Code{"tke-internal-subnet", "tke-ipvs-not-intercepted", "through-lb", "tke-no-service-config", "nodeport-cluster-any-node", "same-node-loop", "l4-no-retry"}
		w.remedy, w.decisionPath = core.InterceptVIP, core.PathVIP
	})
	l7Loop := with(atRiskL7, func(w *seedWant) {
		w.reasons = []core.Code{"tke-internal-subnet", "tke-l7-not-intercepted", "through-lb", "tke-no-service-config", "nodeport-cluster-any-node", "same-node-loop", "l7-retry-delay"}
		// No allowlist, no declared clients: the only ready remedy is DNS steering.
		w.remedy, w.decisionPath = core.DNSSteering, core.PathUnknown
	})
	publicNone := seedWant{risk: core.RiskNone, symptom: core.SymptomNone, worst: "0", source: core.SourceUnknown,
		reasons: []core.Code{"tke-default-public", "public-lb"}, remedy: core.RemedyNone}
	snatNone := seedWant{risk: core.RiskNone, symptom: core.SymptomNone, path: core.PathProxy, worst: "0", source: core.SourceNode,
		remedy: core.RemedyNone, decisionPath: core.PathProxy}

	return []seedRow{
		// §1 Quick identification.
		{section: s1, en: "Super nodes + private network CLB + CLB Service", zh: "超级节点 + 内网 CLB + CLB Service",
			files: []string{"profiles/ipvs.yaml", "nodes/super-3.yaml", "seed/private-service.yaml"}, object: svcWeb,
			want: superVIP()},
		{section: s1, en: "Super nodes + private network CLB + CLB Ingress",
			files: []string{"profiles/ipvs.yaml", "nodes/super-3.yaml", "seed/private-ingress.yaml"}, object: ingWeb,
			want: with(superVIP(), func(w *seedWant) { w.reasons = []core.Code{"tke-internal-subnet", "tke-super-node-intercepts"} })},
		{section: s1, en: "iptables mode + private network CLB + CLB Service", zh: "iptables 模式 + 内网 CLB + CLB Service",
			files: []string{"profiles/iptables.yaml", "nodes/regular-3.yaml", "seed/private-service.yaml"}, object: svcWeb,
			want: iptablesVIP},
		{section: s1, en: "Access a Service by Service name or ClusterIP.", zh: "使用 Service 名称或 ClusterIP 访问 Service",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-service-by-name.yaml"}, object: svcWeb,
			want: seedWant{risk: core.RiskNone, symptom: core.SymptomNone, worst: "0", source: core.SourceClientPod, clientIP: core.ClientIPKept,
				reasons: []core.Code{"service-name-access"}, remedy: core.RemedyNone}},
		{section: s1, en: "Public network CLB + CLB Service / CLB Ingress", zh: "公网 CLB + CLB Service / CLB Ingress", variant: "Service",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/public-service.yaml"}, object: svcWeb,
			want: publicNone},
		{section: s1, en: "Public network CLB + CLB Service / CLB Ingress", zh: "公网 CLB + CLB Service / CLB Ingress", variant: "Ingress",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/public-ingress.yaml"}, object: ingWeb,
			want: publicNone},
		{section: s1, en: "Regular nodes/native nodes + IPVS mode + private network CLB + CLB Service + access to LoadBalancer IP address",
			zh: "普通节点/原生节点 + IPVS 模式 + 内网 CLB + CLB Service + 访问 LoadBalancer IP", variant: "regular nodes",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-service.yaml"}, object: svcWeb,
			want: ipvsLoop},
		{section: s1, en: "Regular nodes/native nodes + IPVS mode + private network CLB + CLB Service + access to LoadBalancer IP address",
			zh: "普通节点/原生节点 + IPVS 模式 + 内网 CLB + CLB Service + 访问 LoadBalancer IP", variant: "native nodes",
			files: []string{"profiles/ipvs.yaml", "nodes/native-3.yaml", "seed/private-service.yaml"}, object: svcWeb,
			want: ipvsLoop},
		{section: s1, en: "Regular nodes/native nodes + private network CLB + CLB Ingress + access to LoadBalancer IP address",
			zh: "内网 CLB + CLB Ingress + 访问 LoadBalancer IP", variant: "IPVS",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-ingress.yaml"}, object: ingWeb,
			want: l7Loop},
		{section: s1, en: "Regular nodes/native nodes + private network CLB + CLB Ingress + access to LoadBalancer IP address",
			zh: "内网 CLB + CLB Ingress + 访问 LoadBalancer IP", variant: "iptables",
			files: []string{"profiles/iptables.yaml", "nodes/regular-3.yaml", "seed/private-ingress.yaml"}, object: ingWeb,
			want: l7Loop},

		// §2 Default behaviour of node types for CLB Services in IPVS mode.
		{section: s2, en: "Private network CLB | General Nodes | Not intercepted (traffic goes through CLB) | At risk", zh: "内网 CLB | 普通节点 | 不拦截（流量走 CLB） | 有风险",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-service.yaml"}, object: svcWeb,
			want: ipvsLoop},
		{section: s2, en: "Private network CLB | Native Nodes | Not intercepted (traffic goes through CLB) | At risk", zh: "内网 CLB | 原生节点 | 不拦截（流量走 CLB） | 有风险",
			files: []string{"profiles/ipvs.yaml", "nodes/native-3.yaml", "seed/private-service.yaml"}, object: svcWeb,
			want: ipvsLoop},
		{section: s2, en: "Private network CLB | Super Nodes | Intercepted (traffic closed-loop within the cluster) | No risk", zh: "内网 CLB | 超级节点 | 拦截（流量集群内闭环） | 无风险",
			files: []string{"profiles/ipvs.yaml", "nodes/super-3.yaml", "seed/private-service.yaml"}, object: svcWeb,
			want: superVIP()},
		{section: s2, en: "Public network CLB | - | - | No risk", zh: "公网 CLB | - | - | 无风险",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/public-service.yaml"}, object: svcWeb,
			want: publicNone},

		// §3 Layer 4 (Service).
		{section: s3, en: "Regular nodes/native nodes + private network CLB + IPVS | Passes through CLB | Loopback risk exists", zh: "普通节点/原生节点 + 内网 CLB + IPVS | 经过 CLB | 有回环风险",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-service.yaml"}, object: svcWeb,
			want: ipvsLoop},
		{section: s3, en: "Regular nodes/native nodes + private network CLB + IPVS + intra-cluster forwarding enabled | Closed loop within the cluster, without passing through the CLB | None | Resolved.",
			zh:    "普通节点/原生节点 + 内网 CLB + IPVS + 已启用集群内转发 | 集群内闭环，不经过 CLB | 无 | 已解决",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-service-prevent-loopback.yaml"}, object: svcWeb,
			want: with(interceptedVIP, func(w *seedWant) {
				w.reasons = []core.Code{"tke-internal-subnet", "tke-prevent-loopback", "node-intercepts-vip"}
				w.notes = []core.Code{"tke-prevent-loopback-long-connections"}
			})},
		{section: s3, en: "Regular nodes/native nodes + private network CLB + IPVS + SNAT enabled on CLB | Passes through CLB | None | Resolved.",
			zh: "普通节点/原生节点 + 内网 CLB + IPVS + CLB 已开启 SNAT | 经过 CLB | 无 | 已解决", variant: "snatEnable: true (English)",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-service-snat.yaml"}, object: svcWeb,
			want: with(snatNone, func(w *seedWant) {
				w.reasons = []core.Code{"tke-internal-subnet", "tke-ipvs-not-intercepted", "through-lb", "tke-l4-snat-on", "lb-source-nat"}
			})},
		{section: s3, en: "Regular nodes/native nodes + private network CLB + IPVS + SNAT enabled on CLB | Passes through CLB | None | Resolved.",
			zh: "普通节点/原生节点 + 内网 CLB + IPVS + CLB 已开启 SNAT | 经过 CLB | 无 | 已解决", variant: `snatEnable: "true" (Chinese)`,
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-service-snat-zh.yaml"}, object: svcWeb,
			want: with(snatNone, func(w *seedWant) {
				w.reasons = []core.Code{"tke-l4-snat-on", "lb-source-nat"}
				w.notes = []core.Code{"tke-snat-enable-string"}
			})},
		{section: s3, en: "Super Nodes | Closed loop within the cluster, without passing through the CLB | None | No processing is required.",
			zh:    "超级节点 | 集群内闭环，不经过 CLB | 无 | 无需处理",
			files: []string{"profiles/ipvs.yaml", "nodes/super-3.yaml", "seed/private-service.yaml"}, object: svcWeb,
			want: superVIP()},
		{section: s3, en: "iptables mode | Closed loop within the cluster, without passing through the CLB | None | No processing is required.",
			zh:    "iptables 模式 | 集群内闭环，不经过 CLB | 无 | 无需处理",
			files: []string{"profiles/iptables.yaml", "nodes/regular-3.yaml", "seed/private-service.yaml"}, object: svcWeb,
			want: iptablesVIP},

		// §4 Layer 7 (Ingress).
		{section: s4, en: "Private network CLB + SNAT disabled on CLB | Passes through CLB | Loopback risk exists", zh: "内网 CLB + CLB 未开启 SNAT | 经过 CLB | 有回环风险",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-ingress.yaml"}, object: ingWeb,
			want: l7Loop},
		{section: s4, en: "Private network CLB + SNAT enabled on CLB | Passes through CLB | None | Resolved.", zh: "内网 CLB + CLB 已开启 SNAT | 经过 CLB | 无 | 已解决",
			variant: "ingress controller v2.9.0, snatEnable: true",
			files:   []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-ingress-snat.yaml"}, object: ingWeb,
			want: with(snatNone, func(w *seedWant) {
				w.clientIP = core.ClientIPForwardedFor
				w.reasons = []core.Code{"tke-l7-not-intercepted", "through-lb", "tke-l7-snat-on", "lb-source-nat"}
			})},
		{section: s4, en: "Private network CLB + SNAT enabled on CLB | Passes through CLB | None | Resolved.", zh: "内网 CLB + CLB 已开启 SNAT | 经过 CLB | 无 | 已解决",
			variant: "ingress controller v2.8.1, keepaliveEnable: 1",
			files:   []string{"profiles/ipvs-controller-2.8.yaml", "nodes/regular-3.yaml", "seed/private-ingress-keepalive.yaml"}, object: ingWeb,
			want: with(snatNone, func(w *seedWant) {
				w.clientIP = core.ClientIPForwardedFor
				w.reasons = []core.Code{"tke-l7-not-intercepted", "tke-l7-snat-on", "lb-source-nat"}
			})},
		{section: s4, en: "Layer 7 loopback can only be resolved by enabling SNAT on the CLB. The intra-cluster forwarding solution is not applicable to Layer 7 scenarios.",
			zh:    "七层回环只能通过 CLB 开启 SNAT 解决，集群内转发方案不适用于七层场景。",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-ingress-prevent-loopback.yaml"}, object: ingWeb,
			want: with(l7Loop, func(w *seedWant) { w.notes = []core.Code{"tke-prevent-loopback-no-effect"} }),
			check: func(t *testing.T, res *core.Result) {
				rj, ok := rejectionFor(res.Decision, core.InterceptVIP)
				if !ok || rj.Reason.Code != core.CodeDecideL7NoIntercept {
					t.Errorf("intercept-vip rejection = %+v, want %s", rj, core.CodeDecideL7NoIntercept)
				}
				o := offerFor(res.Offers, core.InterceptVIP)
				if o == nil || o.Ready() || o.Unmet[0].Reason.Code != tencent.CodeL7NoForwarding {
					t.Errorf("intercept-vip offer = %+v, want unmet %s", o, tencent.CodeL7NoForwarding)
				}
				if o := offerFor(res.Offers, core.LBSourceNAT); o == nil || !strings.Contains(o.Action, "snatEnable: true") {
					t.Errorf("the layer-7 fix offered is %+v, want CLB SNAT", o)
				}
			}},

		// FAQ.
		{section: faq, en: "Q1: Why Is There No Loopback Issue with Services on Super Nodes?", zh: "Q1: 为什么超级节点下 Service 没有回环问题？",
			files: []string{"profiles/ipvs.yaml", "nodes/super-3.yaml", "seed/private-service.yaml"}, object: svcWeb,
			want: superVIP(),
			check: func(t *testing.T, res *core.Result) {
				r, _ := reasonFor(res.Assessment.Reasons, tencent.CodeSuperNodes)
				if !strings.Contains(r.Source, "FAQ Q1") {
					t.Errorf("super-node reason source %q does not cite FAQ Q1", r.Source)
				}
			}},
		{section: faq, en: "Q2: Why Is There No Loopback Issue with Services in iptables Mode?", zh: "Q2: 为什么 iptables 模式下 Service 没有回环问题？",
			files: []string{"profiles/iptables.yaml", "nodes/regular-3.yaml", "seed/private-service.yaml"}, object: svcWeb,
			want: iptablesVIP,
			check: func(t *testing.T, res *core.Result) {
				r, _ := reasonFor(res.Assessment.Reasons, tencent.CodeIPTables)
				if !strings.Contains(r.Source, "FAQ Q2") || !strings.Contains(r.Message, "before routing") {
					t.Errorf("iptables reason %+v does not give FAQ Q2's answer (DNAT before routing)", r)
				}
			}},
		{section: faq, en: `Q3: Does Adding the service.cloud.tencent.com/prevent-loopback: "true" annotation Affect Existing Services?`,
			zh:    `Q3: 添加 service.cloud.tencent.com/prevent-loopback: "true" annotation 后对现有业务有影响吗？`,
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-service.yaml"}, object: svcWeb,
			want: ipvsLoop,
			check: func(t *testing.T, res *core.Result) {
				o := offerFor(res.Offers, core.InterceptVIP)
				if o == nil {
					t.Fatal("no intercept-vip offer")
				}
				if !strings.Contains(o.Action, AnnotationText) {
					t.Errorf("intercept-vip offer does not say %q: %+v", AnnotationText, o)
				}
				// FAQ Q3's caveats change no ranking, so they are the offer's notes, not its reason.
				var notes string
				for _, n := range o.Notes {
					notes += " " + n.Message
					if !strings.Contains(n.Source, "FAQ Q3") {
						t.Errorf("intercept-vip note %q does not cite FAQ Q3 (source %q)", n.Code, n.Source)
					}
				}
				for _, s := range []string{"until they close", "100.64"} {
					if !strings.Contains(notes, s) {
						t.Errorf("intercept-vip offer notes do not say %q: %+v", s, o.Notes)
					}
				}
				if strings.Contains(o.Reason.Message, "100.64") {
					t.Errorf("intercept-vip reason still carries the FAQ Q3 caveats: %q", o.Reason.Message)
				}
			}},

		// Comparison of solution 1 (intra-cluster forwarding) and solution 2 (CLB SNAT).
		{section: cmp, en: "CLB Advanced Capabilities | Unavailable (traffic does not pass through CLB) | Available", zh: "CLB 高级能力 | 不可用（流量不经过 CLB） | 可用",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-service.yaml"}, object: svcWeb,
			want: ipvsLoop,
			check: func(t *testing.T, res *core.Result) {
				if o := offerFor(res.Offers, core.InterceptVIP); o == nil || !o.Costs.LosesLBFeatures || o.Path != core.PathVIP {
					t.Errorf("intercept-vip = %+v, want LB features lost, path VIP", o)
				}
				if o := offerFor(res.Offers, core.LBSourceNAT); o == nil || o.Costs.LosesLBFeatures || o.Path != core.PathProxy {
					t.Errorf("lb-snat = %+v, want LB features kept, path Proxy", o)
				}
			}},
		// "Can be obtained" holds for intercepted traffic when kube-proxy does not masquerade
		// it, i.e. with externalTrafficPolicy Local (DOMAIN.md §7); the row is run on such a
		// Service.
		{section: cmp, en: "Obtain Real Source IP Address | Can be obtained | TCP can be obtained through Proxy Protocol, while UDP cannot be obtained.",
			zh: "获取真实源 IP | 可以获取 | TCP 可通过 Proxy Protocol 获取，UDP 无法获取", variant: "TCP, externalTrafficPolicy Local",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-service-local.yaml"}, object: svcWeb,
			want: with(atRiskL4, func(w *seedWant) {
				w.reasons = []core.Code{"tke-ipvs-not-intercepted", "backend-share", "same-node-loop"}
				w.remedy, w.decisionPath = core.InterceptVIP, core.PathVIP
				// Local keeps the client Pod's address on the CLB path too.
				w.source, w.clientIP = core.SourceClientPod, core.ClientIPKept
			}),
			check: func(t *testing.T, res *core.Result) {
				if o := offerFor(res.Offers, core.InterceptVIP); o == nil || o.Costs.ClientIP != core.ClientIPKept {
					t.Errorf("intercept-vip client IP = %+v, want kept", o)
				}
				o := offerFor(res.Offers, core.LBSourceNAT)
				if o == nil || o.Costs.ClientIP != core.ClientIPProxyProtocol || !slices.Equal(o.Costs.Tickets, []core.Capability{tencent.CapL4SNAT}) {
					t.Errorf("lb-snat costs = %+v, want proxy-protocol and ticket clb-l4-snat", o)
				}
			}},
		{section: cmp, en: "Obtain Real Source IP Address | Can be obtained | TCP can be obtained through Proxy Protocol, while UDP cannot be obtained.",
			zh: "获取真实源 IP | 可以获取 | TCP 可通过 Proxy Protocol 获取，UDP 无法获取", variant: "UDP",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-service-udp.yaml"}, object: "Service/default/dns",
			want: ipvsLoop,
			check: func(t *testing.T, res *core.Result) {
				if o := offerFor(res.Offers, core.LBSourceNAT); o == nil || o.Costs.ClientIP != core.ClientIPLost || !strings.Contains(o.Action, "TCP:53, UDP:53") {
					t.Errorf("lb-snat = %+v, want client IP lost and both listeners named", o)
				}
			}},
	}
}

// AnnotationText is how offers spell the prevent-loopback key.
const AnnotationText = tencent.AnnotationPreventLoopback

func (r seedRow) name() string {
	n := r.en
	if r.variant != "" {
		n += " [" + r.variant + "]"
	}
	return n
}

func TestSeedRows(t *testing.T) {
	d := tencent.NewDialect(nil)
	rows := seedRows()
	sections := []string{}
	for _, r := range rows {
		if !slices.Contains(sections, r.section) {
			sections = append(sections, r.section)
		}
	}
	for _, sec := range sections {
		t.Run(sec, func(t *testing.T) {
			for _, row := range rows {
				if row.section != sec {
					continue
				}
				t.Run(row.name(), func(t *testing.T) {
					if row.zh != "" {
						t.Logf("zh: %s", row.zh)
					}
					w := load(t, row.files...)
					res, err := w.evaluate(t, d, row.object)
					if err != nil {
						t.Fatalf("Evaluate: %v", err)
					}
					checkWant(t, res, row.want)
					checkDocumented(t, res)
					if row.check != nil {
						row.check(t, res)
					}
				})
			}
		})
	}
}

func checkWant(t *testing.T, res *core.Result, w seedWant) {
	t.Helper()
	a := &res.Assessment
	if a.Risk != w.risk {
		t.Errorf("risk = %s, want %s (reasons %v)", a.Risk, w.risk, codes(a.Reasons))
	}
	if a.Symptom != w.symptom {
		t.Errorf("symptom = %s, want %s", a.Symptom, w.symptom)
	}
	if a.Path != w.path {
		t.Errorf("path = %q, want %q", a.Path, w.path)
	}
	if got := a.WorstCase.String(); got != w.worst {
		t.Errorf("worst-case probability = %s, want %s", got, w.worst)
	}
	if w.source != "" && a.Source.Kind != w.source {
		t.Errorf("source = %s, want %s", a.Source.Kind, w.source)
	}
	if w.clientIP != "" && a.Source.ClientIP != w.clientIP {
		t.Errorf("client IP = %s, want %s", a.Source.ClientIP, w.clientIP)
	}
	got := codes(a.Reasons)
	for _, c := range w.reasons {
		if !slices.Contains(got, c) {
			t.Errorf("reason %s missing from %v", c, got)
		}
	}
	notes := codes(res.Exposure.Notes)
	for _, c := range w.notes {
		if !slices.Contains(notes, c) {
			t.Errorf("note %s missing from %v", c, notes)
		}
	}
	if w.remedy != "" && res.Decision.Remedy != w.remedy {
		t.Errorf("decision = %s (%s), want %s; rejected %+v", res.Decision.Remedy, res.Decision.Why, w.remedy, res.Decision.Rejected)
	}
	if w.remedy != "" && res.Decision.Path != w.decisionPath {
		t.Errorf("decision path = %q, want %q", res.Decision.Path, w.decisionPath)
	}
	if !slices.Equal(res.Decision.Tickets, w.tickets) {
		t.Errorf("tickets = %v, want %v", res.Decision.Tickets, w.tickets)
	}
}

// TestSeedRowsAreQuoted keeps the test names honest: each row's text must appear in the seed
// file of its language. The seeds live outside the module (../shared/seeds); the test skips
// when they are not there.
func TestSeedRowsAreQuoted(t *testing.T) {
	dir := os.Getenv("LOOPGUARD_SEEDS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "seeds")
	}
	zh, err1 := os.ReadFile(filepath.Join(dir, "000_7ee1bec70247719c.txt"))
	en, err2 := os.ReadFile(filepath.Join(dir, "001_cbff227b15a7e55a.txt"))
	if err1 != nil || err2 != nil {
		t.Skipf("seed files not found in %s (set LOOPGUARD_SEEDS)", dir)
	}
	for _, r := range seedRows() {
		// Table rows are written cell by cell: one line per cell in the English seed, cells
		// separated by " | " in the Chinese one.
		for _, cell := range strings.Split(r.en, " | ") {
			if cell != "-" && !strings.Contains(string(en), cell) {
				t.Errorf("%s: %q is not in the English seed", r.section, cell)
			}
		}
		if r.zh == "" {
			continue
		}
		if !strings.Contains(string(zh), r.zh) {
			// The Chinese seed puts the cells on one line.
			for _, cell := range strings.Split(r.zh, " | ") {
				if !strings.Contains(string(zh), cell) {
					t.Errorf("%s: %q is not in the Chinese seed", r.section, cell)
				}
			}
		}
	}
}
