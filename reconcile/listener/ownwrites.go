package listener

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// ownWrites remembers, per Listener, the status fields the controller last
// wrote (ownedStatus, as the API server answered), until its cache shows
// them. Until then the cached Listener is older than what the API server
// holds: comparing the desired status with it could find them equal and
// skip a write the Listener needs (a Listener marked ClassNotFound, then its
// class recreated before the cache saw the ClassNotFound write, would stay
// ClassNotFound: no later event wakes it, since status writes do not change
// the generation). So the reconcile compares with the last write instead.
//
// Whether the cache has shown the write is told by comparing resource
// versions (resourceversion.CompareResourceVersion):
// a cached Listener at the written version or later (another writer's, e.g.
// node loss applying its condition) is current, and nothing waits. Where
// versions cannot be compared, the record ends when the cache shows the
// written fields, or after ownWriteTTL.
type ownWrites struct {
	mu      sync.Mutex
	pending map[types.NamespacedName]ownWrite
}

type ownWrite struct {
	resourceVersion string
	status          v1alpha1.ListenerStatus
	at              time.Time
}

// ownWriteTTL bounds how long a cache may lag our own write before the
// record is dropped; informers deliver within milliseconds normally.
const ownWriteTTL = 10 * time.Second

// wrote records the fields of st the controller owns, as written at
// resourceVersion.
func (w *ownWrites) wrote(key types.NamespacedName, resourceVersion string, st v1alpha1.ListenerStatus, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending == nil {
		w.pending = map[types.NamespacedName]ownWrite{}
	}
	w.pending[key] = ownWrite{resourceVersion: resourceVersion, status: ownedStatus(st), at: now}
}

// latest is the status of the Listener as the API server holds it, as far
// as the controller's own fields go: the cached one (at resourceVersion
// cachedRV), with those fields of the last write while the cache has not
// shown it. It forgets records the cache has caught up with.
func (w *ownWrites) latest(key types.NamespacedName, cachedRV string, cached v1alpha1.ListenerStatus, now time.Time) v1alpha1.ListenerStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pending[key]
	if !ok {
		return cached
	}
	caughtUp := now.Sub(p.at) > ownWriteTTL || statusEqual(ownedStatus(cached), p.status)
	if cmp, err := resourceversion.CompareResourceVersion(cachedRV, p.resourceVersion); err == nil {
		caughtUp = cmp >= 0
	}
	if caughtUp {
		delete(w.pending, key)
		return cached
	}
	return withOwned(cached, p.status)
}

// forget drops the record of a deleted Listener.
func (w *ownWrites) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pending, key)
}
