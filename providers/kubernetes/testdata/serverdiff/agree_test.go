// Package serverdiff checks that providers/kubernetes.ValidateIngressStatus agrees with the
// real kube-apiserver v1.37.2 code: SetObjectDefaults_Service, conversion to the internal type,
// then pkg/apis/core/validation.ValidateLoadBalancerStatus, with the default feature gates
// (StrictIPCIDRValidation on). Errors are compared by type, field, full message and origin.
//
// It is a separate module (k8s.io/kubernetes is not a dependency of loopguard) under testdata,
// so `go test ./...` in the main module skips it. Run it with:
//
//	cd providers/kubernetes/testdata/serverdiff && go test .
package serverdiff

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/apis/core"
	corev1conv "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/pkg/apis/core/validation"
	_ "k8s.io/kubernetes/pkg/features"

	lg "github.com/loopguard/loopguard/providers/kubernetes"
)

func server(ing []v1.LoadBalancerIngress) field.ErrorList {
	svc := &v1.Service{Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer}}
	svc.Status.LoadBalancer.Ingress = append([]v1.LoadBalancerIngress(nil), ing...)
	for i := range svc.Status.LoadBalancer.Ingress {
		svc.Status.LoadBalancer.Ingress[i] = *ing[i].DeepCopy()
	}
	corev1conv.SetObjectDefaults_Service(svc)
	var in core.Service
	if err := corev1conv.Convert_v1_Service_To_core_Service(svc, &in, nil); err != nil {
		panic(err)
	}
	return validation.ValidateLoadBalancerStatus(&in.Status.LoadBalancer, nil, field.NewPath("status", "loadBalancer"), &in.Spec)
}

func key(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s|%s|%s|%s", e.Type, e.Field, e.Error(), e.Origin))
	}
	sort.Strings(out)
	return out
}

var ips = []string{"", "1.2.3.4", "001.2.3.4", "::ffff:1.2.3.4", "2001:db8::1", "2001:DB8::1", "x", "1.2.3", "256.1.1.1", " 1.2.3.4", "fe80::1%eth0", "0.0.0.0", "::", "1.2.3.4/32", "10.0.0.010"}
var hosts = []string{"", "lb.example.com", "LB.example.com", "1.2.3.4", "010.1.1.1", "a_b.com", "-a.com", "a.", "::1", "xn--d1acufc.xn--p1ai", "a..b", "1.2.3.4.nip.io", "2001:db8::1"}
var modes = []*v1.LoadBalancerIPMode{nil, p("VIP"), p("Proxy"), p("vip"), p(""), p("Direct")}

func p(s string) *v1.LoadBalancerIPMode { m := v1.LoadBalancerIPMode(s); return &m }

func TestAgree(t *testing.T) {
	n := 0
	check := func(ing []v1.LoadBalancerIngress) {
		n++
		want := key(server(ing))
		got := key(lg.ValidateIngressStatus(lg.IngressStatusPath(), ing))
		if fmt.Sprint(want) != fmt.Sprint(got) {
			t.Errorf("%+v\nserver: %q\nmine:   %q", ing, want, got)
		}
	}
	for _, ip := range ips {
		for _, h := range hosts {
			for _, m := range modes {
				check([]v1.LoadBalancerIngress{{IP: ip, Hostname: h, IPMode: m}})
			}
		}
	}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		k := 1 + r.Intn(3)
		ing := make([]v1.LoadBalancerIngress, k)
		for j := range ing {
			ing[j] = v1.LoadBalancerIngress{IP: ips[r.Intn(len(ips))], Hostname: hosts[r.Intn(len(hosts))], IPMode: modes[r.Intn(len(modes))]}
		}
		check(ing)
	}
	t.Logf("%d statuses compared", n)
}
