package kubernetes

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
)

// hcloudPod is the hcloud-cloud-controller-manager's Pod as `kubectl get pods -A` shows it,
// with the cluster-wide PROXY-protocol default set literally or from a Secret.
func hcloudPod(value string, fromSecret bool) *corev1.Pod {
	env := corev1.EnvVar{Name: envHetznerUsesProxyProtocol, Value: value}
	if fromSecret {
		env = corev1.EnvVar{Name: envHetznerUsesProxyProtocol, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "hcloud"}, Key: "pp"}}}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "hcloud-cloud-controller-manager-7d9f"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "hcloud-cloud-controller-manager",
			Env: []corev1.EnvVar{{Name: "HCLOUD_TOKEN", ValueFrom: &corev1.EnvVarSource{}}, env}}}}}
}

// clusterWith is cloudCluster with more objects (the cloud controller's Pod).
func clusterWith(t *testing.T, providerID string, extra ...runtime.Object) *core.Cluster {
	t.Helper()
	c := cloudCluster(t, providerID)
	for _, o := range extra {
		c.Add(o)
	}
	return c
}

// TestClusterWideDefaults: where a cluster-wide setting of the cloud's controller decides what
// the load balancer does to a Service that says nothing, loopguard reads it from the
// controller's Pod when the inputs hold it, infers it from the status where the controller's
// source allows, and otherwise names it in a note (k8s-cloud-default-unseen) and stays unknown.
func TestClusterWideDefaults(t *testing.T) {
	proxyStatus := corev1.LoadBalancerIngress{IP: "10.0.0.20", IPMode: ptr(corev1.LoadBalancerIPModeProxy)}
	for name, tc := range map[string]struct {
		svc        *corev1.Service
		providerID string
		extra      []runtime.Object
		ownsStatus bool
		snat       core.Fact
		proxy      core.Fact
		symptom    core.Symptom
		// note: a substring of the k8s-cloud-default-unseen note ("" when there is none);
		// reason: a substring of a reason of the exposure.
		note, reason string
	}{
		// HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL=true on the controller: the header is
		// expected, and intercepting the IP breaks every in-cluster connection.
		"Hetzner, the controller's default on, IP intercepted": {svc: cloudService("web", nil, "TCP", ipVIP), providerID: "hcloud://",
			extra: []runtime.Object{hcloudPod("true", false)}, snat: core.Yes, proxy: core.Yes, symptom: core.SymptomProtocolError,
			reason: "Pod kube-system/hcloud-cloud-controller-manager-7d9f sets HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL=true"},
		"Hetzner, the controller's default off": {svc: cloudService("web", nil, "TCP", ipVIP), providerID: "hcloud://",
			extra: []runtime.Object{hcloudPod("false", false)}, snat: core.Unknown, note: "sets HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL=\"false\""},
		"Hetzner, the default from a Secret": {svc: cloudService("web", nil, "TCP", ipVIP), providerID: "hcloud://",
			extra: []runtime.Object{hcloudPod("", true)}, snat: core.Unknown, note: "from a Secret or ConfigMap the inputs do not show"},
		// The controller publishes Proxy only while the PROXY protocol is on (v1.29.1, #1131).
		"Hetzner, no Pod, ipMode Proxy without the annotation": {svc: cloudService("web", nil, "TCP", proxyStatus), providerID: "hcloud://",
			snat: core.Yes, proxy: core.Yes, symptom: core.SymptomNone, reason: "which it does only while the PROXY protocol is on"},
		// A status the host wrote itself (a CCM fork) says nothing about the cloud's default.
		"Hetzner, ipMode Proxy a CCM fork published": {svc: cloudService("web", nil, "TCP", proxyStatus), providerID: "hcloud://", ownsStatus: true,
			snat: core.Unknown, note: "the inputs do not show it"},
		"Hetzner, nothing seen": {svc: cloudService("web", nil, "TCP", ipVIP), providerID: "hcloud://",
			snat: core.Unknown, note: "confirm it on the hcloud-cloud-controller-manager Deployment"},
		// The annotation wins over the default, as in the controller (getProxyProtocolEnabled).
		"Hetzner, annotation false over a default on": {svc: cloudService("web", map[string]string{annHetznerProxyProtocol: "false"}, "TCP", ipVIP), providerID: "hcloud://",
			extra: []runtime.Object{hcloudPod("true", false)}, snat: core.Unknown, note: "without the PROXY protocol"},
		"OpenStack, lb-provider unseen": {svc: cloudService("web", nil, "TCP", ipVIP), providerID: "openstack://",
			snat: core.Unknown, note: "lb-provider in the [LoadBalancer] section"},
		"Alibaba NLB, preservation not set": {svc: alibabaNLBService(nil), snat: core.Unknown, note: "no public source read here states it"},
		"IBM, no VPC mark":                  {svc: cloudService("web", nil, "TCP", ipVIP), providerID: ibmProviderID, snat: core.Unknown, note: "classic cluster's NLB"},
		// The row's own fact leaves nothing unseen.
		"IBM VPC ALB": {svc: cloudService("web", nil, "TCP", ibmALBStatus), providerID: ibmProviderID, snat: core.Yes, reason: "IBM Cloud VPC ALB"},
	} {
		t.Run(name, func(t *testing.T) {
			d := NewDialect(&Options{OwnsStatus: tc.ownsStatus})
			res, err := core.Evaluate(d, tc.svc, clusterWith(t, tc.providerID, tc.extra...), core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			e := &res.Exposure
			if e.LBSourceNAT != tc.snat || tc.proxy != core.Unknown && e.ProxyProtocol != tc.proxy || tc.symptom != "" && res.Assessment.Symptom != tc.symptom {
				t.Fatalf("snat %s proxy %s symptom %s, want %s %s %s; reasons %v; notes %v", e.LBSourceNAT, e.ProxyProtocol, res.Assessment.Symptom,
					tc.snat, tc.proxy, tc.symptom, e.Reasons, e.Notes)
			}
			var notes []string
			for _, n := range e.Notes {
				if n.Code == CodeCloudDefaultUnseen {
					notes = append(notes, n.Message)
				}
			}
			switch {
			case tc.note == "" && len(notes) != 0:
				t.Errorf("unexpected note %q", notes)
			case tc.note != "" && (len(notes) != 1 || !strings.Contains(notes[0], tc.note)):
				t.Errorf("notes %q, want one containing %q", notes, tc.note)
			}
			if tc.reason == "" {
				return
			}
			for _, r := range e.Reasons {
				if strings.Contains(r.Message, tc.reason) {
					return
				}
			}
			t.Errorf("no reason containing %q in %v", tc.reason, e.Reasons)
		})
	}
}

// TestBareMetalNoProxyIPMode: MetalLB, kube-vip and Cilium LB IPAM publish IPs only, and there
// is no load balancer in front of the nodes, so "publish ipMode Proxy" is unsupported there,
// saying why, even when the backends expect something from a load balancer.
func TestBareMetalNoProxyIPMode(t *testing.T) {
	for name, svc := range map[string]*corev1.Service{
		"metallb":  cloudService("web", map[string]string{"metallb.universe.tf/address-pool": "lan", "loopguard.io/backend-expects": "proxy-protocol"}, "TCP", ipVIP),
		"kube-vip": cloudService("web", map[string]string{"kube-vip.io/loadbalancerIPs": "10.0.0.20", "loopguard.io/backend-expects": "proxy-protocol"}, "TCP", ipVIP),
		"cilium":   cloudService("web", map[string]string{"lbipam.cilium.io/ips": "10.0.0.20", "loopguard.io/backend-expects": "proxy-protocol"}, "TCP", ipVIP),
	} {
		t.Run(name, func(t *testing.T) {
			res, err := core.Evaluate(NewDialect(nil), svc, cloudCluster(t, ""), core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, o := range res.Offers {
				for _, u := range o.Unmet {
					found = found || o.Remedy == core.ThroughLB && u.Kind == core.PreconditionUnsupported && u.Reason.Code == codeCCMNoProxyIPMode &&
						strings.Contains(u.Reason.Message, "no load balancer in front of the nodes")
				}
			}
			if !found || res.Decision.Remedy == core.ThroughLB {
				t.Errorf("decision %s; offers %+v: want the ipMode offer unsupported, no load balancer to go through", res.Decision.Remedy, res.Offers)
			}
		})
	}
}
