package webhooks

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// missingReader answers every Get with NotFound and counts the calls.
type missingReader struct {
	client.Reader
	gets atomic.Int64
}

func (m *missingReader) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	m.gets.Add(1)
	return apierrors.NewNotFound(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "listeners"}, key.Name)
}

// TestLiveReadsOfUnknownNamesAreBounded: dry-run objects naming thousands
// of distinct unknown Listeners cost at most the rate limit's burst in live
// reads, and one unknown name asked again and again costs one read per
// negative-cache TTL.
func TestLiveReadsOfUnknownNamesAreBounded(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	for _, tc := range []struct {
		name     string
		names    func(i int) string
		requests int
		advance  time.Duration // clock step after each request
		maxGets  int64
	}{
		{"5000 distinct names at once", func(i int) string { return fmt.Sprintf("l-%d", i) }, 5000, 0, liveReadsBurst},
		{"one name 1000 times at once", func(int) string { return "same" }, 1000, 0, 1},
		{"one name for 10 s, 10 times a second", func(int) string { return "same" }, 100, 100 * time.Millisecond, int64(10*time.Second/missingTTL) + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := &missingReader{}
			reads := newLiveBounds()
			reads.now = clock
			l := &lookup{cache: &missingReader{}, live: live, reads: reads}
			for i := range tc.requests {
				var li v1alpha1.Listener
				err := l.get(t.Context(), types.NamespacedName{Namespace: "t", Name: tc.names(i)}, &li)
				if !apierrors.IsNotFound(err) {
					t.Fatalf("get: %v, want NotFound", err)
				}
				now = now.Add(tc.advance)
			}
			if got := live.gets.Load(); got > tc.maxGets || got == 0 {
				t.Errorf("%d live reads, want 1 to %d", got, tc.maxGets)
			}
		})
	}
	// Without bounds (nil), every lookup reads live: the old behaviour.
	live := &missingReader{}
	l := &lookup{cache: &missingReader{}, live: live}
	for i := range 300 {
		_ = l.get(t.Context(), types.NamespacedName{Name: fmt.Sprint(i)}, &v1alpha1.Listener{})
	}
	if live.gets.Load() != 300 {
		t.Errorf("unbounded lookup read %d times, want 300", live.gets.Load())
	}
}
