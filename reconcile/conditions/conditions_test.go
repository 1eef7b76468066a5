package conditions

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNext: the metav1 rule. lastTransitionTime is now for a new condition
// and when the status changes, and is kept when only the reason, the
// message or the generation change; the other conditions are not touched.
func TestNext(t *testing.T) {
	then := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	now := then.Add(time.Hour)
	other := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.NewTime(then)}
	lost := metav1.Condition{Type: "PinnedNodesAvailable", Status: metav1.ConditionFalse, Reason: "NodeLost", Message: "gone", ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(then)}
	for _, tc := range []struct {
		name     string
		current  []metav1.Condition
		cond     metav1.Condition
		wantTime time.Time
	}{
		{"new", []metav1.Condition{other}, metav1.Condition{Type: "PinnedNodesAvailable", Status: metav1.ConditionFalse, Reason: "NodeLost"}, now},
		{"reason and message change, status does not", []metav1.Condition{other, lost}, metav1.Condition{Type: "PinnedNodesAvailable", Status: metav1.ConditionFalse, Reason: "Released", Message: "handed over"}, then},
		{"status changes", []metav1.Condition{other, lost}, metav1.Condition{Type: "PinnedNodesAvailable", Status: metav1.ConditionTrue, Reason: "Available"}, now},
		{"same", []metav1.Condition{lost}, metav1.Condition{Type: "PinnedNodesAvailable", Status: metav1.ConditionFalse, Reason: "NodeLost", Message: "gone"}, then},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := append([]metav1.Condition(nil), tc.current...)
			got := Next(tc.current, tc.cond, 2, now)
			want := tc.cond
			want.ObservedGeneration, want.LastTransitionTime = 2, metav1.NewTime(tc.wantTime)
			if got != want {
				t.Errorf("Next = %+v\nwant %+v", got, want)
			}
			for i := range before {
				if tc.current[i] != before[i] {
					t.Errorf("Next changed the current condition %d: %+v, was %+v", i, tc.current[i], before[i])
				}
			}
		})
	}
}
