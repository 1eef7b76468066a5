package listener

import (
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// TestGatewayRoutesLeaveWhenClassUnset: a Listener of a gateway class
// whose spec.className is then unset has no class, so no Service and no
// address (NoClass); the route the operator made for it goes too, or the
// Gateway goes on routing its name to a Listener that publishes none.
func TestGatewayRoutesLeaveWhenClassUnset(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class, _ := gatewayFixture(t, ctx, e, "tls")
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "unset", class.Name, reconciletest.Port("tls", 9093)))
	// The route made, waiting for the Gateway's controller (none runs).
	reconciletest.WaitReason(t, ctx, c, ns, "unset", v1alpha1.ReasonRouteNotAccepted)
	if routes, err := routesOf(ctx, c, ns, "unset"); err != nil || len(routes) != 1 {
		t.Fatalf("routes %v (%v), want one", routes, err)
	}
	testenv.Converges(t, "spec.className unset", func() error {
		l := &v1alpha1.Listener{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "unset"}, l); err != nil {
			return err
		}
		l.Spec.ClassName = nil
		return c.Update(ctx, l)
	})
	reconciletest.WaitReason(t, ctx, c, ns, "unset", v1alpha1.ReasonNoClass)
	testenv.Converges(t, "its route deleted", func() error {
		routes, err := routesOf(ctx, c, ns, "unset")
		if err == nil && len(routes) > 0 {
			err = fmt.Errorf("routes %v stay", routes)
		}
		return err
	})
}
