package kubernetes_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// TestValidatorAgreesWithServer holds ValidateServiceStatus and DefaultIngressStatus to what a
// real kube-apiserver v1.37.2 answered for every case of internal/apiserver.IPModeCases (that
// package's tests re-check the table against a live server): the same fields rejected with the
// same error types, and the same stored status when accepted.
func TestValidatorAgreesWithServer(t *testing.T) {
	for _, tc := range apiserver.IPModeCases {
		t.Run(tc.Name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
			svc.Spec.Type = tc.ServiceType
			if svc.Spec.Type == "" {
				svc.Spec.Type = corev1.ServiceTypeLoadBalancer
			}
			svc.Status.LoadBalancer.Ingress = tc.Ingress
			got := apiserver.CausesOf(kubernetes.ValidateServiceStatus(svc, nil))
			if diff := cmp.Diff(tc.Want.Causes, got); diff != "" {
				t.Fatalf("%s\ncauses (-server +loopguard):\n%s", tc.Why, diff)
			}
			if !tc.Want.Accepted() {
				return
			}
			if diff := cmp.Diff(tc.Want.Stored, kubernetes.DefaultIngressStatus(tc.Ingress)); diff != "" {
				t.Errorf("%s\nstored (-server +loopguard):\n%s", tc.Why, diff)
			}
		})
	}
}
