package webhooks

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// countingReader answers every Get from objs (NotFound for the others) and
// counts the calls.
type countingReader struct {
	client.Reader
	objs map[types.NamespacedName]*corev1.PersistentVolumeClaim
	gets atomic.Int64
}

func (c *countingReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	c.gets.Add(1)
	pvc, ok := c.objs[key]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumeclaims"}, key.Name)
	}
	pvc.DeepCopyInto(obj.(*corev1.PersistentVolumeClaim))
	return nil
}

// TestOrdinaryClaimsAreReadOnce: the cache holds only listener claims; a
// claim of another storage class that pods mount is read live once and then
// answered from the bounded memory until its time runs out, and the memory
// never holds more than its bound, forgetting the oldest first. A listener
// claim the cache lacks (not marked yet) is read live every time and never
// remembered as ordinary; a claim that does not exist is NotFound.
func TestOrdinaryClaimsAreReadOnce(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "t", Name: name} }
	objs := map[types.NamespacedName]*corev1.PersistentVolumeClaim{
		key("unmarked-listener"): {ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "unmarked-listener"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr(v1alpha1.StorageClassName)}},
	}
	for i := range 20 {
		name := fmt.Sprintf("data-%d", i)
		objs[key(name)] = &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: name}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr("standard")}}
	}
	live := &countingReader{objs: objs}
	ordinary := newOrdinaryClaims()
	ordinary.now = func() time.Time { return now }
	ordinary.maxSize = 8
	l := &lookup{cache: &missingReader{}, live: live, ordinary: ordinary}
	ask := func(name string) (bool, error) {
		var c corev1.PersistentVolumeClaim
		return l.claim(t.Context(), key(name), &c)
	}
	for range 100 {
		if ord, err := ask("data-0"); err != nil || !ord {
			t.Fatalf("data-0: ordinary %t, %v; want ordinary", ord, err)
		}
	}
	if got := live.gets.Load(); got != 1 {
		t.Errorf("100 admissions of one ordinary claim read it live %d times, want 1", got)
	}
	now = now.Add(ordinaryTTL + time.Second)
	if _, err := ask("data-0"); err != nil {
		t.Fatal(err)
	}
	if got := live.gets.Load(); got != 2 {
		t.Errorf("after the TTL: %d live reads, want 2", got)
	}
	for i := range 20 {
		if _, err := ask(fmt.Sprintf("data-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(ordinary.known); n > ordinary.maxSize || len(ordinary.oldest) > ordinary.maxSize {
		t.Errorf("memory holds %d names (%d in order), bound %d", n, len(ordinary.oldest), ordinary.maxSize)
	}
	if !ordinary.has(key("data-19")) || ordinary.has(key("data-0")) {
		t.Errorf("want the newest remembered and the oldest forgotten: data-19 %t, data-0 %t", ordinary.has(key("data-19")), ordinary.has(key("data-0")))
	}
	before := live.gets.Load()
	for range 3 {
		if ord, err := ask("unmarked-listener"); err != nil || ord {
			t.Fatalf("unmarked listener claim: ordinary %t, %v; want a listener claim", ord, err)
		}
	}
	if got := live.gets.Load() - before; got != 3 {
		t.Errorf("an unmarked listener claim was read live %d times in 3 asks, want 3 (never remembered)", got)
	}
	if _, err := ask("missing"); !apierrors.IsNotFound(err) {
		t.Errorf("missing claim: %v, want NotFound", err)
	}
}

// BenchmarkOrdinaryClaimsMemory: the heap the pod webhook's memory of
// claims that are not listener claims holds when full (maxOrdinary names
// of realistic length), the most it ever holds whatever the cluster's size.
func BenchmarkOrdinaryClaimsMemory(b *testing.B) {
	b.ReportAllocs()
	var full float64
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		o := newOrdinaryClaims()
		for i := range 2 * maxOrdinary {
			o.add(types.NamespacedName{Namespace: fmt.Sprintf("team-%03d", i%100), Name: fmt.Sprintf("data-kafka-broker-%05d", i)})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		full = float64(after.HeapAlloc) - float64(before.HeapAlloc)
		runtime.KeepAlive(o)
	}
	b.ReportMetric(full/1024, "full-KiB")
	b.ReportMetric(full/maxOrdinary, "B/name")
}

// namespaceAnswers is a NamespaceDefaults with fixed answers.
type namespaceAnswers struct {
	class string
	seen  bool
	err   error
}

func (n namespaceAnswers) DefaultClass(context.Context, string) (string, bool, error) {
	return n.class, n.seen, n.err
}

// namespaceReader answers a Get of namespace "t" with class as its default
// and counts the calls.
type namespaceReader struct {
	client.Reader
	class string
	gets  atomic.Int64
}

func (n *namespaceReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	n.gets.Add(1)
	if key.Name != "t" {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, key.Name)
	}
	obj.SetAnnotations(map[string]string{v1alpha1.AnnotationDefaultClass: n.class})
	return nil
}

// TestNamespaceDefaultIsReadLiveOnlyWhenUnseen: a namespace's default class
// comes from what the namespace watch holds; only a namespace it has not
// seen (created a moment ago) is read live, and that read is bounded like
// every read of a name the caches lack. A watch that has not listed yet
// (the request's context ended first) is an error, not "no default".
func TestNamespaceDefaultIsReadLiveOnlyWhenUnseen(t *testing.T) {
	for _, tc := range []struct {
		name       string
		namespaces NamespaceDefaults
		namespace  string
		want       string
		wantErr    bool
		wantGets   int64
	}{
		{"seen, names a class", namespaceAnswers{class: "external-stable", seen: true}, "t", "external-stable", false, 0},
		{"seen, names none", namespaceAnswers{seen: true}, "t", "", false, 0},
		{"not seen yet: read live", namespaceAnswers{}, "t", "live-class", false, 1},
		{"not seen, does not exist", namespaceAnswers{}, "gone", "", false, 1},
		{"not listed yet", namespaceAnswers{err: context.DeadlineExceeded}, "t", "", true, 0},
		{"no watch: read live", nil, "t", "live-class", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := &namespaceReader{class: "live-class"}
			l := &lookup{cache: &missingReader{}, live: live, reads: newLiveBounds(), namespaces: tc.namespaces}
			got, err := l.namespaceDefault(t.Context(), tc.namespace)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("namespaceDefault = %q, %v; want %q (error %v)", got, err, tc.want, tc.wantErr)
			}
			if n := live.gets.Load(); n != tc.wantGets {
				t.Errorf("%d live reads, want %d", n, tc.wantGets)
			}
		})
	}
	// Thousands of claims in namespaces the watch has not seen cost at
	// most the live reads' burst.
	live := &namespaceReader{}
	reads := newLiveBounds()
	now := time.Unix(1_000_000, 0)
	reads.now = func() time.Time { return now }
	l := &lookup{cache: &missingReader{}, live: live, reads: reads, namespaces: namespaceAnswers{}}
	for i := range 5000 {
		_, _ = l.namespaceDefault(t.Context(), fmt.Sprintf("ns-%d", i))
	}
	if n := live.gets.Load(); n > liveReadsBurst {
		t.Errorf("5000 unseen namespaces: %d live reads, want at most %d", n, liveReadsBurst)
	}
}
