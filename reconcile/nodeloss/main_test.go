package nodeloss

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile"
)

// env is the control plane the package's tests share: kube-apiserver, and
// kube-controller-manager's StatefulSet controller, garbage collector and
// PVC protection, with one manager running the operator's reconcilers and
// this package's controller as the operator's restricted identity.
var env *testenv.Env

// testHandoverTimeout is short so that the orphan test does not wait long.
const testHandoverTimeout = 3 * time.Second

func TestMain(m *testing.M) {
	testenv.MainWithManager(m, &env, testenv.Options{
		ControllerManager: []string{"garbagecollector", "pvc-protection", "statefulset"},
	}, testenv.ManagerOptions{
		LogVariable: "NODELOSS_TEST_LOG",
		Cache:       caches.Webhooks(),
		Setup:       setupControllers,
	})
}

// setupControllers runs the reconcilers and this package's controller as
// the controller runs them: on the reconcilers' own cache.
func setupControllers(mgr manager.Manager) (manager.Manager, error) {
	leader, err := caches.ReconcilerView(mgr)
	if err != nil {
		return nil, fmt.Errorf("reconcilers' cache: %w", err)
	}
	ro := reconcile.DefaultOptions()
	ro.Preset = reconcile.PresetNone
	// Pods here are created without the pod webhook: the relabel scan
	// labels them.
	ro.PodRelabelInterval = time.Second
	if err := reconcile.SetupWithManager(leader, ro); err != nil {
		return nil, fmt.Errorf("set up reconcilers: %w", err)
	}
	opts := DefaultOptions()
	opts.HandoverTimeout = testHandoverTimeout
	// The leader-change test runs its own leaders in its namespace.
	opts.Wrap = func(_ string, r crreconcile.Reconciler) crreconcile.Reconciler {
		return crreconcile.Func(func(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
			if strings.HasPrefix(req.Namespace, leaderTestPrefix) {
				return crreconcile.Result{}, nil
			}
			return r.Reconcile(ctx, req)
		})
	}
	if err := SetupWithManager(leader, opts); err != nil {
		return nil, fmt.Errorf("set up node-loss controller: %w", err)
	}
	return leader, nil
}
