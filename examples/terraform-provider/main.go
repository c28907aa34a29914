package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
)

// Address is the provider's source address. With OpenTofu it is registry.opentofu.org's;
// Terraform resolves loopguard/loopguard to registry.terraform.io instead, and a
// dev_overrides entry for "loopguard/loopguard" works with either.
const Address = "registry.opentofu.org/loopguard/loopguard"

// version is stamped at build time (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	debug := flag.Bool("debug", false, "run with support for debuggers such as delve (prints TF_REATTACH_PROVIDERS)")
	flag.Parse()
	if err := serve(context.Background(), *debug); err != nil {
		log.Fatal(err)
	}
}

func serve(ctx context.Context, debug bool) error {
	// Protocol 6: the framework's native protocol, which Terraform >= 1.0 and every OpenTofu
	// release speak.
	return providerserver.Serve(ctx, New(version), providerserver.ServeOpts{Address: Address, Debug: debug, ProtocolVersion: 6})
}
