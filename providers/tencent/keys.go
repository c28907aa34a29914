package tencent

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Service annotations TKE's service controller reads (docs/sources.md#tke-annotations; Tencent doc 457/51258
// "Service Annotation 说明", 457/45490 "Service 负载均衡配置").
const (
	// AnnotationPreventLoopback turns on intra-cluster forwarding in IPVS mode (seeds 000/001
	// solution 1): "true" or "false".
	AnnotationPreventLoopback = "service.cloud.tencent.com/prevent-loopback"
	// AnnotationServiceConfig names the TkeServiceConfig (same namespace) the Service uses.
	AnnotationServiceConfig = "service.cloud.tencent.com/tke-service-config"
	// AnnotationServiceConfigAuto: "true" makes the controller create <service>-auto-service-config.
	// It may not be combined with AnnotationServiceConfig (457/45490).
	AnnotationServiceConfigAuto = "service.cloud.tencent.com/tke-service-config-auto"
	// AnnotationInternalSubnet gives the Service a PRIVATE CLB in that subnet (457/51258).
	AnnotationInternalSubnet = "service.kubernetes.io/qcloud-loadbalancer-internal-subnetid"
	// AnnotationExistedLB reuses an existing CLB (457/51258).
	AnnotationExistedLB = "service.kubernetes.io/tke-existed-lbid"
	// AnnotationLoadBalancerID is read-only: the CLB the Service uses (457/51258).
	AnnotationLoadBalancerID = "service.kubernetes.io/loadbalance-id"
	// AnnotationDirectAccess makes the CLB send to Pods directly (VPC-CNI): "true" or "false".
	AnnotationDirectAccess = "service.cloud.tencent.com/direct-access"
	// AnnotationBackendsLabel is a label selector for the nodes the CLB binds (457/51258
	// "指定接入层后端").
	AnnotationBackendsLabel = "service.kubernetes.io/qcloud-loadbalancer-backends-label"
	// AnnotationPassToTarget is the CLB "pass to target" switch (security groups bypass).
	AnnotationPassToTarget = "service.cloud.tencent.com/pass-to-target"
	// AnnotationMode "skip" makes the service controller (>= v2.10.0) leave the Service alone.
	AnnotationMode = "service.cloud.tencent.com/mode"
)

// Ingress annotations TKE's ingress controller reads (Tencent doc 457/56112 "Ingress
// Annotation 说明", 457/45700 "Ingress 使用 TkeServiceConfig 配置 CLB", 457/45693).
const (
	// AnnotationIngressClass selects the controller; "qcloud" (or no class at all) is TKE's.
	AnnotationIngressClass = "kubernetes.io/ingress.class"
	// AnnotationIngressServiceConfig names the TkeServiceConfig the Ingress uses.
	AnnotationIngressServiceConfig = "ingress.cloud.tencent.com/tke-service-config"
	// AnnotationIngressServiceConfigAuto: "true" creates <ingress>-auto-ingress-config.
	AnnotationIngressServiceConfigAuto = "ingress.cloud.tencent.com/tke-service-config-auto"
	// AnnotationIngressSubnet gives the Ingress a PRIVATE CLB in that subnet.
	AnnotationIngressSubnet = "kubernetes.io/ingress.subnetId"
	// AnnotationIngressExistLB reuses an existing CLB.
	AnnotationIngressExistLB = "kubernetes.io/ingress.existLbId"
	// AnnotationIngressLoadBalancerID is read-only: the CLB the Ingress uses.
	AnnotationIngressLoadBalancerID = "kubernetes.io/ingress.qcloud-loadbalance-id"
	// AnnotationIngressDirectAccess makes the CLB send to Pods directly: "true" or "false".
	AnnotationIngressDirectAccess = "ingress.cloud.tencent.com/direct-access"
	// AnnotationIngressMode "skip" makes the ingress controller (>= v2.10.0) leave the Ingress alone.
	AnnotationIngressMode = "ingress.cloud.tencent.com/mode"
	// AnnotationIngressRuleMix "true" exposes HTTP and HTTPS listeners together (457/45693).
	AnnotationIngressRuleMix = "kubernetes.io/ingress.rule-mix"
	// AnnotationIngressListenPorts changes the listener ports (457/56112); loopguard does not
	// parse it.
	AnnotationIngressListenPorts = "ingress.cloud.tencent.com/listen-ports"

	// IngressClassQCloud is TKE's CLB ingress class.
	IngressClassQCloud = "qcloud"
	// ModeSkip is the only documented value of the mode annotations.
	ModeSkip = "skip"
)

