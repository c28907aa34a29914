package dataplane

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/internal/proxylab"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// TestKubeProxyVersionSkew checks the version-skew rule with the real binaries: kube-proxy may
// lag the API server by up to three minor versions, and one that predates ipMode (v1.28)
// intercepts every LB address, so a Service whose status says Proxy is served on the VIP path
// anyway. The expectation comes from the plain Kubernetes dialect reading the Service as the
// API server stores it, with the cluster's kube-proxy version, and from core.Assess; the lab
// runs that kube-proxy (iptables mode: v1.28 has no nftables mode) and the current one as a
// control, each on both failure directions:
//
//   - a plain backend on the client's node behind an LB without source NAT: the loop with a
//     kube-proxy that honours Proxy, a working (intercepted) connection with the old one;
//   - a backend that requires a PROXY header behind HAProxy: served with the current
//     kube-proxy, rejected with the old one, whose interception skips the LB and its header.
func TestKubeProxyVersionSkew(t *testing.T) {
	if err := proxylab.Available(); err != nil {
		skipOrFail(t, err)
	}
	type binary struct{ path, version string }
	var bins []binary
	for _, env := range []string{proxylab.EnvKubeProxySkew, proxylab.EnvKubeProxy} {
		path, version, err := proxylab.KubeProxyBinary(env)
		if err != nil {
			skipOrFail(t, err)
		}
		bins = append(bins, binary{path, version})
	}
	for _, b := range bins {
		for _, expects := range []proxylab.ProxyProtocol{proxylab.ProxyNone, proxylab.ProxyV2} {
			c := rcase{ipMode: corev1.LoadBalancerIPModeProxy, lbSNAT: expects != proxylab.ProxyNone, binding: bindDirectToPod,
				place: lbPicksClientNode, expects: expects}
			c.name = fmt.Sprintf("kube-proxy=%s/ipmode=Proxy/backend-expects-proxy=%v", b.version, expects)
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				sc := realScenario(b.path, proxylab.ModeIPTables, &c)
				// Build must not assume what this kube-proxy does with ipMode: that is the question.
				sc.EndpointOnly = true
				l, err := proxylab.Build(t.Context(), sc)
				if err != nil {
					t.Fatalf("harness: %v", err)
				}
				defer func() {
					if err := l.Close(); err != nil {
						t.Errorf("harness: %v", err)
					}
				}()

				// The dialect's reading of the real object, for this kube-proxy.
				svc, err := l.Service(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				if got := svc.Status.LoadBalancer.Ingress; len(got) != 1 || got[0].IPMode == nil || *got[0].IPMode != corev1.LoadBalancerIPModeProxy {
					t.Fatalf("the API server stores %+v, want one ingress with ipMode Proxy", got)
				}
				cluster, err := core.NewCluster(core.ClusterProfile{KubernetesVersion: "v1.37.2", ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: b.version})
				if err != nil {
					t.Fatal(err)
				}
				tr, err := kubernetes.NewDialect(nil).Translate(svc, cluster)
				if err != nil {
					t.Fatalf("dialect: %v", err)
				}
				// The lab's own facts (placement, SNAT, header) with the dialect's Intercept.
				c.exposure = realProxyExposure(core.ProxyModeIPTables, c)
				c.exposure.Intercept = tr.Exposure.Intercept
				for _, r := range tr.Exposure.Reasons {
					t.Logf("dialect: %s: %s", r.Code, r.Message)
				}

				programmed, err := l.LBProgrammed(t.Context(), clientNode)
				if err != nil {
					t.Fatal(err)
				}
				if want := tr.Exposure.Intercept == core.Yes; programmed != want {
					rules, _ := l.Rules(t.Context(), clientNode)
					t.Errorf("kube-proxy %s programmed the LB address %v: %v; the dialect says it intercepts: %v\n%s", b.version, l.VIP(), programmed, tr.Exposure.Intercept, rules)
				}

				model := expectFor(&c)
				res := l.Connect(t.Context())
				lab := observeReal(res, &c)
				t.Logf("LB address programmed on %s: %v; model: %v; lab: %v; %v", clientNode, programmed, model, lab, res)
				if d := compareReal(model, lab); d != nil {
					t.Errorf("model and lab disagree: %v\n%s", d, l.Logs())
				}
				if programmed == res.ReachedLB {
					t.Errorf("LB address programmed %v, and the connection reached the LB %v: one of them is wrong", programmed, res.ReachedLB)
				}
			})
		}
	}
}

// skipOrFail skips when a component is simply not installed, and fails when it is configured
// but broken.
func skipOrFail(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, proxylab.ErrNoBinary) {
		t.Skip(err)
	}
	t.Fatal(err)
}
