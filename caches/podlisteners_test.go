package caches

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// recordingQueue records the requests added to it.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	added []string
}

func (q *recordingQueue) Add(r reconcile.Request) { q.added = append(q.added, r.String()) }

// takeAdded returns the requests added since the last call, sorted.
func (q *recordingQueue) takeAdded() []string {
	out := q.added
	q.added = nil
	slices.Sort(out)
	return out
}

// TestPodListenersHashes: what the reflector writes is held as the pod
// reconciler reads it (the hash, whether a restart may be due), and each
// PodListeners that appears, changes or goes sends its pod's request, as
// an owner watch would; a relist sends only what it changes. A
// PodListeners without a pod controller sends nothing. Until the first
// list, the source is not synced.
func TestPodListenersHashes(t *testing.T) {
	pl := func(name, pod, hash string, changed bool) *metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Annotations: map[string]string{v1alpha1.AnnotationPodListenersHash: hash, "kubectl.kubernetes.io/last-applied-configuration": "{}"}}}
		if changed {
			m.Annotations[v1alpha1.AnnotationAddressesChanged] = "true"
		}
		if pod != "" {
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod, UID: "u", Controller: ptr.To(true)}}
		}
		return m
	}
	h := newPodListenersHashes(nil)
	q := &recordingQueue{}
	h.queue = q
	s := podListenersStore{h}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := h.WaitForSync(ctx); err == nil {
		t.Fatal("synced before the first list")
	}
	expect := func(name string, want PodListenersState, wantOK bool) {
		t.Helper()
		got, ok := h.Get(types.NamespacedName{Namespace: "ns", Name: name})
		if ok != wantOK || got != want {
			t.Errorf("Get(%s) = %+v, %v; want %+v, %v", name, got, ok, want, wantOK)
		}
	}
	expectSent := func(want ...string) {
		t.Helper()
		if got := q.takeAdded(); !slices.Equal(got, want) {
			t.Errorf("sent %v, want %v", got, want)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	must(s.Replace([]any{pl("pod-a", "a", "h1", false), pl("pod-b", "b", "h2", true), pl("pod-c", "", "h3", false)}, "1"))
	if err := h.WaitForSync(t.Context()); err != nil {
		t.Fatalf("not synced after the first list: %v", err)
	}
	expect("pod-a", PodListenersState{Hash: "h1"}, true)
	expect("pod-b", PodListenersState{Hash: "h2", AddressesChanged: true}, true)
	expectSent("ns/a", "ns/b")

	must(s.Update(pl("pod-a", "a", "h4", false)))
	expect("pod-a", PodListenersState{Hash: "h4"}, true)
	expectSent("ns/a")

	must(s.Delete(cache.DeletedFinalStateUnknown{Key: "ns/pod-b", Obj: pl("pod-b", "b", "h2", true)}))
	expect("pod-b", PodListenersState{}, false)
	expectSent("ns/b")

	must(s.Add(pl("pod-d", "d", "h5", false)))
	expectSent("ns/d")

	// A relist: pod-a unchanged, pod-d gone, pod-e new.
	must(s.Replace([]any{pl("pod-a", "a", "h4", false), pl("pod-c", "", "h3", false), pl("pod-e", "e", "h6", false)}, "2"))
	expect("pod-d", PodListenersState{}, false)
	expect("pod-e", PodListenersState{Hash: "h6"}, true)
	expectSent("ns/d", "ns/e")

	if err := s.Add("not an object"); err == nil {
		t.Error("a watch event that is not an object was accepted")
	}
}
