package reconcile

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/internal/agreement"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// agreementClient is a client over the shape's objects, with the indexes
// the reconcilers read through.
func agreementClient(s agreement.Shape) client.Client {
	return fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(s.Objects(true)...).
		WithIndex(&corev1.Pod{}, caches.IndexPodClaim, caches.PodNamedClaims).
		Build()
}

// TestAgreementClaimReconciler asks the claim reconciler (Reconcile) about
// every claim of the agreement table: the Listener it makes (the claim's
// own, its class and the pod it selects by name), the Listener its watches and index map the claim to,
// and that it records NoListener exactly for the listener claims that use
// none and ListenerBindingKept for the bound ones whose annotations changed.
func TestAgreementClaimReconciler(t *testing.T) {
	agreement.Check(t, "the claim reconciler", agreement.AskListener|agreement.AskOwn|agreement.AskClass|agreement.AskSelectsPod, func(t *testing.T, s agreement.Shape) (agreement.Answer, bool) {
		c := agreementClient(s)
		rec := events.NewFakeRecorder(10)
		r := &claimReconciler{client: c, live: c, recorder: rec}
		pvc := s.StoredClaim()
		if _, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pvc)}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		var got agreement.Answer
		got.Listener, _ = claimListener(pvc)
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

// TestAgreementPodReconciler asks the pod reconciler (Reconcile) and the
// relabel scan (labelsFor) which labels the pod of every shape lacks, and
// the pod reconciler which Listener its volume uses.
func TestAgreementPodReconciler(t *testing.T) {
	agreement.Check(t, "the pod reconciler", agreement.AskListener|agreement.AskLabels, func(t *testing.T, s agreement.Shape) (agreement.Answer, bool) {
		c := agreementClient(s)
		r := &podReconciler{client: c, recorder: events.NewFakeRecorder(10)}
		if _, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(s.Pod)}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		pod := &corev1.Pod{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(s.Pod), pod); err != nil {
			t.Fatal(err)
		}
		got := agreement.Answer{Labels: map[string]string{}}
		for k, v := range pod.Labels {
			if s.Pod.Labels[k] != v {
				got.Labels[k] = v
			}
		}
		vols, _, err := listenerVolumes(t.Context(), c, s.Pod)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vols {
			got.Listener = v.listener
		}
		relabel, err := labelsFor(t.Context(), agreementClient(s), s.Pod)
		if err != nil {
			t.Fatal(err)
		}
		if d := agreement.Diff(got, agreement.Answer{Labels: relabel}, agreement.AskLabels); d != nil {
			t.Errorf("the relabel scan and the pod reconciler differ: %v", d)
		}
		return got, true
	})
}
