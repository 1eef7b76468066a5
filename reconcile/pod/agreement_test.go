package pod

import (
	"testing"

	"github.com/listener-operator/listener-operator/internal/agreement"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestAgreementPodReconciler asks the pod reconciler (Reconcile) and the
// relabel scan (labelsFor) which labels the pod of every shape lacks, and
// the pod reconciler which Listener its volume uses.
func TestAgreementPodReconciler(t *testing.T) {
	agreement.Check(t, "the pod reconciler", agreement.AskListener|agreement.AskLabels, func(t *testing.T, s agreement.Shape) (agreement.Answer, bool) {
		c := reconciletest.AgreementClient(s)
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
		relabel, err := labelsFor(t.Context(), reconciletest.AgreementClient(s), s.Pod)
		if err != nil {
			t.Fatal(err)
		}
		if d := agreement.Diff(got, agreement.Answer{Labels: relabel}, agreement.AskLabels); d != nil {
			t.Errorf("the relabel scan and the pod reconciler differ: %v", d)
		}
		return got, true
	})
}
