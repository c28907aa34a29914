package sdk

// What a platform SDK or a Terraform provider adds to take loopguard: core, every provider,
// the cluster adapter and the Terraform backend.
import (
	"context"

	"k8s.io/client-go/rest"

	"github.com/loopguard/loopguard/adapters/kube"
	"github.com/loopguard/loopguard/adapters/terraform"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/gateway"
	lgkubernetes "github.com/loopguard/loopguard/providers/kubernetes"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/volcengine"
)

// Providers are the dialects the SDK offers, by cloud.
func Providers() (map[string]core.Provider, error) {
	tke, err := tencent.NewProvider(nil)
	if err != nil {
		return nil, err
	}
	vke, err := volcengine.NewProvider(nil)
	if err != nil {
		return nil, err
	}
	generic := lgkubernetes.NewProvider(nil)
	_ = gateway.NewDialect(generic.Dialect(), nil)
	return map[string]core.Provider{"tencent": tke, "volcengine": vke, "kubernetes": generic}, nil
}

// Writer is the cluster writer plans are applied through.
func Writer(cfg *rest.Config) (core.ClusterWriter, error) { return kube.NewWriter(cfg, nil) }

// Gather reads what loopguard judges; ParseID reads a Terraform resource ID.
var (
	_ = func(ctx context.Context, cfg *rest.Config) error { _, err := kube.Gather(ctx, cfg, nil); return err }
	_ = terraform.ParseID
)
