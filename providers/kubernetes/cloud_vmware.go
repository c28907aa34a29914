package kubernetes

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// VMware vSphere: the vSphere cloud provider (kubernetes/cloud-provider-vsphere, read at
// v1.36.0: the "vsphere" CPI with its optional NSX-T load balancer, and "vsphere-paravirtual"
// for TKG guest clusters), and, in a vSphere Supervisor cluster in NSX VPC mode,
// vmware-tanzu/nsx-operator (read at v9.1.1.0), which sets the ipMode of every LoadBalancer
// Service's IP entries, Proxy unless a label says vip.
type vmwareCloud struct{ cloudBase }

const (
	labelNSXIPMode        = "nsx.vmware.com/ingress-ip-mode"
	settingVSphereNoSNAT  = "snatDisabled"
	srcNSXIPMode          = "vmware-tanzu/nsx-operator pkg/controllers/service/service_lb_controller.go setServiceLbStatus@v9.1.1.0 (every IP entry of every LoadBalancer Service: ipMode Proxy, VIP only with the label nsx.vmware.com/ingress-ip-mode exactly \"vip\"; only in NSX VPC mode with an API server of v1.29.0 or later; first released in v9.1.0)"
	srcVSphereCPI         = "kubernetes/cloud-provider-vsphere pkg/cloudprovider/vsphere/loadbalancer/access.go CreatePool@v1.36.0 (the NSX-T pool's SNAT: AutoMap, the load balancer's own address, unless [LoadBalancer] snatDisabled) and lbprovider.go newLoadBalancerStatus (the IP, no ipMode); vsphereparavirtual/loadbalancer.go toStatus (a guest cluster: the IP, no ipMode); Broadcom NSX API documentation (LBSnatAutoMap, LBSnatDisabled)"
	srcNSXVPCLB           = "vmware-tanzu/nsx-operator pkg/apis/vpc/v1alpha1/networkinfo_types.go@v9.1.1.0 (LoadBalancerIPAddresses: the AVI service-engine subnet or the NSX load balancer's SNAT addresses, which the backends see: inferred)"
	codeNSXProxyByDefault = core.Code("k8s-nsx-operator-proxy-by-default")
)

var ruleNSXProxyByDefault = core.Rule{Code: codeNSXProxyByDefault,
	Summary: "In a vSphere Supervisor cluster in NSX VPC mode, nsx-operator publishes ipMode Proxy for every LoadBalancer Service's IPs unless the Service's label nsx.vmware.com/ingress-ip-mode is exactly \"vip\": in-cluster traffic goes through the load balancer.",
	Source:  srcNSXIPMode}

var vmwareFacts = cloudFacts{
	name:               "vmware",
	title:              "VMware vSphere",
	providerIDPrefixes: []string{"vsphere://"},
	annotationPrefixes: []string{"loadbalancer.vmware.io/"},
	sourceNAT:          core.Unknown, // the NSX-T load balancer's SNAT setting, or the Supervisor's: read
	ipMode:             ccmIPMode{read: true, source: srcVSphereCPI + "; " + srcNSXIPMode},
	settings:           []controllerSetting{{name: settingVSphereNoSNAT}},
	source:             srcVSphereCPI,
	rules:              []core.Rule{ruleNSXProxyByDefault},
	doc: cloudDoc{
		lb:      "the vSphere CPI's NSX-T load balancer replaces the client's address (SNAT AutoMap) unless its config sets `snatDisabled`; a Supervisor's NSX VPC load balancer its SNAT addresses (inferred); a TKG guest cluster: the Supervisor's, not read",
		backend: "nothing (no PROXY or X-Forwarded-For setting per Service)",
		status:  "the IP, no ipMode (both CPIs); in a Supervisor in NSX VPC mode nsx-operator (v9.1.0+) rewrites every IP entry to ipMode `Proxy` unless the label `nsx.vmware.com/ingress-ip-mode` is exactly `vip`",
		remedy:  "none offered: there is no per-Service setting; the label `vip` turns nsx-operator's Proxy off",
		sources: "cloud-provider-vsphere v1.36.0: `loadbalancer/access.go`, `lbprovider.go`, `vsphereparavirtual/loadbalancer.go`; nsx-operator v9.1.1.0: `pkg/controllers/service/service_lb_controller.go`, `pkg/apis/vpc/v1alpha1/networkinfo_types.go`",
	},
}

