package listener

import (
	"fmt"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// TestGatewayRoutesLeaveWithTheClass (found by make robustness,
// RoutesFollowTheirClass): a Listener that leaves its gateway class loses
// the route the operator made for it, or the Gateway goes on routing its
// name: its class stops routing, it names a class that does not route, or
// it drops its ports.
func TestGatewayRoutesLeaveWithTheClass(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	plain := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	for _, tc := range []struct {
		name  string
		leave func(l *v1alpha1.Listener, class *v1alpha1.ListenerClass) client.Object
	}{
		{"class-stops-routing", func(_ *v1alpha1.Listener, class *v1alpha1.ListenerClass) client.Object {
			class.Spec.Gateway = nil
			return class
		}},
		{"another-class", func(l *v1alpha1.Listener, _ *v1alpha1.ListenerClass) client.Object {
			l.Spec.ClassName = ptr.To(plain.Name)
			return l
		}},
		{"ports-dropped", func(l *v1alpha1.Listener, _ *v1alpha1.ListenerClass) client.Object {
			l.Spec.Ports = nil
			return l
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			class, _ := gatewayFixture(t, ctx, e, "tls")
			testenv.Create(t, ctx, c, reconciletest.Listener(ns, tc.name, class.Name, reconciletest.Port("tls", 9093)))
			// The route made, waiting for the Gateway's controller (none runs).
			reconciletest.WaitReason(t, ctx, c, ns, tc.name, v1alpha1.ReasonRouteNotAccepted)
			if routes, err := routesOf(ctx, c, ns, tc.name); err != nil || len(routes) != 1 {
				t.Fatalf("routes %v (%v), want one", routes, err)
			}
			testenv.Converges(t, "the Listener leaves its gateway class", func() error {
				l := &v1alpha1.Listener{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: tc.name}, l); err != nil {
					return err
				}
				if err := c.Get(ctx, client.ObjectKeyFromObject(class), class); err != nil {
					return err
				}
				return c.Update(ctx, tc.leave(l, class))
			})
			testenv.Converges(t, "its route deleted", func() error {
				routes, err := routesOf(ctx, c, ns, tc.name)
				if err == nil && len(routes) > 0 {
					err = fmt.Errorf("routes %v stay", routes)
				}
				return err
			})
		})
	}
}