// Node labels (docs/sources.md#tke-annotations).
const (
	// LabelInstanceType with value InstanceTypeEklet marks a super node (qcloud-documents).
	LabelInstanceType     = corev1.LabelInstanceTypeStable
	InstanceTypeEklet     = "eklet"
	LabelNativeMachine    = "node.tke.cloud.tencent.com/machine"
	LabelNativeMachineSet = "node.tke.cloud.tencent.com/machineset"
)

// Controller ConfigMaps in kube-system whose data.VERSION gives the controller's version
// (457/51258, 457/56112).
const (
	ControllerNamespace           = "kube-system"
	ServiceControllerConfigMap    = "tke-service-controller-config"
	IngressControllerConfigMap    = "tke-ingress-controller-config"
	ControllerConfigMapVersionKey = "VERSION"
)

// Annotation and label prefixes only TKE uses.
var tkePrefixes = []string{
	"service.cloud.tencent.com/",
	"service.kubernetes.io/qcloud-",
	"service.kubernetes.io/tke-",
	"ingress.cloud.tencent.com/",
	"node.tke.cloud.tencent.com/",
}

// TKE's keys under the shared kubernetes.io/ingress. and service.kubernetes.io/ prefixes
// (457/56112, 457/45693, 457/51258).
var tkeSharedPrefixKeys = map[string]bool{
	AnnotationLoadBalancerID:                                  true,
	"service.kubernetes.io/local-svc-only-bind-node-with-pod": true,
	"service.kubernetes.io/service.extensiveParameters":       true,
	AnnotationIngressSubnet:                                   true,
	AnnotationIngressExistLB:                                  true,
	AnnotationIngressLoadBalancerID:                           true,
	AnnotationIngressRuleMix:                                  true,
	"kubernetes.io/ingress.http-rules":                        true,
	"kubernetes.io/ingress.https-rules":                       true,
	"kubernetes.io/ingress.extensiveParameters":               true,
	"kubernetes.io/ingress.internetChargeType":                true,
	"kubernetes.io/ingress.internetMaxBandwidthOut":           true,
}

// Recognizes reports whether an object carries TKE's marks: a TKE annotation or label, the
// qcloud ingress class, a super or native node label, a TKE controller ConfigMap, or a
// TkeServiceConfig. Hosts use it to pick the Tencent dialect when the profile names none.
func Recognizes(obj runtime.Object) bool {
	if obj == nil {
		return false
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		gvk := u.GroupVersionKind()
		if gvk.Group == ServiceConfigGroup && gvk.Kind == ServiceConfigKind {
			return true
		}
	}
	switch o := obj.(type) {
	case *networkingv1.Ingress:
		if o.Spec.IngressClassName != nil && *o.Spec.IngressClassName == IngressClassQCloud {
			return true
		}
	case *corev1.ConfigMap:
		if o.Namespace == ControllerNamespace && (o.Name == ServiceControllerConfigMap || o.Name == IngressControllerConfigMap) {
			return true
		}
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	if m.GetLabels()[LabelInstanceType] == InstanceTypeEklet {
		return true
	}
	for k := range m.GetLabels() {
		if hasTKEPrefix(k) {
			return true
		}
	}
	for k, v := range m.GetAnnotations() {
		if hasTKEPrefix(k) || tkeSharedPrefixKeys[k] || (k == AnnotationIngressClass && v == IngressClassQCloud) {
			return true
		}
	}
	return false
}

func hasTKEPrefix(k string) bool {
	for _, p := range tkePrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}