func (vmwareCloud) facts() *cloudFacts { return &vmwareFacts }

// nsxIPModeLabel reads the label as setServiceLbStatus does: exactly "vip" is VIP, "proxy"
// Proxy; any other value is Proxy all the same (the default), which the operator does not
// take as a choice.
func nsxIPModeLabel(svc *corev1.Service) (corev1.LoadBalancerIPMode, taken) {
	raw, set := svc.Labels[labelNSXIPMode]
	switch {
	case !set:
		return corev1.LoadBalancerIPModeProxy, valueAbsent
	case raw == "vip":
		return corev1.LoadBalancerIPModeVIP, valueTaken
	case raw == "proxy":
		return corev1.LoadBalancerIPModeProxy, valueTaken
	}
	return corev1.LoadBalancerIPModeProxy, valueIgnored
}

func (vmwareCloud) read(v *cloudView) {
	svc := v.svc
	if _, st := nsxIPModeLabel(svc); st == valueIgnored {
		v.note(ruleValueIgnored.Because("Service " + svc.Namespace + "/" + svc.Name + ": label " + labelNSXIPMode + ": " + quote(svc.Labels[labelNSXIPMode]) +
			": nsx-operator takes exactly \"vip\" (or \"proxy\"); it publishes ipMode Proxy for this value [" + srcNSXIPMode + "]"))
	}
	if !v.detected {
		return
	}
	if s := v.setting(settingVSphereNoSNAT); s.found {
		if off, ok := goBool(s.value); ok {
			nat := core.Yes
			if off {
				nat = core.No
			}
			v.byDefault(nat, core.Unknown, ruleCloudDefault.Because("vmware: "+s.from+" states "+settingVSphereNoSNAT+"="+s.value+" for the vSphere CPI's NSX-T load balancer"+v.on()+" ["+srcVSphereCPI+"]"))
			return
		}
	}
	v.unseenSetting("vmware: the vSphere CPI's NSX-T load balancer replaces the client's address unless its config sets snatDisabled, a Supervisor's NSX VPC load balancer does too (inferred), and a TKG guest cluster's is the Supervisor's; which one this is the inputs do not show: state snatDisabled in the profile's controllerSettings, or declare loopguard.io/lb-source-nat [" + srcVSphereCPI + "; " + srcNSXVPCLB + "]")
}

// userIPMode: the label the user wrote, when nsx-operator takes it.
func (vmwareCloud) userIPMode(v *cloudView) (corev1.LoadBalancerIPMode, core.Reason, bool) {
	mode, st := nsxIPModeLabel(v.svc)
	if st != valueTaken {
		return "", core.Reason{}, false
	}
	r := ruleUserIPMode.Because("Service " + v.svc.Namespace + "/" + v.svc.Name + ": label " + labelNSXIPMode + ": " + quote(v.svc.Labels[labelNSXIPMode]) +
		": nsx-operator publishes ipMode " + string(mode) + " [" + srcNSXIPMode + "]")
	return mode, r, true
}

// fixes: nothing per Service changes the load balancer; nsx-operator's Proxy is noted.
func (vmwareCloud) fixes(v *cloudView) []cloudFix {
	if mode, st := nsxIPModeLabel(v.svc); st != valueTaken && mode == corev1.LoadBalancerIPModeProxy && len(v.st.proxy) > 0 {
		v.e.Notes = append(v.e.Notes, ruleNSXProxyByDefault.Reason())
	}
	return nil
}
