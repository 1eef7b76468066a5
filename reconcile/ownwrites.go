package reconcile

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

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
// The record is about the controller's own fields only: another writer of
// the Listener's status (node loss, with its own condition and field
// manager) changes the resourceVersion, not these fields, so it is neither
// mistaken for a lagging cache nor waited for. A record also ends after
// ownWriteTTL, which covers someone else writing these fields after us.
type ownWrites struct {
	mu      sync.Mutex
	pending map[types.NamespacedName]ownWrite
}

type ownWrite struct {
	status v1alpha1.ListenerStatus
	at     time.Time
}

// ownWriteTTL bounds how long a cache may lag our own write before the
// record is dropped; informers deliver within milliseconds normally.
const ownWriteTTL = 10 * time.Second

// wrote records the fields of st the controller owns, as written.
func (w *ownWrites) wrote(key types.NamespacedName, st v1alpha1.ListenerStatus, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending == nil {
		w.pending = map[types.NamespacedName]ownWrite{}
	}
	w.pending[key] = ownWrite{status: ownedStatus(st), at: now}
}

// latest is the status of the Listener as the API server holds it, as far
// as the controller's own fields go: the cached one, with those fields of
// the last write while the cache has not shown it. It forgets records the
// cache has caught up with, or that are older than ownWriteTTL.
func (w *ownWrites) latest(key types.NamespacedName, cached v1alpha1.ListenerStatus, now time.Time) v1alpha1.ListenerStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pending[key]
	if !ok {
		return cached
	}
	if now.Sub(p.at) > ownWriteTTL || statusEqual(ownedStatus(cached), p.status) {
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
