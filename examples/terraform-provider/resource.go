package main

import (
	"context"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/loopguard/loopguard/adapters/terraform"
)

// protection is the loopguard_loopback_protection resource.
type protection struct {
	host *host
}

var (
	_ resource.Resource                = (*protection)(nil)
	_ resource.ResourceWithConfigure   = (*protection)(nil)
	_ resource.ResourceWithModifyPlan  = (*protection)(nil)
	_ resource.ResourceWithImportState = (*protection)(nil)
)

func newProtection() resource.Resource { return &protection{} }

// protectionModel mirrors the schema; the adapter's Spec and State are converted from and to it.
type protectionModel struct {
	ID              types.String `tfsdk:"id"`
	Kind            types.String `tfsdk:"kind"`
	Namespace       types.String `tfsdk:"namespace"`
	Name            types.String `tfsdk:"name"`
	Prefer          types.String `tfsdk:"prefer"`
	AllowTickets    types.Bool   `tfsdk:"allow_tickets"`
	AllowDisruptive types.Bool   `tfsdk:"allow_disruptive"`
	Allowlists      types.Set    `tfsdk:"allowlists"`
	Remedy          types.String `tfsdk:"remedy"`
	Path            types.String `tfsdk:"path"`
	Managed         types.Map    `tfsdk:"managed"`
	LoadBalancer    types.String `tfsdk:"load_balancer"`
	Listeners       types.List   `tfsdk:"listeners"`
}

func (r *protection) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_loopback_protection"
}

func (r *protection) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		Description: "Keeps in-cluster clients of one LoadBalancer Service, Ingress or Gateway from looping through the cloud load balancer: loopguard decides the remedy, sets what it needs, reads it back (drift shows in the plan) and takes back exactly what it set on destroy.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, Description: "namespace/name (a Service), Ingress/namespace/name or Gateway/namespace/name.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"kind": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("Service"),
				Description: "Service, Ingress or Gateway (Gateway API: judged through the Service its implementation generates, fixed on the Gateway's spec.infrastructure or the implementation's own resource).", PlanModifiers: replace},
			"namespace": schema.StringAttribute{Required: true, Description: "The object's namespace.", PlanModifiers: replace},
			"name":      schema.StringAttribute{Required: true, Description: "The object's name; it must exist.", PlanModifiers: replace},
			"prefer": schema.StringAttribute{Optional: true,
				Description: "Which cost to avoid first when choosing the remedy: unset (the clouds' documented order), source-ip, lb-features."},
			"allow_tickets":    schema.BoolAttribute{Optional: true, Description: "Choose a remedy whose only obstacle is an allowlist not yet granted (the plan then names the ticket)."},
			"allow_disruptive": schema.BoolAttribute{Optional: true, Description: "Choose a remedy that needs a new object (a Volcengine Service whose ip-mode must change gets a new Service and address)."},
			"allowlists": schema.SetAttribute{Optional: true, ElementType: types.StringType,
				Description: "Cloud capabilities the account has been granted (clb-l4-snat, clb-l7-snat, clb-keepalive), beyond the provider's profile."},
			"remedy": schema.StringAttribute{Computed: true, Description: "The remedy loopguard carried out: intercept-vip, lb-snat, node-separation, dns-steering, or none."},
			"path": schema.StringAttribute{Computed: true,
				Description: "The KEP-1860 path in-cluster traffic takes (VIP or Proxy). On Volcengine it is the Service's ip-mode, which only a new Service can change: a change forces replacement."},
			"managed": schema.MapAttribute{Computed: true, ElementType: types.StringType,
				Description: "Every field loopguard set and that still holds, keyed by where it lives, valued by what loopguard set. A field changed behind Terraform's back drops out on refresh and shows as a diff in the next plan; destroy takes back exactly these."},
			"load_balancer": schema.StringAttribute{Computed: true, Description: "The cloud load balancer loopguard changed directly, if any."},
			"listeners":     schema.ListAttribute{Computed: true, ElementType: types.StringType, Description: "The listeners loopguard changed directly, if any."},
		},
	}
}

func (r *protection) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if h, ok := req.ProviderData.(*host); ok {
		r.host = h
	}
}

func resourceAttribute(name string) path.Path { return path.Root(name) }

func addAll(ds *diag.Diagnostics, in terraform.Diagnostics) {
	for _, d := range in {
		addDiagnostic(ds, d, resourceAttribute)
	}
}

func (r *protection) backend(ctx context.Context, ds *diag.Diagnostics) *terraform.Backend {
	if r.host == nil {
		ds.AddError("the loopguard provider is not configured", "The provider block's values are not known yet; apply what they depend on first.")
		return nil
	}
	b, err := r.host.backend(ctx)
	if err != nil {
		ds.AddError("cannot connect to the cluster", err.Error())
		return nil
	}
	return b
}

