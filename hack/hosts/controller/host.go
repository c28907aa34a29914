package main

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// setups are what the operator registers with its manager; loopguard.go adds one.
var setups []func(manager.Manager) error

func main() {
	log := ctrl.Log.WithName("operator")
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), manager.Options{})
	if err != nil {
		log.Error(err, "manager")
		os.Exit(1)
	}
	for _, setup := range setups {
		if err := setup(mgr); err != nil {
			log.Error(err, "setup")
			os.Exit(1)
		}
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}
