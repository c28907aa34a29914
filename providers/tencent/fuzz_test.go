package tencent_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
)

// FuzzTranslate feeds arbitrary annotation values and TkeServiceConfig field values (as YAML
// scalars, decoded the way the manifest reader decodes them) to Translate. It must never
// panic, and either fail with ErrNotExposed or an InvalidError whose every error names a field,
// or return a consistent exposure that Assess and Decide accept. The seed corpus is in
// testdata/fuzz/FuzzTranslate.
func FuzzTranslate(f *testing.F) {
	f.Add(uint8(0), "true", "", "", "", "subnet-1", "true", "", "", uint8(1))
	f.Add(uint8(0), "ture", "yes", "cfg", "true", "", "\"true\"", "", "sync", uint8(1))
	f.Add(uint8(1), "", "true", "", "true", "subnet-1", "true", "1", "", uint8(0))
	f.Add(uint8(1), "", "", "cfg-auto-ingress-config", "", "", "1", "true", "skip", uint8(4))
	f.Add(uint8(0), "false", "false", "cfg", "false", "", "[1, 2]", "{a: b}", "", uint8(2))
	f.Fuzz(func(t *testing.T, kind uint8, prevent, direct, cfgName, cfgAuto, subnet, snat, keepalive, mode string, proxy uint8) {
		modes := []core.ProxyMode{core.ProxyModeUnknown, core.ProxyModeIPVS, core.ProxyModeIPTables, core.ProxyModeNFTables, core.ProxyModeEBPF}
		profile := core.ClusterProfile{ProxyMode: modes[int(proxy)%len(modes)], KubeProxyVersion: "v1.20.6-tke.12", IngressControllerVersion: "v2.9.0"}
		ingress := kind%2 == 1
		ann := map[string]string{}
		set := func(k, v string) {
			if v != "" {
				ann[k] = v
			}
		}
		set(tencent.AnnotationPreventLoopback, prevent)
		if ingress {
			set(tencent.AnnotationIngressDirectAccess, direct)
			set(tencent.AnnotationIngressServiceConfig, cfgName)
			set(tencent.AnnotationIngressServiceConfigAuto, cfgAuto)
			set(tencent.AnnotationIngressSubnet, subnet)
			set(tencent.AnnotationIngressMode, mode)
		} else {
			set(tencent.AnnotationDirectAccess, direct)
			set(tencent.AnnotationServiceConfig, cfgName)
			set(tencent.AnnotationServiceConfigAuto, cfgAuto)
			set(tencent.AnnotationInternalSubnet, subnet)
			set(tencent.AnnotationMode, mode)
		}
		meta := metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: ann}
		var obj runtime.Object
		if ingress {
			obj = &networkingv1.Ingress{ObjectMeta: meta, Spec: networkingv1.IngressSpec{
				DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
		} else {
			obj = &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
				Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
		}
		objs := []runtime.Object{
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "web"}}},
		}
		if cfg := fuzzConfig(cfgName, cfgAuto, ingress, snat, keepalive); cfg != nil {
			objs = append(objs, cfg)
		}
		c, err := core.NewCluster(profile, objs...)
		if err != nil {
			t.Fatal(err)
		}
		d := tencent.NewDialect(nil)
		tr, err := d.Translate(obj, c)
		if err != nil {
			if tr != nil {
				t.Fatalf("a translation came back with the error %v", err)
			}
			if errors.Is(err, core.ErrNotExposed) {
				return
			}
			var ie *core.InvalidError
			if !errors.As(err, &ie) || !errors.Is(err, core.ErrInvalid) || len(ie.Errs) == 0 {
				t.Fatalf("error %v (%T) is neither ErrNotExposed nor an InvalidError", err, err)
			}
			for _, fe := range ie.Errs {
				if fe.Field == "" {
					t.Fatalf("field error without a path: %v", fe)
				}
			}
			return
		}
		checkConsistent(t, tr, ingress, ann)
		again, err := d.Translate(obj, c)
		if err != nil || !reflect.DeepEqual(tr, again) {
			t.Fatalf("Translate is not deterministic: %v", err)
		}
		a := core.Assess(&tr.Exposure)
		dec := core.Decide(&a, tr.Offers, profile.Policy)
		if dec.Remedy.Validate(nil) != nil {
			t.Fatalf("decision remedy %q", dec.Remedy)
		}
		doc := documented()
		for _, r := range append(append(tr.Exposure.Reasons, tr.Exposure.Notes...), a.Reasons...) {
			if !doc[r.Code] {
				t.Fatalf("undocumented reason code %q", r.Code)
			}
		}
	})
}

