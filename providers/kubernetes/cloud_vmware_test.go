package kubernetes

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// TestVMwareParsers: nsx-operator's label, read as setServiceLbStatus@v9.1.1.0 reads it.
func TestVMwareParsers(t *testing.T) {
	checkSpellings(t, srcNSXIPMode, map[string]string{absent: "default", "vip": "VIP", "proxy": "Proxy", "VIP": "ignored", "Vip": "ignored",
		"true": "ignored", "True": "ignored", "TRUE": "ignored", "1": "ignored", "t": "ignored", "yes": "ignored", "": "ignored", "garbage": "ignored"},
		func(v string) string {
			svc := annotated("x", absent)
			if v != absent {
				svc.Labels = map[string]string{labelNSXIPMode: v}
			}
			return outcome(nsxIPModeLabel(svc))
		})
}

// TestVMware: vSphere is recognised, the NSX-T load balancer's SNAT follows the stated
// snatDisabled, and the user's label is their ipMode.
func TestVMware(t *testing.T) {
	for value, want := range map[string]core.Fact{"": core.Unknown, "true": core.No, "false": core.Yes} {
		p := core.ClusterProfile{ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: "v1.33.1", KubernetesVersion: "v1.33.1"}
		if value != "" {
			p.ControllerSettings = map[string]string{settingVSphereNoSNAT: value}
		}
		c := clusterWith(t, "vsphere://4204a")
		c.Profile = p
		tr, err := NewDialect(nil).Translate(cloudService("web", nil, "TCP", ipVIP), c)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Exposure.LBSourceNAT != want {
			t.Errorf("snatDisabled %q: snat %s, want %s (notes %v)", value, tr.Exposure.LBSourceNAT, want, tr.Exposure.Notes)
		}
	}
	svc := cloudService("web", nil, "TCP", ipVIP)
	svc.Labels = map[string]string{labelNSXIPMode: "vip"}
	c := cloudCluster(t, "vsphere://4204a")
	if mode, r, ok := UserIPMode(svc, c); !ok || mode != corev1.LoadBalancerIPModeVIP || r.Code != CodeUserIPMode ||
		!strings.Contains(r.Message, "label "+labelNSXIPMode+": \"vip\"") {
		t.Errorf("UserIPMode = %q %v %+v", mode, ok, r)
	}
}
