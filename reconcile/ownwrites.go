package reconcile

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// ownWrites remembers, per object, the resourceVersion of the last status
// the controller wrote, until its cache shows that version. Until then the
// cached object is older than what the API server holds: comparing the
// desired status with it could find them equal and skip a write the object
// needs (a Listener marked ClassNotFound, then its class recreated before
// the cache saw the ClassNotFound write, would stay ClassNotFound: no later
// event wakes it, since status writes do not change the generation).
//
// A cache at a later resourceVersion (someone else wrote the object after
// us: the certificate controller's condition, a user) has seen our write
// too. Resource versions compare as integers on current API servers
// (resourceversion.CompareResourceVersion); where they do not, a record
// ends after ownWriteTTL.
type ownWrites struct {
	mu      sync.Mutex
	pending map[types.NamespacedName]ownWrite
}

type ownWrite struct {
	resourceVersion string
	at              time.Time
}

// ownWriteTTL bounds how long a cache may lag our own write before the
// record is dropped; informers deliver within milliseconds normally.
const ownWriteTTL = 10 * time.Second

// wrote records the resourceVersion the API server returned for our write.
func (w *ownWrites) wrote(key types.NamespacedName, resourceVersion string, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending == nil {
		w.pending = map[types.NamespacedName]ownWrite{}
	}
	w.pending[key] = ownWrite{resourceVersion: resourceVersion, at: now}
}

// cacheBehind says whether the cached object (of resourceVersion cached)
// may predate our last write of it; it forgets records the cache has caught
// up with, or that are older than ownWriteTTL.
func (w *ownWrites) cacheBehind(key types.NamespacedName, cached string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pending[key]
	if !ok {
		return false
	}
	newer, err := resourceversion.CompareResourceVersion(cached, p.resourceVersion)
	if (err == nil && newer >= 0) || p.resourceVersion == cached || now.Sub(p.at) > ownWriteTTL {
		delete(w.pending, key)
		return false
	}
	return true
}

// forget drops the record of a deleted object.
func (w *ownWrites) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pending, key)
}
