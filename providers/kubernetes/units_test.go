package kubernetes

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// absent stands for "the key is not set" in a spelling table.
const absent = "<absent>"

// spellings are the values every parser's table must cover (issue 34), with the controller's
// outcome for each beside it; a table adds the values its controller treats specially.
var spellings = []string{absent, "true", "True", "TRUE", "1", "t", "yes", "", "garbage"}

// outcome renders what a parser returned: the value taken, "default" (absent), "ignored"
// (the controller applies its default) or "rejected" (it applies nothing).
func outcome(val any, st taken) string {
	switch st {
	case valueAbsent:
		return "default"
	case valueIgnored:
		return "ignored"
	case valueRejected:
		return "rejected"
	}
	return fmt.Sprint(val)
}

// annotated is a LoadBalancer Service with one annotation, or none for the value absent.
func annotated(key, value string) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
	if value != absent {
		svc.Annotations = map[string]string{key: value}
	}
	return svc
}

// checkSpellings runs parse over want, which must cover every standard spelling; src cites
// the upstream file and tag whose parser the table restates.
func checkSpellings(t *testing.T, src string, want map[string]string, parse func(value string) string) {
	t.Helper()
	for _, s := range spellings {
		if _, ok := want[s]; !ok {
			t.Errorf("%s: the table has no outcome for %q", src, s)
		}
	}
	for value, w := range want {
		if got := parse(value); got != w {
			t.Errorf("%q: %s, want %s (as %s)", value, got, w, src)
		}
	}
}

func TestImageTag(t *testing.T) {
	for image, want := range map[string]string{
		"docker.io/hetznercloud/hcloud-cloud-controller-manager:v1.35.0":         "v1.35.0",
		"hetznercloud/hcloud-cloud-controller-manager:v1.29.1":                   "v1.29.1",
		"hetznercloud/hcloud-cloud-controller-manager:v1.29.1@sha256:abc":        "v1.29.1",
		"localhost:5000/hetznercloud/hcloud-cloud-controller-manager":            "",
		"registry.example/other/hcloud-cloud-controller-manager:v1.0.0":          "",
		"registry.example/xhetznercloud/hcloud-cloud-controller-manager:v1.35.0": "",
	} {
		got, _ := imageTag(image, "hetznercloud/hcloud-cloud-controller-manager")
		if got != want {
			t.Errorf("%s: tag %q, want %q", image, got, want)
		}
	}
}
