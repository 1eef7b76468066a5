package listener

import (
	"fmt"
	"testing"

	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// The reconcilers cache only Services with app.kubernetes.io/name=listener.
// A Service of the Listener whose label someone removed leaves the cache;
// the Listener gets it back (the Service is applied again), and never a
// second Service.
func TestServiceLabelRemovedComesBack(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "relabel", class.Name, reconciletest.Port("http", 80)))
	reconciletest.WaitReason(t, ctx, c, ns, "relabel", v1alpha1.ReasonReady)
	svc := reconciletest.GetService(t, ctx, c, ns, "relabel", nil)
	patch := []byte(`[{"op":"remove","path":"/metadata/labels/app.kubernetes.io~1name"}]`)
	if err := c.Patch(ctx, svc, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		t.Fatal(err)
	}
	reconciletest.GetService(t, ctx, c, ns, "relabel", func(s *corev1.Service) error {
		if s.Labels[LabelName] != LabelNameValue {
			return fmt.Errorf("labels %v, want %s=%s back", s.Labels, LabelName, LabelNameValue)
		}
		if s.UID != svc.UID {
			return fmt.Errorf("service replaced: uid %s, was %s", s.UID, svc.UID)
		}
		return nil
	})
}

// A foreign Service that carries the operator's label (so the cache holds
// it) stops the Listener the same way as one that does not
// (TestForeignServiceIsRefused).
func TestForeignServiceWithOurLabelIsRefused(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	foreign := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: ns, Labels: map[string]string{LabelName: LabelNameValue}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "x", Port: 1}}, Selector: map[string]string{"app": "theirs"}},
	}
	testenv.Create(t, ctx, c, foreign)
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "taken", class.Name, reconciletest.Port("http", 80)))
	reconciletest.WaitReason(t, ctx, c, ns, "taken", v1alpha1.ReasonForeignService)
	if err := c.Delete(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	reconciletest.WaitReason(t, ctx, c, ns, "taken", v1alpha1.ReasonReady)
}

// Only a foreign Service, which the cache may not show, is rechecked on a
// timer.
func TestBlockedOutsideCache(t *testing.T) {
	for _, tc := range []struct {
		v    verdict
		want bool
	}{
		{verdict{ready: true, reason: v1alpha1.ReasonReady}, false},
		{verdict{reason: v1alpha1.ReasonForeignService}, true},
		{verdict{reason: v1alpha1.ReasonInvalid}, false},
		{verdict{reason: v1alpha1.ReasonNoNodes}, false},
	} {
		if got := blockedOutsideCache(tc.v); got != tc.want {
			t.Errorf("blockedOutsideCache(%s) = %v, want %v", tc.v.reason, got, tc.want)
		}
	}
}
