package claim

import (
	"strings"
	"testing"

	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/agreement"
)

// TestAgreementClaimReconciler asks the claim reconciler (Reconcile) about
// every claim of the agreement table: the Listener it makes (the claim's
// own, its class and the pod it selects by name), the Listener its watches and index map the claim to,
// and that it records NoListener exactly for the listener claims that use
// none and ListenerBindingKept for the bound ones whose annotations changed.
func TestAgreementClaimReconciler(t *testing.T) {
	agreement.Check(t, "the claim reconciler", agreement.AskListener|agreement.AskOwn|agreement.AskClass|agreement.AskSelectsPod, func(t *testing.T, s agreement.Shape) (agreement.Answer, bool) {
		c := reconciletest.AgreementClient(s)
		rec := events.NewFakeRecorder(10)
		r := &claimReconciler{client: c, live: c, recorder: rec}
		pvc := s.StoredClaim()
		if _, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pvc)}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		var got agreement.Answer
		got.Listener, _ = lookup.ClaimListener(pvc)
		var ls v1alpha1.ListenerList
		if err := c.List(t.Context(), &ls, client.InNamespace(pvc.Namespace)); err != nil {
			t.Fatal(err)
		}
		for _, l := range ls.Items {
			if metav1.IsControlledBy(&l, pvc) {
				got.Own = l.Name == got.Listener
				got.Class = *l.Spec.ClassName
				got.SelectsPod = l.Annotations[v1alpha1.AnnotationStatefulSetPod]
			}
		}
		noListener, kept := false, false
		for len(rec.Events) > 0 {
			e := <-rec.Events
			noListener = noListener || strings.Contains(e, EventNoListener)
			kept = kept || strings.Contains(e, EventBindingKept)
		}
		if want := s.Want.IsListener && s.Want.Listener == ""; noListener != want {
			t.Errorf("recorded %s: %v, want %v", EventNoListener, noListener, want)
		}
		if kept != s.Rebound {
			t.Errorf("recorded %s: %v, want %v", EventBindingKept, kept, s.Rebound)
		}
		// Its index and watches go by the annotations (agreement.Shape.Rebound).
		return got, !s.Rebound
	})
}
