package netlab

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
)

// TestKubeProxyRulesLoad loads every node kind's kube-proxy ruleset into a fresh namespace of
// its own (iptables-restore --test alone misses undeclared chains). It covers InterceptIPVS
// too, whose labs cannot be built where the kernel has no IPVS, and checks its masquerade
// decision: kube-proxy ipvs mode masquerades LB traffic except under externalTrafficPolicy
// Local.
func TestKubeProxyRulesLoad(t *testing.T) {
	Require(t)
	t.Parallel()
	for _, intercept := range []Intercept{InterceptNone, InterceptIPTables, InterceptIPVSStandIn, InterceptProxyWithoutLocalVIP, InterceptIPVS} {
		for _, policy := range []TrafficPolicy{TrafficPolicyCluster, TrafficPolicyLocal} {
			for _, backendNode := range []string{"n1", "n2"} {
				sc := twoNodes(PodNetworkBridge, true, intercept, "n1", backendNode)
				sc.Service.ExternalTrafficPolicy = policy
				sc = sc.withDefaults()
				l := &Lab{sc: sc, podIP: map[string]netip.Addr{"client": podAddr(1, 0), "backend": podAddr(2, 0)}}
				rules := l.kubeProxyRules(sc.Nodes[0])
				name := intercept.String() + "/" + policy.String() + "/backend-on-" + backendNode
				if err := loadInFreshNetns(t, rules); err != nil {
					t.Errorf("%s: %v", name, err)
				}
				jump := strings.Contains(rules, "-d "+sc.LB.VIP.String()+"/32 -p tcp -m tcp --dport 80 -j KUBE-LOAD-BALANCER")
				masq := strings.Contains(rules, "-A KUBE-LOAD-BALANCER -j KUBE-MARK-MASQ")
				ret := strings.Contains(rules, "-A KUBE-LOAD-BALANCER -j RETURN")
				wantIPVS := intercept == InterceptIPVS
				if jump != wantIPVS || masq != (wantIPVS && policy == TrafficPolicyCluster) || ret != (wantIPVS && policy == TrafficPolicyLocal) {
					t.Errorf("%s: KUBE-LOAD-BALANCER jump %v, masquerade %v, return %v\n%s", name, jump, masq, ret, rules)
				}
			}
		}
	}
}

func loadInFreshNetns(t *testing.T, rules string) error {
	pin := filepath.Join(netnsDir, fmt.Sprintf("rules%d", labSeq.Add(1)))
	if err := createNetns(pin); err != nil {
		return err
	}
	defer func() {
		if err := deleteNetns(pin); err != nil {
			t.Error(err)
		}
	}()
	_, err := run(t.Context(), pin, rules, "iptables-restore", "-w")
	return err
}
