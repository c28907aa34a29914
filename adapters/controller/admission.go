package controller

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/loopguard/loopguard/core"
)

// Paths the webhooks are served on (deploy/ and docs/controller.md name them).
const (
	MutatePath   = "/loopguard/mutate"
	ValidatePath = "/loopguard/validate"
)

// WebhookOptions configure the admission webhooks. A nil *WebhookOptions means warn only.
type WebhookOptions struct {
	// DenyAtRisk refuses a Service or Ingress whose verdict is at-risk (after the mutating
	// webhook made its creation-time choice). Without it an at-risk object is admitted with a
	// warning, which kubectl prints.
	DenyAtRisk bool
}

// SetupWebhooks registers the admission webhooks on mgr's webhook server. The mutating one
// makes, on a Service's creation and only in enforcing mode, the changes of its plan that
// edit the Service itself (TKE's prevent-loopback where its preconditions hold, VKE's ip-mode,
// which can only be chosen then): a plan that is blocked, or needs other objects, is left to
// the controller. The validating one answers with admission warnings for an at-risk object
// and denies only what opts says to deny. Register them with failurePolicy Ignore and short
// timeouts (deploy/), so that loopguard being down never blocks a deploy.
func (c *Controller) SetupWebhooks(mgr manager.Manager, opts *WebhookOptions) {
	if opts == nil {
		opts = &WebhookOptions{}
	}
	srv := mgr.GetWebhookServer()
	srv.Register(MutatePath, &webhook.Admission{Handler: admission.HandlerFunc(c.mutate)})
	srv.Register(ValidatePath, &webhook.Admission{Handler: admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		return c.validate(ctx, req, opts)
	})})
}

func (c *Controller) mutate(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create || !c.enforce || req.Kind.Kind != "Service" {
		return admission.Allowed("")
	}
	svc := &corev1.Service{}
	if err := json.Unmarshal(req.Object.Raw, svc); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if svc.Namespace == "" {
		svc.Namespace = req.Namespace
	}
	if svc.Name == "" || svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return admission.Allowed("")
	}
	svc.APIVersion, svc.Kind = "v1", "Service"
	cl, err := c.facts(ctx, svc.Namespace, svc)
	if err != nil {
		return admission.Allowed("").WithWarnings("loopguard: cluster facts unavailable: " + err.Error())
	}
	cl.Add(svc)
	// No cluster writer: the driver takes the object being created as the observed state.
	offline := core.NewReconciler(c.provider, &core.ReconcilerOptions{Policy: c.profile.Policy, Logger: c.log})
	plan, err := offline.Plan(ctx, svc, cl)
	if err != nil || plan.Blocked != nil || plan.Empty() {
		return admission.Allowed("")
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(svc)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	var warnings []string
	for i := range plan.Changes {
		ch := &plan.Changes[i]
		if ch.By == core.WriterUser {
			continue
		}
		if ch.By != core.WriterCluster || ch.Object == nil || ch.Object.Kind != "Service" ||
			ch.Object.Namespace != svc.Namespace || ch.Object.Name != svc.Name || ch.Disruptive {
			// Another object, or the cloud: the controller carries the whole plan out later.
			return admission.Allowed("")
		}
	}
	for i := range plan.Changes {
		ch := &plan.Changes[i]
		if ch.By != core.WriterCluster {
			continue
		}
		for _, e := range ch.Edits {
			if _, err := e.ApplyTo(obj); err != nil {
				return admission.Allowed("")
			}
		}
		warnings = append(warnings, "loopguard set "+ch.Field+" to "+ch.To+" ("+string(plan.Decision.Remedy)+")")
	}
	mutated, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, mutated).WithWarnings(warnings...)
}

// exposure decodes a Service or an Ingress an AdmissionReview carries; nil for a Service that
// is not a LoadBalancer and for any other kind.
func exposure(kind, namespace string, raw []byte) (client.Object, error) {
	switch kind {
	case "Service":
		s := &corev1.Service{}
		if err := json.Unmarshal(raw, s); err != nil {
			return nil, err
		}
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
			return nil, nil
		}
		s.APIVersion, s.Kind = "v1", "Service"
		if s.Namespace == "" {
			s.Namespace = namespace
		}
		return s, nil
	case "Ingress":
		ing := &networkingv1.Ingress{}
		if err := json.Unmarshal(raw, ing); err != nil {
			return nil, err
		}
		ing.APIVersion, ing.Kind = "networking.k8s.io/v1", "Ingress"
		if ing.Namespace == "" {
			ing.Namespace = namespace
		}
		return ing, nil
	}
	return nil, nil
}

// validate warns when a create, or an update that changes the verdict, leaves the object
// not known to be loop-safe, and with DenyAtRisk refuses a create or an update that
// introduces a risk or worsens it (a higher worst case). An update that leaves the verdict as
// it was (a label, a replica count, loopguard's own verdict write) passes silently: the
// operator was told when the verdict was reached, and an Event carries it.
func (c *Controller) validate(ctx context.Context, req admission.Request, opts *WebhookOptions) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	obj, err := exposure(req.Kind.Kind, req.Namespace, req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if obj == nil {
		return admission.Allowed("")
	}
	ns := req.Namespace
	cl, err := c.facts(ctx, ns, obj)
	if err != nil {
		return admission.Allowed("").WithWarnings("loopguard: cluster facts unavailable: " + err.Error())
	}
	cl.Add(obj)
	res, err := core.Evaluate(c.dialect, obj, cl, c.profile.Policy)
	if errors.Is(err, core.ErrNotExposed) {
		return admission.Allowed("")
	}
	v := verdictOf(res, err)
	if v.reason == ReasonNoLoop {
		return admission.Allowed("")
	}
	worsens := true
	if req.Operation == admissionv1.Update {
		old, derr := exposure(req.Kind.Kind, ns, req.OldObject.Raw)
		if derr == nil && old != nil {
			oldRes, oerr := core.Evaluate(c.dialect, old, cl, c.profile.Policy)
			if !errors.Is(oerr, core.ErrNotExposed) {
				ov := verdictOf(oldRes, oerr)
				if ov.reason == v.reason && ov.message == v.message {
					return admission.Allowed("")
				}
				worsens = ov.reason != ReasonAtRisk || (err == nil && oerr == nil &&
					res.Assessment.WorstCase.Known() && oldRes.Assessment.WorstCase.Known() &&
					res.Assessment.WorstCase.Value() > oldRes.Assessment.WorstCase.Value())
			}
		}
	}
	msg := "loopguard: " + req.Kind.Kind + " " + ns + "/" + req.Name + ": " + v.message
	if opts.DenyAtRisk && v.reason == ReasonAtRisk && worsens {
		return admission.Denied(msg)
	}
	return admission.Allowed("").WithWarnings(msg)
}
