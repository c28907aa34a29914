package kubernetes

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// Some clouds' defaults are not the Service's to say: a cluster-wide setting of the cloud's
// controller decides (Hetzner's HCLOUD_LOAD_BALANCERS_* environment, OpenStack's cloud.conf
// [LoadBalancer] section), or the cloud API's own default, which no public source states
// (Alibaba's NLB client IP preservation). Where the inputs show the setting (the controller's
// Pod with its environment), it is read; otherwise the exposure's note names the setting and
// what to confirm, and the fact stays unknown.

// Cluster-wide settings read here.
const (
	// envHetznerUsesProxyProtocol turns the PROXY protocol on for every Service that does not
	// set load-balancer.hetzner.cloud/uses-proxyprotocol (hcloud-cloud-controller-manager
	// internal/config/load_balancer_envs.go, since v1.29.0, #1052; the status follows it since
	// v1.29.1, #1131).
	envHetznerUsesProxyProtocol = "HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL"
	srcHetznerDefaults          = "hetznercloud/hcloud-cloud-controller-manager internal/config/load_balancer_envs.go (HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL: the PROXY protocol for every Service without the annotation, default false; v1.29.0, #1052), hcloud/load_balancers.go getProxyProtocolEnabled (the annotation, else that default, decides ipMode Proxy; v1.29.1, #1131), docs/reference/load_balancer_envs.md"
	srcOpenStackDefaults        = "kubernetes/cloud-provider-openstack docs/openstack-cloud-controller-manager/using-openstack-cloud-controller-manager.md ([LoadBalancer] lb-provider: \"amphora\" by default, or \"ovn\"; enable-ingress-hostname), expose-applications-using-loadbalancer-type-service.md (\"Use PROXY protocol to preserve client IP\"), pkg/openstack/loadbalancer.go getProxyProtocolFromServiceAnnotation (the PROXY protocol only from the Service's annotation)"
	srcAlibabaNLBDefault        = "kubernetes/cloud-provider-alibaba-cloud pkg/controller/service/nlbv2/server_groups.go (PreserveClientIpEnabled sent only when the annotation is set; otherwise the NLB API's default applies, which no public page read here states for the API: Alibaba's ROS template ALIYUN::NLB::ServerGroup defaults it to false, a template default)"
)

// CodeCloudDefaultUnseen: the cloud's default for this Service depends on a setting the inputs
// do not show.
const CodeCloudDefaultUnseen core.Code = "k8s-cloud-default-unseen"

var ruleCloudDefaultUnseen = core.Rule{Code: CodeCloudDefaultUnseen,
	Summary: "What the load balancer does here depends on a cluster-wide setting of the cloud's controller, or on a cloud API default no public source states, which the inputs do not show; the note names it and what to confirm (then declare loopguard.io/lb-source-nat).",
	Source:  srcHetznerDefaults + "; " + srcOpenStackDefaults + "; " + srcAlibabaNLBDefault + "; " + srcIBM}

// controllerEnv is one environment variable of a Pod container in the inputs.
type controllerEnv struct {
	pod, value string
	fromRef    bool // valueFrom: a Secret or ConfigMap the inputs may not hold
	found      bool
}

type envMemoKey struct{ name string }

// podEnv finds the first Pod container in the inputs that sets the variable (the cloud's
// controller, as `kubectl get pods -A` shows it).
func podEnv(c *core.Cluster, name string) controllerEnv {
	if c == nil {
		return controllerEnv{}
	}
	e, _ := c.Memo(envMemoKey{name}, func() any {
		for _, p := range c.Pods() {
			for _, ctr := range p.Spec.Containers {
				for _, v := range ctr.Env {
					if v.Name == name {
						return controllerEnv{pod: p.Namespace + "/" + p.Name, value: v.Value, fromRef: v.ValueFrom != nil, found: true}
					}
				}
			}
		}
		return controllerEnv{}
	}).(controllerEnv)
	return e
}

