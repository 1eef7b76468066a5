package certificate_test

import (
	"testing"

	"github.com/listener-operator/listener-operator/reconcile"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// TestMain runs the package's tests against a control plane and a manager
// running the leader's controllers as cmd/ registers them
// (reconcile.SetupWithManager; this file is of package certificate_test so that
// it may import the registry, which imports certificate).
func TestMain(m *testing.M) {
	reconciletest.Main(m, reconcile.SetupWithManager)
}

// TestSharedMapsUnchanged: no reconciler wrote to a map that cached
// objects share. The package's only parallel test, it runs after all the
// others (while the manager still runs).
func TestSharedMapsUnchanged(t *testing.T) {
	t.Parallel()
	reconciletest.SharedMapsUnchanged(t)
}
