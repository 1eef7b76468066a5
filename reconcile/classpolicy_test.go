package reconcile

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestListenerOverridingItsClass: a Listener whose objectOverrides change
// what its ListenerClass decides (here the Service type), admitted while
// the webhooks were down, gets no Service, Ready=False with reason Invalid
// naming the field and the class, and a Warning event: the same rule as
// the webhook (validation.ListenerOverrides).
func TestListenerOverridingItsClass(t *testing.T) {
	e, ctx, ns := setup(t)
	c := e.Client
	class := newClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	l := listener(ns, "tenant", class.Name, port("http", 80))
	l.Spec.ObjectOverrides = []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"tenant"},"spec":{"type":"LoadBalancer"}}`)}}
	create(t, ctx, c, l)
	got := waitReason(t, ctx, c, ns, "tenant", v1alpha1.ReasonInvalid)
	msg := got.Status.Conditions[0].Message
	for _, want := range []string{"spec.objectOverrides[0].spec.type", `"LoadBalancer"`, `ListenerClass "` + class.Name + `"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("condition message %q does not contain %q", msg, want)
		}
	}
	waitEvent(t, ctx, c, ns, "tenant", v1alpha1.ReasonInvalid)
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.ServiceName("tenant")}, &corev1.Service{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("a Service was made from a Listener that overrides its class: %v", err)
	}
}
