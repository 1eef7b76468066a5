package nodeloss_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile"
	"github.com/listener-operator/listener-operator/reconcile/nodeloss"
)

// TestMain runs the package's tests against a control plane and a manager
// running the leader's controllers as cmd/ registers them (the registry,
// reconcile.SetupWithManager), with node loss on and the provisioner off.
func TestMain(m *testing.M) {
	nodeloss.SetupAlone = func(mgr ctrl.Manager, opts reconcile.Options, recorder events.EventRecorder) error {
		return reconcile.SetupOnly(mgr, opts, recorder, nodeloss.ControllerName)
	}
	testenv.MainWithManager(m, nodeloss.Env, testenv.Options{
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
	opts := reconcile.DefaultOptions()
	opts.Preset = reconcile.PresetNone
	// Pods here are created without the pod webhook: the relabel scan
	// labels them.
	opts.PodRelabelInterval = time.Second
	opts.NodeLoss.HandoverTimeout = nodeloss.TestHandoverTimeout
	opts.Provision.Enabled = false
	// The leader-change test runs its own leaders of this controller in
	// its namespaces.
	opts.Wrap = func(name string, r crreconcile.Reconciler) crreconcile.Reconciler {
		if name != nodeloss.ControllerName {
			return r
		}
		return crreconcile.Func(func(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
			if strings.HasPrefix(req.Namespace, nodeloss.LeaderTestPrefix) {
				return crreconcile.Result{}, nil
			}
			return r.Reconcile(ctx, req)
		})
	}
	if err := reconcile.SetupWithManager(leader, opts, leader.GetEventRecorder(v1alpha1.FieldManager)); err != nil {
		return nil, fmt.Errorf("set up reconcilers: %w", err)
	}
	return leader, nil
}
