package caches

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// PodListenersState is what the pod reconciler reads of a PodListeners to
// decide whether to write it: the hash of the spec it was last written with
// and whether an address change may still ask its pod to restart.
type PodListenersState struct {
	Hash             string // v1alpha1.AnnotationPodListenersHash
	AddressesChanged bool   // v1alpha1.AnnotationAddressesChanged is set
}

// podListenersEntry is a PodListeners as PodListenersHashes holds it.
type podListenersEntry struct {
	PodListenersState
	pod string // the pod that controls it, "" if none
}

// PodListenersHashes watches the cluster's PodListeners (metadata only) and
// holds of each its PodListenersState and its pod, nothing more: some 200
// bytes where an informer's metadata-only object took 1,076
// (BenchmarkListenerObjects), one per listener pod. It is the pod
// reconciler's source too (source.TypedSyncingSource): a PodListeners
// created, changed or deleted by anyone sends its pod's request, as an
// owner watch would, and the controller starts its workers only once the
// first list is held, so that no pod takes a PodListeners for missing.
type PodListenersHashes struct {
	lw cache.ListerWatcher

	mu      sync.RWMutex
	entries map[types.NamespacedName]podListenersEntry
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]
	synced  chan struct{} // closed once the first list is held
	once    sync.Once
}

var _ source.TypedSyncingSource[reconcile.Request] = (*PodListenersHashes)(nil)

// NewPodListenersHashes watches PodListeners through cfg (metadata only), on
// httpClient (nil: one of its own).
func NewPodListenersHashes(cfg *rest.Config, httpClient *http.Client) (*PodListenersHashes, error) {
	lw, err := metadataListWatch(cfg, httpClient, v1alpha1.GroupVersion.WithResource("podlisteners"))
	if err != nil {
		return nil, err
	}
	return newPodListenersHashes(lw), nil
}

func newPodListenersHashes(lw cache.ListerWatcher) *PodListenersHashes {
	return &PodListenersHashes{lw: lw, entries: map[types.NamespacedName]podListenersEntry{}, synced: make(chan struct{})}
}

// Get is the state of the PodListeners key; false if there is none.
func (h *PodListenersHashes) Get(key types.NamespacedName) (PodListenersState, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	e, ok := h.entries[key]
	return e.PodListenersState, ok
}

// Start watches PodListeners until ctx ends (list, then watch, relisting
// when the watch expires) and sends the pod of each one that changes to
// queue. It returns at once.
func (h *PodListenersHashes) Start(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	h.mu.Lock()
	h.queue = queue
	h.mu.Unlock()
	r := cache.NewReflectorWithOptions(h.lw, &metav1.PartialObjectMetadata{}, podListenersStore{h}, cache.ReflectorOptions{Name: "podlisteners hashes"})
	go r.RunWithContext(ctx)
	return nil
}

// WaitForSync waits until the first list of PodListeners is held.
func (h *PodListenersHashes) WaitForSync(ctx context.Context) error {
	select {
	case <-h.synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("PodListeners not listed yet: %w", ctx.Err())
	}
}

// String names the source in the controller's log.
func (*PodListenersHashes) String() string { return "PodListeners hashes (metadata watch)" }

// entryOf reads what is held of a PodListeners.
func entryOf(obj any) (types.NamespacedName, podListenersEntry, error) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return types.NamespacedName{}, podListenersEntry{}, fmt.Errorf("PodListeners watch sent %T", obj)
	}
	e := podListenersEntry{PodListenersState: PodListenersState{
		Hash:             m.GetAnnotations()[v1alpha1.AnnotationPodListenersHash],
		AddressesChanged: m.GetAnnotations()[v1alpha1.AnnotationAddressesChanged] != "",
	}}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil && ref.Kind == "Pod" && ref.APIVersion == "v1" {
		e.pod = ref.Name
	}
	// The name is the pod's UID (names.PodListenersName): held in the
	// name's memory, the namespace once.
	return types.NamespacedName{Namespace: intern(m.GetNamespace()), Name: m.GetName()}, e, nil
}

// notify sends the request of the pods of entries to the queue.
func (h *PodListenersHashes) notify(namespace string, entries ...podListenersEntry) {
	if h.queue == nil {
		return
	}
	for _, e := range entries {
		if e.pod != "" {
			h.queue.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: e.pod}})
		}
	}
}

// podListenersStore is what the reflector writes to.
type podListenersStore struct{ h *PodListenersHashes }

func (s podListenersStore) Add(obj any) error    { return s.set(obj, false) }
func (s podListenersStore) Update(obj any) error { return s.set(obj, false) }
func (s podListenersStore) Delete(obj any) error { return s.set(obj, true) }
func (s podListenersStore) Resync() error        { return nil }

func (s podListenersStore) set(obj any, gone bool) error {
	key, e, err := entryOf(obj)
	if err != nil {
		return err
	}
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if gone {
		delete(s.h.entries, key)
	} else {
		s.h.entries[key] = e
	}
	s.h.notify(key.Namespace, e)
	return nil
}

// Replace holds list instead of what was held (a list or relist), and
// sends the pods of what it adds, changes or drops, as an informer's
// events would.
func (s podListenersStore) Replace(list []any, _ string) error {
	fresh := make(map[types.NamespacedName]podListenersEntry, len(list))
	for _, obj := range list {
		key, e, err := entryOf(obj)
		if err != nil {
			return err
		}
		fresh[key] = e
	}
	s.h.mu.Lock()
	old := s.h.entries
	s.h.entries = fresh
	for key, e := range fresh {
		if o, ok := old[key]; !ok || o != e {
			s.h.notify(key.Namespace, e)
		}
	}
	for key, o := range old {
		if _, ok := fresh[key]; !ok {
			s.h.notify(key.Namespace, o)
		}
	}
	s.h.mu.Unlock()
	s.h.once.Do(func() { close(s.h.synced) })
	return nil
}

var _ cache.ReflectorStore = podListenersStore{}
