package kubernetes

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// FuzzValidateIngressStatus checks the validator's invariants on one entry. Seeds are in
// testdata/fuzz/FuzzValidateIngressStatus.
func FuzzValidateIngressStatus(f *testing.F) {
	f.Add("1.2.3.4", "", "VIP", true)
	f.Add("", "lb.example.com", "", false)
	f.Add("001.2.3.4", "1.2.3.4", "Proxy", true)
	f.Fuzz(func(t *testing.T, ip, hostname, ipMode string, hasMode bool) {
		in := []corev1.LoadBalancerIngress{{IP: ip, Hostname: hostname}}
		if hasMode {
			in[0].IPMode = mode(ipMode)
		}
		errs := ValidateIngressStatus(IngressStatusPath(), in)
		if obviouslyValid(in) && len(errs) > 0 {
			t.Errorf("the fast check passed a status the validator rejects: %v", errs)
		}
		for _, fe := range errs {
			switch fe.Field {
			case "status.loadBalancer.ingress[0].ip", "status.loadBalancer.ingress[0].hostname":
				if fe.Type != field.ErrorTypeInvalid {
					t.Errorf("%s: type %s", fe.Field, fe.Type)
				}
			case "status.loadBalancer.ingress[0].ipMode":
				if fe.Type != field.ErrorTypeForbidden && fe.Type != field.ErrorTypeNotSupported {
					t.Errorf("%s: type %s", fe.Field, fe.Type)
				}
			default:
				t.Errorf("error at unexpected field %s", fe.Field)
			}
		}
		// Defaulting never changes whether a status is valid (the server defaults first).
		if diff := cmp.Diff(simplify(errs), simplify(ValidateIngressStatus(IngressStatusPath(), DefaultIngressStatus(in)))); diff != "" {
			t.Errorf("defaulting changed the verdict:\n%s", diff)
		}
		if len(errs) > 0 {
			return
		}
		if ip != "" {
			if _, err := netip.ParseAddr(ip); err != nil {
				t.Errorf("accepted ip %q that netip rejects", ip)
			}
		}
		if hostname != "" {
			if _, err := netip.ParseAddr(hostname); err == nil {
				t.Errorf("accepted an IP %q as hostname", hostname)
			}
		}
		if hasMode && (ip == "" || ipMode != "VIP" && ipMode != "Proxy") {
			t.Errorf("accepted ipMode %q with ip %q", ipMode, ip)
		}
	})
}

// FuzzTranslate feeds arbitrary status entries, one arbitrary annotation and an arbitrary
// profile to Translate. Seeds are in testdata/fuzz/FuzzTranslate.
func FuzzTranslate(f *testing.F) {
	f.Add("10.0.0.1", "", "Proxy", true, "fd00::1", "networking.gke.io/load-balancer-type", "Internal", "iptables", "v1.30.0", "", "", "", false)
	f.Add("", "a.elb.amazonaws.com", "", false, "", "loopguard.io/lb-source-nat", "ture", "ipvs", "", "v1.31", "", "", true)
	f.Add("10.0.0.1", "", "VIP", true, "", "load-balancer.hetzner.cloud/uses-proxyprotocol", "true", "ebpf", "", "", "cilium", "1.18.0", false)
	known := map[core.Code]bool{}
	for _, r := range append(append(core.Rules(), dialect.Rules()...), append(rules(), cloudRules()...)...) {
		known[r.Code] = true
	}
	d := NewDialect(nil)
	f.Fuzz(func(t *testing.T, ip, hostname, ipMode string, hasMode bool, ip2, annKey, annVal,
		proxyMode, kubeProxyVersion, kubernetesVersion, cni, ciliumVersion string, local bool) {
		svc := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}
		svc.Name, svc.Namespace = "web", "shop"
		if annKey != "" {
			svc.Annotations = map[string]string{annKey: annVal}
		}
		if local {
			svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		}
		in := corev1.LoadBalancerIngress{IP: ip, Hostname: hostname}
		if hasMode {
			in.IPMode = mode(ipMode)
		}
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{in}
		if ip2 != "" {
			svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip2, IPMode: mode("Proxy")})
		}
		// The profile is not validated here on purpose: the dialect must cope with anything a
		// caller builds by hand.
		prof := core.ClusterProfile{ProxyMode: core.ProxyMode(proxyMode), KubeProxyVersion: kubeProxyVersion,
			KubernetesVersion: kubernetesVersion, Dataplane: core.DataplaneProfile{CNI: cni, CiliumVersion: ciliumVersion}}
		c, err := core.NewCluster(prof)
		if err != nil {
			t.Fatal(err)
		}
		before := svc.DeepCopy()
		tr, err := d.Translate(svc, c)
		if !cmp.Equal(before, svc) {
			t.Fatal("Translate modified its input")
		}
		if err != nil {
			if tr != nil {
				t.Error("a translation and an error")
			}
			var ie *core.InvalidError
			if !errors.As(err, &ie) || len(ie.Errs) == 0 {
				t.Fatalf("error %v is not an *InvalidError with fields", err)
			}
			for _, fe := range ie.Errs {
				if !strings.HasPrefix(fe.Field, "status.loadBalancer.ingress[") && !strings.HasPrefix(fe.Field, "metadata.annotations[") {
					t.Errorf("error at unexpected field %s", fe.Field)
				}
			}
			return
		}
		if errs := ValidateIngressStatus(IngressStatusPath(), svc.Status.LoadBalancer.Ingress); len(errs) > 0 {
			t.Fatalf("translated a status the server rejects: %v", errs)
		}
		e := &tr.Exposure
		if e.Intercept == core.Yes {
			for _, x := range svc.Status.LoadBalancer.Ingress {
				if x.IP == "" {
					t.Errorf("intercepted, but %q has no ip", x.Hostname)
				}
			}
		}
		a := core.Assess(e)
		want := 3
		if e.Intercept == core.Yes && a.NeedsLB == core.Yes {
			want = 4 // and the fourth is through-lb
		}
		// The cloud's own fixes (clouds.go) come before the generic through-lb.
		generic := tr.Offers[:0:0]
		for _, o := range tr.Offers {
			switch o.Reason.Code {
			case codeOfferAWSClientIP, codeOfferHostname, codeOfferOCIIPMode, codeOfferIPModeAnnotation, codeOfferCCMUpgrade, codeOfferAlibabaClientIP:
			default:
				generic = append(generic, o)
			}
		}
		if len(generic) != want || want == 4 && generic[3].Remedy != core.ThroughLB {
			t.Errorf("%d offers besides the cloud's fixes, want %d", len(generic), want)
		}
		dec := core.Decide(&a, tr.Offers, core.Policy{})
		if a.NeedsLB == core.Yes && dec.Remedy != core.RemedyNone && dec.Path != core.PathProxy {
			t.Errorf("backends need the LB, but the decision %s keeps traffic on path %q", dec.Remedy, dec.Path)
		}
		for _, list := range [][]core.Reason{e.Reasons, e.Notes, a.Reasons, {dec.Reason}} {
			for _, r := range list {
				if !known[r.Code] {
					t.Errorf("undocumented code %q", r.Code)
				}
			}
		}
	})
}
