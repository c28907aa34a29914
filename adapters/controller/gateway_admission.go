package controller

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/gateway"
)

// GatewayValidatePath is where the Gateway validating webhook is served.
const GatewayValidatePath = "/loopguard/validate-gateway"

// SetupWebhook registers the Gateway validating webhook on mgr's webhook server: a Gateway
// created or changed at risk is admitted with a warning (kubectl prints it) that says the
// verdict and the fix, or denied when opts.DenyAtRisk. It never mutates: the fix is the
// reconciler's, on the Gateway's spec.infrastructure. Register it with failurePolicy Ignore
// and a short timeout, as the Service webhooks.
func (g *GatewayController) SetupWebhook(mgr manager.Manager, opts *WebhookOptions) {
	if opts == nil {
		opts = &WebhookOptions{}
	}
	mgr.GetWebhookServer().Register(GatewayValidatePath, &webhook.Admission{Handler: admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		return g.validate(ctx, req, opts)
	})})
}

func (g *GatewayController) validate(ctx context.Context, req admission.Request, opts *WebhookOptions) admission.Response {
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || req.Kind.Group != gateway.Group || req.Kind.Kind != "Gateway" {
		return admission.Allowed("")
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(req.Object.Raw, &u.Object); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if u.GetNamespace() == "" {
		u.SetNamespace(req.Namespace)
	}
	cl, err := g.facts(ctx, u)
	if err != nil {
		return admission.Allowed("").WithWarnings("loopguard: cluster facts unavailable: " + err.Error())
	}
	res, err := core.Evaluate(g.dialect, u, cl, g.profile.Policy)
	if errors.Is(err, core.ErrNotExposed) {
		return admission.Allowed("")
	}
	v := verdictOf(res, err)
	if v.reason == ReasonNoLoop {
		return admission.Allowed("")
	}
	msg := "loopguard: Gateway " + u.GetNamespace() + "/" + u.GetName() + ": " + v.message
	if opts.DenyAtRisk && v.reason == ReasonAtRisk {
		return admission.Denied(msg)
	}
	return admission.Allowed("").WithWarnings(msg)
}
