package caches

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestNothingReachesACachedObject: whatever a reader of a cache made by New
// does with what it gets (a read asking not to be copied, an event
// handler's object, an index function's), the cached objects say what the
// API server says, and so do the maps they share with other objects
// (intern.go). The same writes through controller-runtime's own cache with
// the same policy do change them: what New prevents.
func TestNothingReachesACachedObject(t *testing.T) {
	e := testenv.Require(t, env)
	for _, tc := range []struct {
		name    string
		newFunc cache.NewCacheFunc
		corrupt bool
	}{
		{"caches.New", New, false},
		{"controller-runtime's cache (the test can fail)", cache.New, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			ns := e.Namespace(t, ctx, "read-only-")
			opts := Webhooks()
			opts.Scheme = e.Scheme
			c, err := tc.newFunc(e.Config, opts)
			if err != nil {
				t.Fatal(err)
			}
			writes := writeThroughEveryPath(t, c)
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			go func() { _ = c.Start(cctx) }()
			if !c.WaitForCacheSync(ctx) {
				t.Fatal("cache did not sync")
			}
			labels := map[string]string{v1alpha1.LabelListenerVolume: "true", "app.kubernetes.io/name": "kafka"}
			for _, name := range []string{"kafka-0", "kafka-1"} {
				claim := &corev1.PersistentVolumeClaim{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: maps.Clone(labels)},
					Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(v1alpha1.StorageClassName),
						AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
						Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}}},
				}
				if err := e.Client.Create(ctx, claim); err != nil {
					t.Fatal(err)
				}
			}
			// The handler and both index functions have seen both claims,
			// and the store holds both (an informer may call its index
			// functions before the object is in its store).
			deadline := time.Now().Add(30 * time.Second)
			for writes.seen() < 6 || !cached(ctx, c, ns, "kafka-0", "kafka-1") {
				if time.Now().After(deadline) {
					t.Fatalf("the handler and index functions saw %d of 6 objects", writes.seen())
				}
				time.Sleep(50 * time.Millisecond)
			}
			// Reads that ask for the cached object itself.
			var one corev1.PersistentVolumeClaim
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kafka-0"}, &one, client.UnsafeDisableDeepCopy); err != nil {
				t.Fatal(err)
			}
			one.Labels["written-by"] = "get"
			var list corev1.PersistentVolumeClaimList
			if err := c.List(ctx, &list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
				t.Fatal(err)
			}
			for i := range list.Items {
				list.Items[i].Labels["written-by"] = "list"
			}

			var changed []string
			for _, name := range []string{"kafka-0", "kafka-1"} {
				var got corev1.PersistentVolumeClaim
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
					t.Fatal(err)
				}
				if !maps.Equal(got.Labels, labels) {
					changed = append(changed, fmt.Sprintf("%s: %v", name, got.Labels))
				}
			}
			switch {
			case tc.corrupt && len(changed) == 0:
				t.Error("writes through controller-runtime's cache changed no cached object: the test cannot fail")
			case !tc.corrupt && len(changed) > 0:
				t.Errorf("writes by readers changed cached objects (labels %v, want %v)", changed, labels)
			}
		})
	}
}

// cached says whether c holds every named claim of namespace ns.
func cached(ctx context.Context, c cache.Cache, ns string, names ...string) bool {
	for _, name := range names {
		var got corev1.PersistentVolumeClaim
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
			return false
		}
	}
	return true
}

// everyPathWrites counts the objects an event handler and two index
// functions were handed, each of which they wrote to.
type everyPathWrites struct{ n atomic.Int64 }

func (w *everyPathWrites) seen() int64 { return w.n.Load() }

// writeThroughEveryPath registers, on claims, an event handler, an index
// (IndexField) and an informer's index function that each write to the
// labels of the object they get, as a careless predicate, map function or
// indexer would.
func writeThroughEveryPath(t *testing.T, c cache.Cache) *everyPathWrites {
	t.Helper()
	w := &everyPathWrites{}
	write := func(obj any, by string) {
		if o, ok := obj.(client.Object); ok && o.GetLabels() != nil {
			o.GetLabels()["written-by"] = by
			w.n.Add(1)
		}
	}
	if err := c.IndexField(t.Context(), &corev1.PersistentVolumeClaim{}, "test.written", func(o client.Object) []string {
		write(o, "index")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	inf, err := c.GetInformer(t.Context(), &corev1.PersistentVolumeClaim{})
	if err != nil {
		t.Fatal(err)
	}
	if err := inf.AddIndexers(toolscache.Indexers{"test-written": func(obj any) ([]string, error) {
		write(obj, "indexer")
		return nil, nil
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { write(obj, "handler") },
	}); err != nil {
		t.Fatal(err)
	}
	return w
}
