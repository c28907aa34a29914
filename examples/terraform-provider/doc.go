// Command terraform-provider-loopguard is the Terraform provider a user copies to get
// loopback protection as a resource: loopguard_loopback_protection, for a Service or an
// Ingress, planned, applied, read back with drift, imported by namespace/name and destroyed,
// on Tencent Cloud (TKE + CLB), Volcengine (VKE) or any cloud through KEP-1860's ipMode.
//
// It is the glue between terraform-plugin-framework (v1.19, plugin protocol 6) and
// adapters/terraform, which holds the lifecycle rules; this package only converts the
// framework's types, builds the cloud clients from the provider configuration, and turns the
// adapter's diagnostics into the framework's. docs/ is its documentation in the registry's
// layout (docs/index.md, docs/resources/loopback_protection.md); docs/terraform.md of the
// repository explains the design.
//
// Build and use it locally through a CLI configuration file with dev_overrides:
//
//	(cd examples/terraform-provider && go build -o ~/bin/terraform-provider-loopguard .)
//	cat > dev.tfrc <<EOF
//	provider_installation {
//	  dev_overrides { "loopguard/loopguard" = "$HOME/bin" }
//	  direct {}
//	}
//	EOF
//	TF_CLI_CONFIG_FILE=dev.tfrc tofu plan
//
// Its tests run the real OpenTofu CLI (TF_ACC_TERRAFORM_PATH, built by hack/opentofu.sh)
// against a real kube-apiserver (KUBEBUILDER_ASSETS) and the in-process Tencent and Volcengine
// CLB API servers, and skip saying why when either is missing.
package main
