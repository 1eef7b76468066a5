package listener

import (
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestGivenPortsForgotten: a port given to a Listener is held from memory
// only until the cache shows it, or the Listener's Service no longer has
// it; then a Listener waiting for it may have it at once.
func TestGivenPortsForgotten(t *testing.T) {
	a, b := types.NamespacedName{Namespace: "x", Name: "a"}, types.NamespacedName{Namespace: "y", Name: "b"}
	now := time.Now()
	fresh := func() (*rangeWrites, *classWrites) {
		w := &rangeWrites{}
		cw := w.lock("c")
		cw.given[30001] = givenPort{listener: a, at: now}
		cw.given[30002] = givenPort{listener: a, at: now}
		cw.given[30003] = givenPort{listener: b, at: now.Add(-2 * rangeGivenTTL)}
		cw.mu.Unlock()
		return w, cw
	}
	for _, tc := range []struct {
		name   string
		change func(*rangeWrites, *classWrites) map[int32]string
		want   []int32 // the ports still given
		held   map[int32]string
	}{
		{name: "held from memory for another Listener", change: func(_ *rangeWrites, cw *classWrites) map[int32]string {
			held := map[int32]string{}
			cw.holdGiven(held, b, now, heldByNamespace)
			return held
		}, want: []int32{30001, 30002}, held: map[int32]string{30001: "x", 30002: "x"}},
		{name: "the cache shows it", change: func(_ *rangeWrites, cw *classWrites) map[int32]string {
			held := map[int32]string{30001: "x"}
			cw.holdGiven(held, b, now, heldByNamespace)
			return held
		}, want: []int32{30002}, held: map[int32]string{30001: "x", 30002: "x"}},
		{name: "its Service dropped one", change: func(w *rangeWrites, _ *classWrites) map[int32]string {
			w.forget(a, &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, NodePort: 30002}}}})
			return nil
		}, want: []int32{30002, 30003}},
		{name: "its Service gone", change: func(w *rangeWrites, _ *classWrites) map[int32]string {
			w.forget(a, nil)
			return nil
		}, want: []int32{30003}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, cw := fresh()
			held := tc.change(w, cw)
			if got := slices.Sorted(maps.Keys(cw.given)); !slices.Equal(got, tc.want) {
				t.Errorf("given %v, want %v", got, tc.want)
			}
			if tc.held != nil && !maps.Equal(held, tc.held) {
				t.Errorf("held %v, want %v", held, tc.held)
			}
		})
	}
}
