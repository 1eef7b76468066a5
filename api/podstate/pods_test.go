package podstate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLifecycle(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name                     string
		pod                      corev1.Pod
		finished, running, ready bool
	}{
		{"pending", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, false, true, false},
		{"running and ready", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}, false, true, true},
		{"terminating", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}, false, false, false},
		{"succeeded", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, true, false, false},
		{"evicted", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}}, true, false, false},
	} {
		if got := Finished(&tc.pod); got != tc.finished {
			t.Errorf("%s: Finished = %v", tc.name, got)
		}
		if got := Running(&tc.pod); got != tc.running {
			t.Errorf("%s: Running = %v", tc.name, got)
		}
		if got := Ready(&tc.pod); got != tc.ready {
			t.Errorf("%s: Ready = %v", tc.name, got)
		}
	}
}
