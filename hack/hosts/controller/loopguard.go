package main

// What an operator adds to run loopguard's controller in its own manager.
import (
	"sigs.k8s.io/controller-runtime/pkg/manager"

	lgcontroller "github.com/loopguard/loopguard/adapters/controller"
	lgkubernetes "github.com/loopguard/loopguard/providers/kubernetes"
)

func init() {
	setups = append(setups, func(mgr manager.Manager) error {
		_, err := lgcontroller.Setup(mgr, lgkubernetes.NewProvider(nil), nil)
		return err
	})
}
