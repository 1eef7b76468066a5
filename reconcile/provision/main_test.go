package provision

import (
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// env is the control plane the package's tests share: kube-apiserver and
// kube-controller-manager's PV controller (which binds claims to volumes),
// with one manager running the provisioner as the operator's restricted
// identity, on the reconcilers' cache as the controller runs it.
var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.MainWithManager(m, &env, testenv.Options{
		ControllerManager: []string{"persistentvolume-binder"},
	}, testenv.ManagerOptions{
		LogVariable: "PROVISION_TEST_LOG",
		Cache:       caches.Webhooks(),
		Setup: func(mgr manager.Manager) (manager.Manager, error) {
			leader, err := caches.ReconcilerView(mgr)
			if err != nil {
				return nil, fmt.Errorf("reconcilers' cache: %w", err)
			}
			if err := SetupWithManager(leader, DefaultOptions()); err != nil {
				return nil, fmt.Errorf("set up the provisioner: %w", err)
			}
			return leader, nil
		},
	})
}
