package claim

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/claimlistener"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestClaimListenerWithoutPorts: a pod whose own listener claim gets a
// Listener without ports (admitted while the pod webhook was down, which
// refuses it) does not wait silently (issue 20, case 5): the Listener says
// why and what to do, and so does an event on the pod.
func TestClaimListenerWithoutPorts(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	testenv.Create(t, ctx, c, reconciletest.ListenerClaim(ns, "portless", map[string]string{v1alpha1.AnnotationListenerClass: class.Name}))
	testenv.Create(t, ctx, c, reconciletest.PodWithPorts(ns, "app", "portless"))
	l := reconciletest.WaitReason(t, ctx, c, ns, "portless", v1alpha1.ReasonInvalid)
	msg := l.Status.Conditions[0].Message
	for _, want := range []string{"has no ports", "containerPort", v1alpha1.AnnotationListenerName} {
		if !strings.Contains(msg, want) {
			t.Errorf("condition %q does not contain %q", msg, want)
		}
	}
	ev := reconciletest.WaitEvent(t, ctx, c, ns, "app", claimlistener.EventNoPorts)
	if !strings.Contains(ev.Note, "declare the served ports") {
		t.Errorf("pod event %q does not say what to fix", ev.Note)
	}
}

// TestBoundClaimKeepsItsListener: a bound claim re-pointed to another
// Listener while the webhooks were down (they refuse it; issue 20, case 4)
// keeps the Listener its volume was provisioned for: the volume records it
// in a label, and the claim gets an event saying what to do.
func TestBoundClaimKeepsItsListener(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	claim := reconciletest.ListenerClaim(ns, "data", map[string]string{v1alpha1.AnnotationListenerName: "a"})
	testenv.Create(t, ctx, c, claim)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-data"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: *reconciletest.ResourceOne()},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName:       v1alpha1.StorageClassName,
			ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: "data", UID: claim.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: v1alpha1.DriverName, VolumeHandle: ns + "-data"}},
		},
	}
	testenv.Create(t, ctx, c, pv)
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(ctx), pv) })
	reconciletest.BindClaim(t, ctx, c, claim, pv.Name)
	testenv.Converges(t, "the volume records its Listener", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pv), pv); err != nil {
			return err
		}
		if got := pv.Labels[v1alpha1.LabelVolumeListener]; got != "a" {
			return fmt.Errorf("label %q, want a", got)
		}
		return nil
	})
	claim.Annotations[v1alpha1.AnnotationListenerName] = "b"
	if err := c.Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	ev := reconciletest.WaitEvent(t, ctx, c, ns, "data", EventBindingKept)
	if !strings.Contains(ev.Note, "provisioned for Listener a") || !strings.Contains(ev.Note, "delete the claim and create it again") {
		t.Errorf("event %q does not say what was kept and what to do", ev.Note)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pv), pv); err != nil || pv.Labels[v1alpha1.LabelVolumeListener] != "a" {
		t.Errorf("volume label %v (%v), want a kept", pv.Labels, err)
	}
}
