package listener

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// TestPodServingChanged: of a pod's updates, those that can change the
// nodes a NodePort Listener publishes wake its Listeners; the rest of a
// pod's life (labels, IPs, other conditions) does not.
func TestPodServingChanged(t *testing.T) {
	running := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns", Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{NodeName: "n1"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}
	}
	for _, tc := range []struct {
		name string
		edit func(*corev1.Pod)
		want bool
	}{
		{"bound to another node", func(p *corev1.Pod) { p.Spec.NodeName = "n2" }, true},
		{"not bound any more (a new pod of the same name)", func(p *corev1.Pod) { p.Spec.NodeName = "" }, true},
		{"no longer ready", func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }, true},
		{"Ready condition gone", func(p *corev1.Pod) { p.Status.Conditions = nil }, true},
		{"succeeded", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, true},
		{"failed", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, true},
		{"being deleted", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }, true},
		{"a label", func(p *corev1.Pod) { p.Labels["tier"] = "front" }, false},
		{"another IP", func(p *corev1.Pod) { p.Status.PodIP = "10.0.0.2" }, false},
		{"pending to running (not finished either way)", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }, false},
		{"nothing", func(*corev1.Pod) {}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oldP, newP := running(), running()
			tc.edit(newP)
			if got := podServingChanged().Update(event.UpdateEvent{ObjectOld: oldP, ObjectNew: newP}); got != tc.want {
				t.Errorf("update passes = %v, want %v", got, tc.want)
			}
		})
	}
	p := running()
	if !podServingChanged().Create(event.CreateEvent{Object: p}) || !podServingChanged().Delete(event.DeleteEvent{Object: p}) {
		t.Error("a pod appearing or going must wake its Listeners")
	}
}