// fuzzConfig builds the referenced TkeServiceConfig with the fuzzed scalars, through YAML as
// the manifest reader does; nil when nothing is referenced or the scalars are not YAML.
func fuzzConfig(cfgName, cfgAuto string, ingress bool, snat, keepalive string) *unstructured.Unstructured {
	name := cfgName
	if cfgAuto == "true" && name == "" {
		name = "web-auto-service-config"
		if ingress {
			name = "web-auto-ingress-config"
		}
	}
	if name == "" || strings.ContainsAny(snat+keepalive, "\n\r#&*!|>%@`") {
		return nil
	}
	list, entry := "l4Listeners", "{protocol: TCP, port: 80"
	if ingress {
		list, entry = "l7Listeners", "{protocol: HTTP, port: 80"
	}
	if snat != "" {
		entry += ", snatEnable: " + snat
	}
	if keepalive != "" {
		entry += ", keepaliveEnable: " + keepalive
	}
	doc := fmt.Sprintf("apiVersion: cloud.tencent.com/v1alpha1\nkind: TkeServiceConfig\nmetadata: {name: %q, namespace: default}\nspec:\n  loadBalancer:\n    %s:\n    - %s}\n", name, list, entry)
	js, err := yaml.ToJSON([]byte(doc))
	if err != nil {
		return nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil || u.GetName() != name {
		return nil
	}
	return u
}

// checkConsistent checks the exposure against what the annotations say.
func checkConsistent(t *testing.T, tr *core.Result, ingress bool, ann map[string]string) {
	t.Helper()
	e := &tr.Exposure
	wantKind, wantLayer := "Service", core.Layer4
	if ingress {
		wantKind, wantLayer = "Ingress", core.Layer7
	}
	if e.Provider != tencent.Name || e.Object.Kind != wantKind || e.Object.Name != "web" || e.Layer != wantLayer {
		t.Fatalf("exposure identity = %+v", e.Object)
	}
	for _, f := range []core.Fact{e.Intercept, e.LBSourceNAT, e.InterceptMasquerades, e.ProxyProtocol} {
		if f > core.No {
			t.Fatalf("fact out of range: %d", f)
		}
	}
	subnetKey := tencent.AnnotationInternalSubnet
	if ingress {
		subnetKey = tencent.AnnotationIngressSubnet
	}
	if _, ok := ann[subnetKey]; ok && e.Scope != core.Private {
		t.Fatalf("scope = %q with %s set", e.Scope, subnetKey)
	}
	if _, ok := ann[subnetKey]; !ok && e.Scope != core.Public {
		t.Fatalf("scope = %q without %s", e.Scope, subnetKey)
	}
	if ingress && e.Intercept != core.No {
		t.Fatalf("a layer-7 Ingress on regular nodes is intercepted: %v", e.Intercept)
	}
	if len(tr.Offers) != 4 {
		t.Fatalf("%d offers, want 4", len(tr.Offers))
	}
	for _, o := range tr.Offers {
		if o.Action == "" || o.Reason.Code == "" {
			t.Fatalf("offer %s has no action or reason", o.Remedy)
		}
	}
}

// FuzzParseServiceConfig feeds whole TkeServiceConfig documents to ParseServiceConfig: it must
// never panic, and every error must name the field at fault.
func FuzzParseServiceConfig(f *testing.F) {
	f.Add([]byte(configYAML))
	f.Add([]byte("apiVersion: cloud.tencent.com/v1alpha1\nkind: TkeServiceConfig\nmetadata: {name: a}\nspec: {loadBalancer: {l4Listeners: [{protocol: TCP, port: 80, snatEnable: \"true\"}]}}\n"))
	f.Add([]byte("apiVersion: cloud.tencent.com/v1alpha1\nkind: TkeServiceConfig\nmetadata: {name: a}\nspec: {loadBalancer: {l7Listeners: [{protocol: HTTPS, port: 443, keepaliveEnable: 1.5}]}}\n"))
	f.Add([]byte("spec: {loadBalancer: {l4Listeners: {a: b}}}"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		js, err := yaml.ToJSON(doc)
		if err != nil {
			return
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return
		}
		cfg, errs := tencent.ParseServiceConfig(u)
		for _, e := range errs {
			if e.Field == "" {
				t.Errorf("error %q names no field", e.Error())
			}
		}
		if len(errs) == 0 && cfg == nil {
			t.Error("no errors and no config")
		}
	})
}
