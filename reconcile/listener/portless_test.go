package listener

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// TestPortlessListenerHasNoService: a Listener moved to a ClusterIP class
// with its ports removed must not keep the LoadBalancer Service its old
// class made (exposure its class no longer gives): a Listener without
// ports has no Service and publishes no address, and says why (found by
// the robustness suite: ServicesFollowTheirClass skipped such Listeners).
func TestPortlessListenerHasNoService(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	lb := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer})
	internal := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "web", lb.Name, reconciletest.Port("http", 80)))
	reconciletest.GetService(t, ctx, c, ns, "web", nil)

	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l := &v1alpha1.Listener{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, l); err != nil {
			return err
		}
		l.Spec.ClassName, l.Spec.Ports = ptr.To(internal.Name), nil
		return c.Update(ctx, l)
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Converges(t, "the Service of the portless Listener deleted", func() error {
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, &corev1.Service{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			return errors.New("the Service stays")
		}
		return err
	})
	l := reconciletest.WaitReason(t, ctx, c, ns, "web", v1alpha1.ReasonInvalid)
	if len(l.Status.IngressAddresses) > 0 || l.Status.ServiceName != "" {
		t.Errorf("portless Listener publishes %+v (Service %q); want no address and no Service", l.Status.IngressAddresses, l.Status.ServiceName)
	}
}
