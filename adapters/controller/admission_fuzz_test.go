package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
)

// twoNodes is a cache with two Nodes and nothing else: enough for a verdict.
type twoNodes struct{}

func (twoNodes) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return &notFound{}
}

func (twoNodes) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	if nl, ok := list.(*corev1.NodeList); ok {
		nl.Items = []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}}
	}
	return nil
}

type notFound struct{}

func (*notFound) Error() string { return "not found" }

// admissionReview wraps an object as the API server sends it.
func admissionReview(op admissionv1.Operation, kind string, obj any) []byte {
	raw, _ := json.Marshal(obj)
	b, _ := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "uid-1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: kind},
			Namespace: "shop", Name: "web", Operation: op, Object: k8sruntime.RawExtension{Raw: raw}},
	})
	return b
}

// FuzzAdmission posts arbitrary bodies to both webhooks, as the API server (or anyone who
// reaches the webhook port) could. Every answer must be an HTTP 200 AdmissionReview whose
// response carries the request's UID, or a clean error status: never a panic or a hang.
func FuzzAdmission(f *testing.F) {
	svc := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{tencent.AnnotationInternalSubnet: "subnet-1"}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
	f.Add(admissionReview(admissionv1.Create, "Service", svc))
	f.Add(admissionReview(admissionv1.Update, "Ingress", map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": map[string]any{"name": "web"}}))
	f.Add(admissionReview(admissionv1.Create, "Service", map[string]any{"spec": map[string]any{"type": 7}}))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"kind":"Service"},"operation":"CREATE","object":null}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`not json`))

	p, err := tencent.NewProvider(nil)
	if err != nil {
		f.Fatal(err)
	}
	c := &Controller{provider: p, dialect: p.Dialect(), enforce: true, cache: twoNodes{}, log: hclog.NewNullLogger(),
		profile: core.ClusterProfile{Provider: tencent.Name, KubernetesVersion: "v1.30.2", ProxyMode: core.ProxyModeIPVS, KubeProxyVersion: "v1.20.6-tke.12"}}
	handlers := map[string]http.Handler{
		"mutate": &webhook.Admission{Handler: admission.HandlerFunc(c.mutate)},
		"validate": &webhook.Admission{Handler: admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
			return c.validate(ctx, req, &WebhookOptions{DenyAtRisk: true})
		})},
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for name, h := range handlers {
			rr := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, "/"+name, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			done := make(chan struct{})
			go func() {
				defer close(done)
				h.ServeHTTP(rr, req)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				buf := make([]byte, 1<<20)
				t.Fatalf("%s: no answer after 5s\n%s", name, buf[:runtime.Stack(buf, true)])
			}
			if rr.Code != http.StatusOK {
				continue
			}
			var review admissionv1.AdmissionReview
			if err := json.Unmarshal(rr.Body.Bytes(), &review); err != nil || review.Response == nil {
				t.Fatalf("%s: answer is not an AdmissionReview: %v %q", name, err, rr.Body.String())
			}
		}
	})
}
