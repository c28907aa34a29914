package apiserver_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loopguard/loopguard/internal/apiserver"
)

// The table must be usable by a validator test without a server, so its shape is checked
// without one.
func TestIPModeCasesAreWellFormed(t *testing.T) {
	names := map[string]bool{}
	for _, c := range apiserver.IPModeCases {
		if c.Name == "" || c.Why == "" {
			t.Errorf("case %+v lacks a Name or a Why", c)
		}
		if names[c.Name] {
			t.Errorf("case name %q is used twice", c.Name)
		}
		names[c.Name] = true
		if c.Want.Accepted() == (c.Want.Stored == nil) {
			t.Errorf("%s: Stored must be set exactly when the write is accepted", c.Name)
		}
		sorted := append([]apiserver.Cause(nil), c.Want.Causes...)
		apiserver.SortCauses(sorted)
		if diff := cmp.Diff(sorted, c.Want.Causes); diff != "" {
			t.Errorf("%s: Causes are not sorted (-sorted +table):\n%s", c.Name, diff)
		}
	}
}

func TestCausesOfSortsAValidatorsErrors(t *testing.T) {
	ingress := field.NewPath("status", "loadBalancer", "ingress")
	errs := field.ErrorList{
		field.NotSupported(ingress.Index(1).Child("ipMode"), "x", []string{"Proxy", "VIP"}),
		field.Forbidden(ingress.Index(0).Child("ipMode"), "may not be specified when `ip` is not set"),
	}
	want := []apiserver.Cause{
		{Type: field.ErrorTypeForbidden, Field: "status.loadBalancer.ingress[0].ipMode"},
		{Type: field.ErrorTypeNotSupported, Field: "status.loadBalancer.ingress[1].ipMode"},
	}
	if diff := cmp.Diff(want, apiserver.CausesOf(errs)); diff != "" {
		t.Errorf("CausesOf (-want +got):\n%s", diff)
	}
}

// TestIPModeCasesAgainstServer is what makes IPModeCases evidence: every case is written
// through the status subresource of a fresh Service, and the server's answer must be exactly
// the recorded verdict.
func TestIPModeCasesAgainstServer(t *testing.T) {
	s := server.Get(t)
	v, err := s.Client().Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != apiserver.IPModeServerVersion {
		t.Fatalf("server is %s but IPModeCases were recorded against %s: re-measure the cases, then update IPModeServerVersion",
			v.GitVersion, apiserver.IPModeServerVersion)
	}
	ns := s.Namespace(t)
	services := s.Client().CoreV1().Services(ns)

	for i, c := range apiserver.IPModeCases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			typ := c.ServiceType
			if typ == "" {
				typ = corev1.ServiceTypeLoadBalancer
			}
			svc, err := services.Create(ctx, &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("case-%d", i)},
				Spec: corev1.ServiceSpec{
					Type:  typ,
					Ports: []corev1.ServicePort{{Name: "http", Port: 80}},
				},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}

			// Deep copies: the table is shared and must stay as recorded.
			for _, in := range c.Ingress {
				svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, *in.DeepCopy())
			}
			updated, err := services.UpdateStatus(ctx, svc, metav1.UpdateOptions{})

			got := apiserver.IPModeVerdict{Causes: causesOf(t, err)}
			if err == nil {
				got.Stored = updated.Status.LoadBalancer.Ingress
			}
			if diff := cmp.Diff(c.Want, got); diff != "" {
				t.Errorf("%s\nserver verdict differs from the table (-table +server):\n%s", c.Why, diff)
			}

			// What a later reader sees, not only the write's response.
			reread, err := services.Get(ctx, svc.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.Want.Stored, reread.Status.LoadBalancer.Ingress); diff != "" {
				t.Errorf("stored status after the write (-table +server):\n%s", diff)
			}
		})
	}
}

// causesOf returns the field causes of a 422 Invalid answer, sorted like the table; any other
// error fails the test, since the table only speaks of validation.
func causesOf(t *testing.T, err error) []apiserver.Cause {
	t.Helper()
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("write failed with %v, want a 422 Invalid with field causes", err)
	}
	var cs []apiserver.Cause
	for _, sc := range status.Status().Details.Causes {
		cs = append(cs, apiserver.Cause{Type: field.ErrorType(sc.Type), Field: sc.Field})
	}
	apiserver.SortCauses(cs)
	if len(cs) == 0 {
		t.Fatalf("422 Invalid without field causes: %v", err)
	}
	return cs
}
