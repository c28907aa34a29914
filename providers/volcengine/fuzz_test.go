package volcengine_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/volcengine"
)

// FuzzParseIPMode: exactly "VIP" and "Proxy" are accepted; everything else is an invalid-input
// error naming the annotation. Seed corpus: testdata/fuzz/FuzzParseIPMode.
func FuzzParseIPMode(f *testing.F) {
	for _, s := range []string{"VIP", "Proxy", "vip", "proxy", "PROXY", "", " VIP", "Proxy\n", "VIP,Proxy", "ＶＩＰ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := volcengine.ParseIPMode(s)
		switch s {
		case volcengine.IPModeVIP:
			if err != nil || p != core.PathVIP {
				t.Fatalf("ParseIPMode(%q) = %q, %v", s, p, err)
			}
		case volcengine.IPModeProxy:
			if err != nil || p != core.PathProxy {
				t.Fatalf("ParseIPMode(%q) = %q, %v", s, p, err)
			}
		default:
			if err == nil || p != core.PathUnknown || !errors.Is(err, core.ErrInvalid) {
				t.Fatalf("ParseIPMode(%q) = %q, %v; want an invalid-input error", s, p, err)
			}
		}
	})
}

// FuzzTranslateAnnotations puts arbitrary values in the four VKE annotations the dialect
// validates. Translate must never panic and must either refuse with a *core.InvalidError and no
// translation, or translate consistently with the values. Seed corpus:
// testdata/fuzz/FuzzTranslateAnnotations.
func FuzzTranslateAnnotations(f *testing.F) {
	f.Add("Proxy", "PRIVATE", "true", "standard", true)
	f.Add("VIP", "PUBLIC", "false", "off", false)
	f.Add("vip", "private", "True", "Standard", true)
	f.Add("", "", "", "", false)
	profile := core.ClusterProfile{KubernetesVersion: "v1.32.2", CCMVersion: "v1.43.0", ProxyMode: core.ProxyModeEBPF,
		Dataplane: core.DataplaneProfile{CNI: "vpc-cni", PodInterface: "ipvlan"}}
	c, err := core.NewCluster(profile)
	if err != nil {
		f.Fatal(err)
	}
	d := volcengine.NewDialect(nil)
	f.Fuzz(func(t *testing.T, ipMode, addressType, passThrough, proxyProtocol string, withID bool) {
		ann := map[string]string{
			volcengine.AnnotationIPMode:        ipMode,
			volcengine.AnnotationAddressType:   addressType,
			volcengine.AnnotationPassThrough:   passThrough,
			volcengine.AnnotationProxyProtocol: proxyProtocol,
		}
		if withID {
			ann[volcengine.AnnotationLoadBalancerID] = "clb-fuzz"
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "fuzz", Namespace: "default", Annotations: ann},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "x"},
				Ports: []corev1.ServicePort{{Port: 80}}},
		}
		valid := (ipMode == "VIP" || ipMode == "Proxy") &&
			(addressType == "PUBLIC" || addressType == "PRIVATE") &&
			(passThrough == "true" || passThrough == "false") &&
			(proxyProtocol == "standard" || proxyProtocol == "off")
		tr, err := d.Translate(svc, c)
		if !valid {
			var inv *core.InvalidError
			if tr != nil || !errors.As(err, &inv) || len(inv.Errs) == 0 {
				t.Fatalf("invalid annotations %q: got %v, %v", ann, tr, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("valid annotations %q: %v", ann, err)
		}
		e := &tr.Exposure
		wantIntercept := core.Yes
		if ipMode == "Proxy" {
			wantIntercept = core.No
		}
		if e.Intercept != wantIntercept || e.LBSourceNAT != core.No {
			t.Fatalf("%q: intercept %v, lbSourceNAT %v", ann, e.Intercept, e.LBSourceNAT)
		}
		if (passThrough == "true") != (e.Binding == core.DirectToPod) {
			t.Fatalf("%q: binding %q", ann, e.Binding)
		}
		if (proxyProtocol == "standard") != (e.ProxyProtocol == core.Yes) {
			t.Fatalf("%q: proxy protocol %v", ann, e.ProxyProtocol)
		}
		if len(tr.Offers) != 3 {
			t.Fatalf("%d offers", len(tr.Offers))
		}
		a := core.Assess(e)
		_ = core.Decide(&a, tr.Offers, core.Policy{})
	})
}