// hetznerDefaultProxyProtocol: a Service without uses-proxyprotocol gets the controller's
// cluster-wide default. Its Pod's environment says it; failing that, a status with ipMode Proxy
// does, because this controller publishes Proxy only while the PROXY protocol is on.
func hetznerDefaultProxyProtocol(svc *corev1.Service, c *core.Cluster, ownsStatus bool, on string) []snatFact {
	if _, set := svc.Annotations[annHetznerProxyProtocol]; set {
		return nil
	}
	if env := podEnv(c, envHetznerUsesProxyProtocol); env.found && !env.fromRef {
		if v, err := strconv.ParseBool(env.value); err == nil && v {
			return []snatFact{{nat: core.Yes, proxy: core.Yes, reason: ruleProxyProtocolSNAT.Because("Hetzner Cloud: the Service does not set " +
				annHetznerProxyProtocol + ", and Pod " + env.pod + " sets " + envHetznerUsesProxyProtocol + "=" + env.value +
				", the controller's default for it" + on + " [" + srcHetznerDefaults + "]")}}
		}
		return nil
	}
	if ownsStatus {
		return nil
	}
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IPMode != nil && *ing.IPMode == corev1.LoadBalancerIPModeProxy {
			return []snatFact{{nat: core.Yes, proxy: core.Yes, reason: ruleProxyProtocolSNAT.Because("Hetzner Cloud: the Service does not set " +
				annHetznerProxyProtocol + ", yet the controller published ipMode Proxy for " + ing.IP +
				", which it does only while the PROXY protocol is on: its cluster-wide " + envHetznerUsesProxyProtocol + " is true" + on +
				" [" + srcHetznerDefaults + "]")}}
		}
	}
	return nil
}

// cloudUnseen names, for an exposure whose source NAT stayed unknown, the setting that decides
// it and what to confirm.
func cloudUnseen(det detection, svc *corev1.Service, c *core.Cluster) []core.Reason {
	if det.row == nil {
		return nil
	}
	because := func(msg string) []core.Reason { return []core.Reason{ruleCloudDefaultUnseen.Because(msg)} }
	switch det.row.Cloud {
	case CloudHetzner:
		if _, set := svc.Annotations[annHetznerProxyProtocol]; set {
			return because("Hetzner Cloud: without the PROXY protocol, whether the load balancer replaces the client's address no source read here says; declare loopguard.io/lb-source-nat")
		}
		env := podEnv(c, envHetznerUsesProxyProtocol)
		switch {
		case env.found && env.fromRef:
			return because("Hetzner Cloud: the Service does not set " + annHetznerProxyProtocol + ", so the controller's " + envHetznerUsesProxyProtocol +
				" decides the PROXY protocol; Pod " + env.pod + " takes it from a Secret or ConfigMap the inputs do not show: confirm it; without the PROXY protocol, whether the load balancer replaces the client's address no source read here says: declare loopguard.io/lb-source-nat")
		case env.found:
			return because("Hetzner Cloud: Pod " + env.pod + " sets " + envHetznerUsesProxyProtocol + "=" + quote(env.value) +
				" (PROXY protocol off by default); without it, whether the load balancer replaces the client's address no source read here says: declare loopguard.io/lb-source-nat")
		}
		return because("Hetzner Cloud: the Service does not set " + annHetznerProxyProtocol + ", so the controller's cluster-wide " + envHetznerUsesProxyProtocol +
			" (v1.29.0 and later) decides the PROXY protocol, and no Pod in the inputs shows it (an ipMode VIP status says it is off, from v1.29.1); confirm it on the hcloud-cloud-controller-manager Deployment, and declare loopguard.io/lb-source-nat")
	case CloudOpenStack:
		return because("OpenStack: whether the Octavia load balancer replaces the client's address depends on lb-provider in the [LoadBalancer] section of the openstack-cloud-controller-manager's cloud.conf (\"amphora\", the default, is a proxy: the client's address comes only with the PROXY protocol; \"ovn\" passes it through), which the inputs do not show; confirm it and declare loopguard.io/lb-source-nat")
	case CloudAlibaba:
		if alibabaNLB(svc) {
			return because("Alibaba Cloud NLB: the Service does not set " + annAlibabaPreserveClient + ", so the NLB API's default for client IP preservation applies, and no public source read here states it: treated as unknown; set the annotation to \"on\" or \"off\", or declare loopguard.io/lb-source-nat")
		}
	case CloudIBM:
		return because("IBM Cloud: neither a VPC ALB (a hostname status or a -vpc- annotation) nor a VPC NLB (\"nlb\" in " + annIBMEnableFeatures +
			") is recognisable, so this may be a classic cluster's NLB, whose behaviour is not read here; declare loopguard.io/lb-source-nat")
	}
	return nil
}
