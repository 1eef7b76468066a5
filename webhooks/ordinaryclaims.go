package webhooks

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/listener-operator/listener-operator/api/claims"
)

// Claims that are not listener claims.
//
// The cache holds only listener claims (marked by the claim webhook, see
// claims.Marked): a cluster's other claims cost the operator nothing. A pod
// that mounts one of them still has to be told apart from a pod whose
// claim does not exist yet (which may become a listener claim, so the pod
// is labelled for the controller to see). The first admission that meets
// such a claim reads it live (within the live read bounds, livereads.go);
// what it finds is remembered here, so that the next pods of a workload
// cost no read. The memory is bounded (maxOrdinary names, each for
// ordinaryTTL): past it the oldest answers are forgotten and read again.
const (
	ordinaryTTL = 10 * time.Minute
	maxOrdinary = 4096
)

// ordinaryClaims remembers claims known to exist and not be listener
// claims, by a 64-bit hash of their namespace and name (a few dozen bytes
// each, whatever the names' length; with a per-process seed, two names
// share a hash with a chance of about one in 10^15 when full). A claim
// deleted and made again under the same name as a listener claim is in the
// cache (marked) and found there first.
type ordinaryClaims struct {
	seed    maphash.Seed
	mu      sync.Mutex
	known   map[uint64]int64 // until when (Unix nanoseconds)
	oldest  []uint64         // in the order added, for eviction
	now     func() time.Time
	maxSize int
}

func newOrdinaryClaims() *ordinaryClaims {
	return &ordinaryClaims{seed: maphash.MakeSeed(), known: map[uint64]int64{}, now: time.Now, maxSize: maxOrdinary}
}

func (o *ordinaryClaims) hash(key types.NamespacedName) uint64 {
	var h maphash.Hash
	h.SetSeed(o.seed)
	h.WriteString(key.Namespace)
	h.WriteByte('/')
	h.WriteString(key.Name)
	return h.Sum64()
}

// has reports whether key is known to be a claim that is not a listener
// claim. A nil ordinaryClaims knows nothing.
func (o *ordinaryClaims) has(key types.NamespacedName) bool {
	if o == nil {
		return false
	}
	h := o.hash(key)
	o.mu.Lock()
	defer o.mu.Unlock()
	until, ok := o.known[h]
	return ok && o.now().UnixNano() < until
}

// add remembers key, forgetting the oldest names when full.
func (o *ordinaryClaims) add(key types.NamespacedName) {
	if o == nil {
		return
	}
	h := o.hash(key)
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.known[h]; !ok {
		for len(o.oldest) >= o.maxSize {
			delete(o.known, o.oldest[0])
			o.oldest = o.oldest[1:]
		}
		o.oldest = append(o.oldest, h)
	}
	o.known[h] = o.now().Add(ordinaryTTL).UnixNano()
}

// claim reads the claim key into c: from the cache (listener claims: only
// the fields caches.KeyIndex.ClaimFields fills, when heldClaims is set), else
// from what is known of other claims, else live. ordinary says the claim
// exists and is not a listener claim (c is then not filled in). A claim the
// cache lacks and a live read does not find (or may not read: the bounds)
// is NotFound.
func (l *lookup) claim(ctx context.Context, key types.NamespacedName, c *corev1.PersistentVolumeClaim) (ordinary bool, err error) {
	if l.heldClaims != nil {
		if l.heldClaims.ClaimFields(key, c) {
			return false, nil
		}
		if l.ordinary.has(key) {
			// What the read below would find, without the NotFound
			// error it makes (11 allocations a pod admission, per
			// claim of a StatefulSet's data volumes).
			return true, nil
		}
	}
	// The readers get a claim of their own: c handed to them would be on
	// the heap on the path above too (a claim's worth of garbage per claim
	// a pod mounts, BenchmarkPodWebhookServing).
	read := &corev1.PersistentVolumeClaim{}
	if ordinary, err = l.readClaim(ctx, key, read); err == nil && !ordinary {
		*c = *read
	}
	return ordinary, err
}

// readClaim reads the claim key into c from the cache, else from what is
// known of other claims, else live (claim).
func (l *lookup) readClaim(ctx context.Context, key types.NamespacedName, c *corev1.PersistentVolumeClaim) (ordinary bool, err error) {
	err = l.cache.Get(ctx, key, c)
	if err == nil || !apierrors.IsNotFound(err) {
		return false, err
	}
	if l.ordinary.has(key) {
		return true, nil
	}
	if err := l.getLive(ctx, key, c, err); err != nil {
		return false, err
	}
	if !claims.IsListenerClaim(c) {
		l.ordinary.add(key)
		return true, nil
	}
	// A listener claim not marked yet (admitted while the webhooks were
	// down, or before they marked claims): the controller marks it.
	return false, nil
}
