package reconcile

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestOwnWrites: a cache that has not shown our last write is behind until
// it shows that version or a later one, or until the record expires.
func TestOwnWrites(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	other := types.NamespacedName{Namespace: "ns", Name: "other"}
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name   string
		key    types.NamespacedName
		cached string
		at     time.Time
		want   bool
	}{
		{"never written", other, "5", t0, false},
		{"cache still at the version before our write", key, "5", t0.Add(time.Second), true},
		{"cache shows our write", key, "6", t0.Add(time.Second), false},
		{"cache at another version after the record expired", key, "x7", t0.Add(ownWriteTTL + time.Second), false},
		{"cache at a later version: someone wrote after us", key, "7", t0.Add(time.Second), false},
		{"cache at a version that does not compare", key, "x7", t0.Add(time.Second), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w ownWrites
			w.wrote(key, "6", t0)
			if got := w.cacheBehind(tc.key, tc.cached, tc.at); got != tc.want {
				t.Errorf("cacheBehind(%s, %q) = %v, want %v", tc.key, tc.cached, got, tc.want)
			}
		})
	}

	var w ownWrites
	w.wrote(key, "6", t0)
	if !w.cacheBehind(key, "5", t0) {
		t.Fatal("cache at 5 after our write of 6 should be behind")
	}
	if w.cacheBehind(key, "6", t0) {
		t.Fatal("cache at 6 should have caught up")
	}
	if w.cacheBehind(key, "5", t0) {
		t.Error("a record the cache caught up with is forgotten; a later read is not held back")
	}
	w.wrote(key, "8", t0)
	w.forget(key)
	if w.cacheBehind(key, "5", t0) {
		t.Error("a forgotten (deleted) object is not behind")
	}
}
