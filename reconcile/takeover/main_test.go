package takeover

import (
	"testing"

	"github.com/listener-operator/listener-operator/reconcile/certificate"
	"github.com/listener-operator/listener-operator/reconcile/claim"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
	"github.com/listener-operator/listener-operator/reconcile/listener"
	"github.com/listener-operator/listener-operator/reconcile/pod"
)

// TestMain runs the package's tests against a control plane and a manager
// running every controller, registered as reconcile.SetupWithManager
// registers them (which this package cannot import: it imports this one).
func TestMain(m *testing.M) {
	reconciletest.Main(m, reconciletest.Controllers(listener.Setup, Setup, claim.Setup, pod.Setup, certificate.Setup))
}

// TestSharedMapsUnchanged: no reconciler wrote to a map that cached
// objects share. The package's only parallel test, it runs after all the
// others (while the manager still runs).
func TestSharedMapsUnchanged(t *testing.T) {
	t.Parallel()
	reconciletest.SharedMapsUnchanged(t)
}
