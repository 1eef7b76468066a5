package webhooks

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
)

// Live reads of names the cache does not have.
//
// A webhook reads an object live when its cache says it does not exist, so
// that an object created a moment ago counts. The names come from tenants'
// objects, and a dry-run create costs nothing: thousands of distinct unknown
// names would cost thousands of live GETs. liveBounds bounds that: a name
// found missing is answered from a negative cache for missingTTL, and live
// reads of unknown names are rate-limited per replica; past the limit the
// cache's answer (not found) stands, which a client that just created the
// object gets again on retry only if its cache still lags.
const (
	missingTTL      = time.Second
	maxMissing      = 4096
	liveReadsPerSec = 50
	liveReadsBurst  = 100
)

// liveBounds is the negative cache and the rate limit of live reads.
type liveBounds struct {
	limiter *rate.Limiter
	mu      sync.Mutex
	missing map[liveKey]time.Time // until when a name is known missing
	now     func() time.Time
}

type liveKey struct {
	kind string // the Go type read
	key  types.NamespacedName
}

func newLiveBounds() *liveBounds {
	return &liveBounds{limiter: rate.NewLimiter(liveReadsPerSec, liveReadsBurst), missing: map[liveKey]time.Time{}, now: time.Now}
}

// allow says whether to read k live: not while it is known missing, nor
// past the rate limit. A nil liveBounds allows every read.
func (r *liveBounds) allow(k liveKey) bool {
	if r == nil {
		return true
	}
	now := r.now()
	r.mu.Lock()
	until, ok := r.missing[k]
	if ok && now.After(until) {
		delete(r.missing, k)
		ok = false
	}
	r.mu.Unlock()
	if ok {
		return false
	}
	return r.limiter.AllowN(now, 1)
}

// notFound records that a live read found k missing.
func (r *liveBounds) notFound(k liveKey) {
	if r == nil {
		return
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.missing) >= maxMissing {
		for key, until := range r.missing {
			if now.After(until) {
				delete(r.missing, key)
			}
		}
		if len(r.missing) >= maxMissing {
			return // full of live entries: the rate limit still bounds reads
		}
	}
	r.missing[k] = now.Add(missingTTL)
}
