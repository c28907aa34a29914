package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/loopguard/loopguard/adapters/terraform"
	"github.com/loopguard/loopguard/core"
)

// Clouds the provider speaks for.
const (
	cloudTencent    = "tencent"
	cloudVolcengine = "volcengine"
	cloudKubernetes = "kubernetes"
)

var clouds = []string{cloudTencent, cloudVolcengine, cloudKubernetes}

// New returns the provider factory providerserver.Serve takes.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &loopguardProvider{version: version} }
}

type loopguardProvider struct {
	version string
}

var _ provider.Provider = (*loopguardProvider)(nil)

// providerModel is the provider block. Credentials are in the provider's configuration only:
// Terraform never writes a provider's configuration into the state, and the attribute is
// sensitive, so plan output shows it as (sensitive value).
type providerModel struct {
	Cloud       types.String `tfsdk:"cloud"`
	Region      types.String `tfsdk:"region"`
	Endpoint    types.String `tfsdk:"endpoint"`
	Credentials types.Object `tfsdk:"credentials"`
	Kubeconfig  types.String `tfsdk:"kubeconfig"`
	Context     types.String `tfsdk:"context"`
	Profile     types.String `tfsdk:"profile"`
}

type credentialsModel struct {
	ID     types.String `tfsdk:"id"`
	Secret types.String `tfsdk:"secret"`
}

func (p *loopguardProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "loopguard"
	resp.Version = p.version
}

func (p *loopguardProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "loopguard keeps in-cluster clients of a LoadBalancer Service or Ingress from looping through the cloud load balancer.",
		Attributes: map[string]schema.Attribute{
			"cloud": schema.StringAttribute{
				Required:    true,
				Description: "The cloud's dialect: tencent (TKE + CLB), volcengine (VKE) or kubernetes (KEP-1860 ipMode on any cloud).",
				Validators:  []validator.String{oneOf(clouds)},
			},
			"region": schema.StringAttribute{
				Optional:    true,
				Description: "The cloud region of the load balancers (ap-guangzhou, cn-beijing); required with credentials.",
			},
			"endpoint": schema.StringAttribute{
				Optional:    true,
				Description: "The cloud API endpoint, host[:port][/path], or http://host:port for a local test server; default: the cloud's public endpoint over HTTPS.",
			},
			"credentials": schema.SingleNestedAttribute{
				Optional:    true,
				Sensitive:   true,
				Description: "The cloud API key pair. Sensitive: never written to the state, plan output or logs. With Tencent it turns on direct mode (listener attributes through the CLB API); with Volcengine loopguard reads the CLBs' facts.",
				Attributes: map[string]schema.Attribute{
					"id":     schema.StringAttribute{Required: true, Sensitive: true, Description: "SecretId (Tencent) or AccessKeyId (Volcengine)."},
					"secret": schema.StringAttribute{Required: true, Sensitive: true, Description: "SecretKey (Tencent) or SecretAccessKey (Volcengine)."},
				},
			},
			"kubeconfig": schema.StringAttribute{
				Optional:    true,
				Description: "Path of the kubeconfig file; default: $KUBECONFIG, else ~/.kube/config, else the in-cluster service account.",
			},
			"context": schema.StringAttribute{
				Optional:    true,
				Description: "The kubeconfig context; default: its current context.",
			},
			"profile": schema.StringAttribute{
				Optional:    true,
				Description: "A loopguard ClusterProfile document (YAML), for what the cluster's objects do not show: proxy mode, versions, granted allowlists (https://github.com/loopguard/loopguard/blob/main/docs/annotations.md).",
			},
		},
	}
}

func (p *loopguardProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var m providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.Cloud.IsUnknown() || m.Credentials.IsUnknown() || m.Kubeconfig.IsUnknown() || m.Endpoint.IsUnknown() || m.Profile.IsUnknown() || m.Region.IsUnknown() {
		// Values known only after another resource is applied: resources plan as unknown.
		return
	}
	cfg := hostConfig{
		cloud: m.Cloud.ValueString(), region: m.Region.ValueString(), endpoint: m.Endpoint.ValueString(),
		kubeconfig: m.Kubeconfig.ValueString(), context: m.Context.ValueString(),
	}
	if !m.Credentials.IsNull() {
		var c credentialsModel
		resp.Diagnostics.Append(m.Credentials.As(ctx, &c, basetypes.ObjectAsOptions{})...)
		if resp.Diagnostics.HasError() {
			return
		}
		cfg.id, cfg.secret = c.ID.ValueString(), c.Secret.ValueString()
	}
	if s := m.Profile.ValueString(); strings.TrimSpace(s) != "" {
		prof, err := core.ParseProfile("profile", []byte(s))
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("profile"), "the profile is not a valid ClusterProfile", err.Error())
			return
		}
		cfg.profile = *prof
	}
	if cfg.profile.Provider != "" && cfg.profile.Provider != cfg.cloud {
		resp.Diagnostics.AddAttributeError(path.Root("profile"), "the profile is for another cloud",
			fmt.Sprintf("profile says provider %q, the provider block says cloud %q", cfg.profile.Provider, cfg.cloud))
		return
	}
	cfg.profile.Provider = cfg.cloud
	h, ds := newHost(ctx, cfg)
	for _, d := range ds {
		addDiagnostic(&resp.Diagnostics, d, providerAttribute)
	}
	if ds.HasError() {
		return
	}
	resp.ResourceData = h
}

func (p *loopguardProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{newProtection}
}

func (p *loopguardProvider) DataSources(context.Context) []func() datasource.DataSource { return nil }

// providerAttribute maps an adapter diagnostic's attribute to the provider block's.
func providerAttribute(name string) path.Path { return path.Root(name) }

// addDiagnostic converts an adapter diagnostic into the framework's, on its attribute.
func addDiagnostic(ds *diag.Diagnostics, d terraform.Diagnostic, at func(string) path.Path) {
	switch {
	case d.Attribute != "" && d.Severity == terraform.Warning:
		ds.AddAttributeWarning(at(d.Attribute), d.Summary, d.Detail)
	case d.Attribute != "":
		ds.AddAttributeError(at(d.Attribute), d.Summary, d.Detail)
	case d.Severity == terraform.Warning:
		ds.AddWarning(d.Summary, d.Detail)
	default:
		ds.AddError(d.Summary, d.Detail)
	}
}

// oneOf is the one validator the provider needs; terraform-plugin-framework-validators has
// the general one, not worth a dependency here.
type oneOfValidator []string

func oneOf(values []string) validator.String { return oneOfValidator(values) }

func (v oneOfValidator) Description(context.Context) string {
	return "one of " + strings.Join(v, ", ")
}

func (v oneOfValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v oneOfValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	got := req.ConfigValue.ValueString()
	for _, s := range v {
		if got == s {
			return
		}
	}
	resp.Diagnostics.AddAttributeError(req.Path, fmt.Sprintf("unknown cloud %q", got),
		fmt.Sprintf("%s must be %s.", req.Path, strings.Join(v, ", ")))
}
