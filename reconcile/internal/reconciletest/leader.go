package reconciletest

import (
	"context"
	"strings"
	"sync"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// ownLeaderPrefix starts the names of the namespaces the package's shared
// manager leaves alone (OwnLeaderNamespace): only the test's own leaders
// reconcile them, so that stopping a leader stops the operator there.
const ownLeaderPrefix = "own-leader-"

// OwnLeaderNamespace creates a namespace that the shared manager's
// controllers leave to the leaders the test starts (StartLeader).
func OwnLeaderNamespace(t *testing.T) string {
	t.Helper()
	e := testenv.Require(t, Env)
	return e.Namespace(t, t.Context(), ownLeaderPrefix)
}

// ownLeaders reports whether the namespace of a request belongs to a
// test's own leaders.
func ownLeaders(req crreconcile.Request) bool {
	return strings.HasPrefix(req.Namespace, ownLeaderPrefix)
}

// StartLeader runs the controllers Main set up, in a manager of its own
// as the operator's identity, for the objects of namespace ns only (the
// shared manager goes on reconciling cluster-scoped objects): as a
// restarted operator, with a cold cache and fresh memory. stop stops it
// (t's cleanup stops it too).
func StartLeader(t *testing.T, ns string) (stop func()) {
	t.Helper()
	e := testenv.Require(t, Env)
	stopManager, err := e.StartManager(OperatorConfig, testenv.ManagerOptions{
		Cache:      caches.Webhooks(),
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Setup: func(mgr manager.Manager) (manager.Manager, error) {
			view, err := caches.ReconcilerView(mgr)
			if err != nil {
				return nil, err
			}
			opts := Options()
			opts.Wrap = func(_ string, r crreconcile.Reconciler) crreconcile.Reconciler {
				return crreconcile.Func(func(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
					if req.Namespace != ns {
						return crreconcile.Result{}, nil
					}
					return r.Reconcile(ctx, req)
				})
			}
			return view, mainSetup(view, opts, view.GetEventRecorder(v1alpha1.FieldManager))
		},
	})
	if err != nil {
		t.Fatalf("start a leader: %v", err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			if err := stopManager(); err != nil {
				t.Errorf("leader: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
