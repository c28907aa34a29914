package tencent_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
)

// Bad input is a *core.InvalidError naming every field at fault; nothing partial is returned.
func TestInvalid(t *testing.T) {
	const (
		svcBad = "Service/default/bad"
		ingBad = "Ingress/default/bad"
		cfg    = "TkeServiceConfig default/bad-config"
	)
	ann := func(k string) string { return "metadata.annotations[" + k + "]" }
	l4 := "spec.loadBalancer.l4Listeners"
	l7 := "spec.loadBalancer.l7Listeners"
	for _, tc := range []struct {
		file   string
		object string
		// invalid is the object the InvalidError names ("" = the translated object).
		invalid string
		fields  []string
		detail  string
	}{
		{file: "prevent-loopback-typo.yaml", object: svcBad, fields: []string{ann(tencent.AnnotationPreventLoopback)}, detail: `"ture"`},
		{file: "prevent-loopback-case.yaml", object: svcBad, fields: []string{ann(tencent.AnnotationPreventLoopback)}, detail: "case-sensitive"},
		{file: "config-and-auto.yaml", object: svcBad, fields: []string{ann(tencent.AnnotationServiceConfigAuto)}, detail: "may not be combined"},
		{file: "config-auto-yes.yaml", object: svcBad, fields: []string{ann(tencent.AnnotationServiceConfigAuto)}},
		{file: "config-reserved-suffix.yaml", object: svcBad, fields: []string{ann(tencent.AnnotationServiceConfig)}, detail: "-auto-service-config"},
		{file: "config-empty.yaml", object: svcBad, fields: []string{ann(tencent.AnnotationServiceConfig)}},
		{file: "config-bad-name.yaml", object: svcBad, fields: []string{ann(tencent.AnnotationServiceConfig)}, detail: "RFC 1123"},
		{file: "direct-access-1.yaml", object: svcBad, fields: []string{ann(tencent.AnnotationDirectAccess)}},
		{file: "subnet-empty.yaml", object: svcBad, fields: []string{ann(tencent.AnnotationInternalSubnet)}},
		{file: "existed-lb-empty.yaml", object: svcBad, fields: []string{ann(tencent.AnnotationExistedLB)}},
		{file: "mode-sync.yaml", object: svcBad, fields: []string{ann(tencent.AnnotationMode)}, detail: `"skip"`},
		{file: "backends-label.yaml", object: svcBad, fields: []string{ann(tencent.AnnotationBackendsLabel)}},
		{file: "several.yaml", object: svcBad, fields: []string{ann(core.AnnotationLBScope), ann(tencent.AnnotationPreventLoopback), ann(tencent.AnnotationDirectAccess)}},
		{file: "snat-yes.yaml", object: svcBad, invalid: cfg, fields: []string{l4 + "[0].snatEnable"}, detail: "boolean"},
		{file: "snat-number.yaml", object: svcBad, invalid: cfg, fields: []string{l4 + "[0].snatEnable"}, detail: "not a number"},
		{file: "port-string.yaml", object: svcBad, invalid: cfg, fields: []string{l4 + "[0].port"}},
		{file: "port-range.yaml", object: svcBad, invalid: cfg, fields: []string{l4 + "[0].port"}},
		{file: "protocol-missing.yaml", object: svcBad, invalid: cfg, fields: []string{l4 + "[0].protocol"}},
		{file: "protocol-sctp.yaml", object: svcBad, invalid: cfg, fields: []string{l4 + "[0].protocol"}},
		{file: "listeners-not-list.yaml", object: svcBad, invalid: cfg, fields: []string{l4}},
		{file: "listener-duplicate.yaml", object: svcBad, invalid: cfg, fields: []string{l4 + "[1]"}, detail: "TCP:80"},
		{file: "load-balancer-string.yaml", object: svcBad, invalid: cfg, fields: []string{"spec.loadBalancer"}},
		{file: "keepalive-bool.yaml", object: ingBad, invalid: cfg, fields: []string{l7 + "[0].keepaliveEnable"}, detail: "not a boolean"},
		{file: "keepalive-two.yaml", object: ingBad, invalid: cfg, fields: []string{l7 + "[0].keepaliveEnable"}},
		{file: "keepalive-string.yaml", object: ingBad, invalid: cfg, fields: []string{l7 + "[0].keepaliveEnable"}, detail: "not a string"},
		{file: "l7-protocol-tcp.yaml", object: ingBad, invalid: cfg, fields: []string{l7 + "[0].protocol"}},
		{file: "l7-snat-string.yaml", object: ingBad, invalid: cfg, fields: []string{l7 + "[0].snatEnable"}},
		{file: "ingress-direct-access.yaml", object: ingBad, fields: []string{ann(tencent.AnnotationIngressDirectAccess)}},
		{file: "ingress-config-and-auto.yaml", object: ingBad, fields: []string{ann(tencent.AnnotationIngressServiceConfigAuto)}},
		{file: "ingress-config-reserved.yaml", object: ingBad, fields: []string{ann(tencent.AnnotationIngressServiceConfig)}},
		{file: "ingress-rule-mix.yaml", object: ingBad, fields: []string{ann(tencent.AnnotationIngressRuleMix)}},
		{file: "ingress-subnet-empty.yaml", object: ingBad, fields: []string{ann(tencent.AnnotationIngressSubnet)}},
		{file: "ingress-mode.yaml", object: ingBad, fields: []string{ann(tencent.AnnotationIngressMode)}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			w := load(t, "profiles/ipvs.yaml", "nodes/regular-3.yaml", "invalid/"+tc.file)
			tr, err := tencent.NewDialect(nil).Translate(w.object(t, tc.object), w.cluster)
			if tr != nil {
				t.Errorf("Translate returned a translation with the error: %+v", tr)
			}
			if !errors.Is(err, core.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if errors.Is(err, core.ErrNotExposed) {
				t.Errorf("%v also matches ErrNotExposed", err)
			}
			var ie *core.InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("err %T is not a *core.InvalidError", err)
			}
			want := tc.invalid
			if want == "" {
				parts := strings.Split(tc.object, "/")
				want = parts[0] + " " + parts[1] + "/" + parts[2]
			}
			if ie.Object.String() != want {
				t.Errorf("invalid object = %s, want %s", ie.Object, want)
			}
			var fields []string
			for _, fe := range ie.Errs {
				fields = append(fields, fe.Field)
			}
			slices.Sort(fields)
			wantFields := slices.Clone(tc.fields)
			slices.Sort(wantFields)
			if !slices.Equal(fields, wantFields) {
				t.Errorf("fields = %v, want %v (%v)", fields, wantFields, err)
			}
			if tc.detail != "" && !strings.Contains(err.Error(), tc.detail) {
				t.Errorf("error %q does not say %q", err, tc.detail)
			}
			if tc.invalid != "" && !strings.Contains(err.Error(), tc.object[strings.Index(tc.object, "/")+1:]) {
				t.Errorf("error %q does not name the object that references the config", err)
			}
		})
	}
}
