package conditions

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
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

// TestWriterTakesItsPartOfTheTable: each writer owns, may write, and keeps
// on a rewrite exactly the conditions and fields the status ownership table
// gives it; a condition the table gives another writer, or no writer, is
// refused (Foreign names it).
func TestWriterTakesItsPartOfTheTable(t *testing.T) {
	writers := []v1alpha1.StatusWriter{v1alpha1.ListenerStatusWriter, v1alpha1.CertificateStatusWriter, v1alpha1.NodeLossStatusWriter}
	var all []metav1.Condition
	for _, typ := range append(v1alpha1.StatusConditionTypes(), "Unknown") {
		all = append(all, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "R"})
	}
	full := v1alpha1.ListenerStatus{ServiceName: "web", ClassName: "c", CertificateSecretName: "s", Conditions: all}
	for _, w := range writers {
		t.Run(string(w), func(t *testing.T) {
			wr := For(w)
			owned := wr.Owned(full)
			for _, c := range all {
				owner, _ := v1alpha1.ConditionWriter(c.Type)
				one := v1alpha1.ListenerStatus{Conditions: []metav1.Condition{c}}
				if mine := owner == w; (wr.Foreign(one) == "") != mine || wr.Owns(c.Type) != mine || (meta.FindStatusCondition(owned.Conditions, c.Type) != nil) != mine {
					t.Errorf("condition %s (table: %q): Foreign %q, Owns %v, in Owned %v", c.Type, owner, wr.Foreign(one), wr.Owns(c.Type), meta.FindStatusCondition(owned.Conditions, c.Type) != nil)
				}
			}
			if fieldsMine := w == v1alpha1.ListenerStatusWriter; (owned.ServiceName == "web") != fieldsMine || (wr.Foreign(v1alpha1.ListenerStatus{ServiceName: "web"}) == "") != fieldsMine {
				t.Errorf("status fields: owned %+v, Foreign %q", owned, wr.Foreign(v1alpha1.ListenerStatus{ServiceName: "web"}))
			}
			back := wr.With(full, owned)
			slices.SortFunc(back.Conditions, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
			want := full
			want.Conditions = slices.Clone(full.Conditions)
			slices.SortFunc(want.Conditions, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
			if !reflect.DeepEqual(back, want) {
				t.Errorf("With(full, Owned(full)) = %+v, want %+v", back, want)
			}
		})
	}
}
