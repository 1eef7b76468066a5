package listener

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestOwnWrites: while the cache is at a version before our last write, the
// status compared with is that write (our fields; the other writers'
// conditions as cached). A cache at that version or later, another writer's
// included, is current. Versions that do not compare fall back to the
// fields, or the record's expiry.
func TestOwnWrites(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	other := types.NamespacedName{Namespace: "ns", Name: "other"}
	t0 := time.Unix(1000, 0)
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReady}
	notFound := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonClassNotFound}
	pinned := metav1.Condition{Type: "PinnedNodesAvailable", Status: metav1.ConditionTrue, Reason: "Available"}
	before := v1alpha1.ListenerStatus{ServiceName: "web", Conditions: []metav1.Condition{ready}}
	ours := v1alpha1.ListenerStatus{ServiceName: "web", Conditions: []metav1.Condition{notFound}}
	for _, tc := range []struct {
		name     string
		key      types.NamespacedName
		cachedRV string
		cached   v1alpha1.ListenerStatus
		at       time.Time
		want     v1alpha1.ListenerStatus
	}{
		{"never written", other, "5", before, t0, before},
		{"cache still before our write", key, "5", before, t0.Add(time.Second), ours},
		{"another writer's condition on the old cache is kept", key, "5",
			v1alpha1.ListenerStatus{ServiceName: "web", Conditions: []metav1.Condition{ready, pinned}}, t0.Add(time.Second),
			v1alpha1.ListenerStatus{ServiceName: "web", Conditions: []metav1.Condition{pinned, notFound}}},
		{"cache shows our write", key, "6", ours, t0.Add(time.Second), ours},
		{"another writer after ours", key, "7",
			v1alpha1.ListenerStatus{ServiceName: "web", Conditions: []metav1.Condition{notFound, pinned}}, t0.Add(time.Second),
			v1alpha1.ListenerStatus{ServiceName: "web", Conditions: []metav1.Condition{notFound, pinned}}},
		{"someone else rewrote our fields after ours", key, "8", before, t0.Add(time.Second), before},
		{"versions that do not compare: behind until the fields show", key, "x5", before, t0.Add(time.Second), ours},
		{"versions that do not compare: the fields show", key, "x6", ours, t0.Add(time.Second), ours},
		{"versions that do not compare: record expired", key, "x5", before, t0.Add(ownWriteTTL + time.Second), before},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w ownWrites
			w.wrote(key, "6", ours, t0)
			if got := w.latest(tc.key, tc.cachedRV, tc.cached, tc.at); !statusEqual(got, tc.want) {
				t.Errorf("latest = %+v, want %+v", got, tc.want)
			}
		})
	}

	var w ownWrites
	w.wrote(key, "6", ours, t0)
	if got := w.latest(key, "6", ours, t0); !statusEqual(got, ours) {
		t.Fatalf("latest = %+v, want our write", got)
	}
	if got := w.latest(key, "5", before, t0); !statusEqual(got, before) {
		t.Error("a record the cache caught up with is forgotten; a later read is not held back")
	}
	w.wrote(key, "6", ours, t0)
	w.forget(key)
	if got := w.latest(key, "5", before, t0); !statusEqual(got, before) {
		t.Error("a forgotten (deleted) Listener has no record")
	}
}
