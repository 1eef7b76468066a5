package reconcile

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// TestMain starts the control plane and a manager set up as cmd/ sets it
// up (SetupWithManager: every controller and the preset task), runs the
// tests and stops both.
func TestMain(m *testing.M) {
	reconciletest.Main(m, SetupWithManager)
}

// TestSharedMapsUnchanged: no reconciler wrote to a map that cached
// objects share. The package's only parallel test, it runs after all the
// others (while the manager still runs).
func TestSharedMapsUnchanged(t *testing.T) {
	t.Parallel()
	reconciletest.SharedMapsUnchanged(t)
}

// TestOperatorIdentityIsRestricted makes sure the RBAC check of the
// harness is not vacuous: the manager's identity may not do what its role
// does not grant.
func TestOperatorIdentityIsRestricted(t *testing.T) {
	e := testenv.Require(t, reconciletest.Env)
	c, err := client.New(reconciletest.OperatorConfig, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var secrets corev1.SecretList
	if err := c.List(t.Context(), &secrets); !apierrors.IsForbidden(err) {
		t.Errorf("listing secrets as the operator: err %v, want Forbidden", err)
	}
	if err := c.Delete(t.Context(), &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "cluster-internal"}}); !apierrors.IsForbidden(err) {
		t.Errorf("deleting a ListenerClass as the operator: err %v, want Forbidden", err)
	}
}
