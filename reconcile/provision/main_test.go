package provision_test

import (
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile"
	"github.com/listener-operator/listener-operator/reconcile/provision"
)

// TestMain runs the package's tests with the provisioner alone, set up by
// the registry (reconcile.SetupOnly: the same indexes and options as cmd/).
func TestMain(m *testing.M) {
	testenv.MainWithManager(m, provision.Env, testenv.Options{
		ControllerManager: []string{"persistentvolume-binder"},
	}, testenv.ManagerOptions{
		LogVariable: "PROVISION_TEST_LOG",
		Cache:       caches.Webhooks(),
		Setup: func(mgr manager.Manager) (manager.Manager, error) {
			leader, err := caches.ReconcilerView(mgr)
			if err != nil {
				return nil, fmt.Errorf("reconcilers' cache: %w", err)
			}
			recorder := leader.GetEventRecorder(v1alpha1.FieldManager)
			if err := reconcile.SetupOnly(leader, reconcile.DefaultOptions(), recorder, provision.ControllerName); err != nil {
				return nil, fmt.Errorf("set up the provisioner: %w", err)
			}
			return leader, nil
		},
	})
}
