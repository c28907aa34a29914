// Package terraform is for authors of Terraform providers who want loopback protection as a
// resource: it shapes loopguard's decision and its changes for a resource's lifecycle —
// planned, applied, read back with drift, destroyed — over a core.Reconciler, and says what
// goes wrong as diagnostics rather than bare errors.
//
// A Backend holds one cloud (a core.Provider, or a function that builds one per object), the
// live cluster (a core.ClusterWriter, such as adapters/kube's Writer) and the facts the objects
// do not show (a core.ClusterProfile). Its operations take a Spec, the resource's configuration,
// and a State, what the resource keeps in Terraform's state:
//
//   - Plan computes the plan without writing and returns the state apply will produce, the
//     human-readable diff (what changes, from which value to which), whether the change needs a
//     new object (RequiresReplace) and the diagnostics: a blocked plan is an error, its notes
//     are warnings, changes only a person can make are warnings too.
//   - Create and Update plan again against the live state and apply; Read re-observes what the
//     state says loopguard set, and drops what no longer holds, so a change behind Terraform's
//     back shows as a diff in the next plan instead of being fixed silently; Delete takes back
//     exactly what the state says loopguard set, nothing that was in place before.
//
// State.Managed is the heart of it: one entry per field loopguard set, keyed by where it lives
// ("Service default/web: metadata.annotations.service.cloud.tencent.com/prevent-loopback",
// "clb lb-1 listener lbl-1 (TCP:80): SnatEnable"), valued by what it set. Terraform's own plan
// output then shows the diff of that map, and destroy knows what is loopguard's.
//
// Why this package holds no terraform-plugin-framework type: the framework's types (schema,
// types.String, diag.Diagnostics, path.Path) are glue, and glue changes with the framework's
// versions; the lifecycle rules above do not. Keeping them in plain Go structs lets the rules
// be tested without a Terraform CLI, and leaves a provider author free to use the framework
// version (or the SDK) their provider already uses. The example provider,
// examples/terraform-provider, is that glue: about one screen per operation. The one
// Terraform package imported here is terraform-plugin-log, because a logger that writes
// through tflog with the request's context (Logger) is the part every provider would otherwise
// write again: there is no standard hclog-to-tflog bridge (hashicorp/terraform-plugin-log#46).
//
// Credentials never reach the state, the diff, the diagnostics or the logs: the state holds
// object names, remedy names and the values loopguard set; the drivers never log secrets, and
// the provider keeps them in its configuration only.
package terraform