// ModifyPlan is the plan step: loopguard plans against the live cluster and cloud, without
// writing, and the planned state shows what apply will set (the managed map's diff), which
// attribute forces a new object, and why a plan cannot be applied (error diagnostics).
func (r *protection) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || r.host == nil || !req.Config.Raw.IsFullyKnown() {
		return // destroy, an unconfigured provider, or values known only after apply
	}
	var planned protectionModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &planned)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var prior *terraform.State
	if !req.State.Raw.IsNull() {
		var m protectionModel
		resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
		if resp.Diagnostics.HasError() {
			return
		}
		st := m.state(ctx)
		ps := planned.spec(ctx)
		if st.Spec.Ref() == ps.Ref() {
			prior = &st
		}
	}
	b := r.backend(ctx, &resp.Diagnostics)
	if b == nil {
		return
	}
	pl, ds := b.Plan(ctx, planned.spec(ctx), prior)
	addAll(&resp.Diagnostics, ds)
	if pl == nil || ds.HasError() {
		return
	}
	for _, line := range pl.Diff {
		tflog.Info(ctx, "loopguard will change", map[string]any{"change": line})
	}
	resp.Diagnostics.Append(fromState(ctx, &planned, &pl.State)...)
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &planned)...)
	for _, a := range pl.RequiresReplace {
		resp.RequiresReplace = append(resp.RequiresReplace, path.Root(a))
	}
}

func (r *protection) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m protectionModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	b := r.backend(ctx, &resp.Diagnostics)
	if resp.Diagnostics.HasError() || b == nil {
		return
	}
	st, ds := b.Create(ctx, m.spec(ctx))
	addAll(&resp.Diagnostics, ds)
	if st != nil {
		// On an error after some writes the state says what was written; Terraform keeps it
		// tainted, so the next apply replaces it and converges.
		resp.Diagnostics.Append(fromState(ctx, &m, st)...)
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	}
}

func (r *protection) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m protectionModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	b := r.backend(ctx, &resp.Diagnostics)
	if resp.Diagnostics.HasError() || b == nil {
		return
	}
	st, ds := b.Read(ctx, m.state(ctx))
	addAll(&resp.Diagnostics, ds)
	if ds.HasError() {
		return
	}
	if st == nil {
		resp.State.RemoveResource(ctx) // the object is gone
		return
	}
	resp.Diagnostics.Append(fromState(ctx, &m, st)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *protection) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m, prior protectionModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	b := r.backend(ctx, &resp.Diagnostics)
	if resp.Diagnostics.HasError() || b == nil {
		return
	}
	st, ds := b.Update(ctx, m.spec(ctx), prior.state(ctx))
	addAll(&resp.Diagnostics, ds)
	if st != nil {
		resp.Diagnostics.Append(fromState(ctx, &m, st)...)
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	}
}

func (r *protection) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m protectionModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	b := r.backend(ctx, &resp.Diagnostics)
	if resp.Diagnostics.HasError() || b == nil {
		return
	}
	addAll(&resp.Diagnostics, b.Delete(ctx, m.state(ctx)))
}

// ImportState takes namespace/name (a Service), Ingress/namespace/name or
// Gateway/namespace/name.
func (r *protection) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	b := r.backend(ctx, &resp.Diagnostics)
	if b == nil {
		return
	}
	st, ds := b.Import(ctx, req.ID)
	addAll(&resp.Diagnostics, ds)
	if st == nil || ds.HasError() {
		return
	}
	var m protectionModel
	m.Prefer, m.AllowTickets, m.AllowDisruptive = types.StringNull(), types.BoolNull(), types.BoolNull()
	m.Allowlists = types.SetNull(types.StringType)
	resp.Diagnostics.Append(fromState(ctx, &m, st)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// spec reads the configuration part of the model.
func (m *protectionModel) spec(ctx context.Context) terraform.Spec {
	s := terraform.Spec{Kind: m.Kind.ValueString(), Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString(),
		Prefer: m.Prefer.ValueString(), AllowTickets: m.AllowTickets.ValueBool(), AllowDisruptive: m.AllowDisruptive.ValueBool()}
	if !m.Allowlists.IsNull() && !m.Allowlists.IsUnknown() {
		_ = m.Allowlists.ElementsAs(ctx, &s.Allowlists, false)
		sort.Strings(s.Allowlists)
	}
	return s
}

// state reads the whole model as the adapter's State.
func (m *protectionModel) state(ctx context.Context) terraform.State {
	st := terraform.State{Spec: m.spec(ctx), Remedy: m.Remedy.ValueString(), Path: m.Path.ValueString(),
		LoadBalancer: m.LoadBalancer.ValueString(), Managed: map[string]string{}}
	if !m.Managed.IsNull() && !m.Managed.IsUnknown() {
		_ = m.Managed.ElementsAs(ctx, &st.Managed, false)
	}
	if !m.Listeners.IsNull() && !m.Listeners.IsUnknown() {
		_ = m.Listeners.ElementsAs(ctx, &st.Listeners, false)
	}
	return st
}

// fromState writes the adapter's State into the model; configuration attributes keep what the
// configuration says (null stays null).
func fromState(ctx context.Context, m *protectionModel, st *terraform.State) diag.Diagnostics {
	var ds diag.Diagnostics
	m.ID = types.StringValue(st.Spec.ID())
	m.Kind = types.StringValue(st.Spec.Ref().Kind)
	m.Namespace = types.StringValue(st.Namespace)
	m.Name = types.StringValue(st.Name)
	m.Remedy = types.StringValue(st.Remedy)
	m.Path = types.StringValue(st.Path)
	m.LoadBalancer = types.StringValue(st.LoadBalancer)
	managed, d := types.MapValueFrom(ctx, types.StringType, st.Managed)
	ds.Append(d...)
	m.Managed = managed
	listeners := st.Listeners
	if listeners == nil {
		listeners = []string{}
	}
	l, d := types.ListValueFrom(ctx, types.StringType, listeners)
	ds.Append(d...)
	m.Listeners = l
	return ds
}
