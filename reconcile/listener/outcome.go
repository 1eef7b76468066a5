package listener

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// outcome is what one reconcile of a Listener decided: the status to
// publish with its verdict, and when to look again without an event. An
// error from a reconcile means only "retry" (with the controller's backoff);
// everything else is an outcome. The zero outcome is none: a step of the
// reconcile that returns it decided nothing, and the reconcile goes on
// (ends); there is no nil outcome to dereference.
type outcome struct {
	// decided: the reconcile ends with this outcome (every constructor
	// below sets it).
	decided bool
	// publish: status and verdict are to be published. False when the
	// reconcile found the cache behind the API server and decided nothing.
	publish bool
	status  v1alpha1.ListenerStatus
	verdict verdict
	// requeueAfter is when to look again on its own (0: on events only).
	requeueAfter time.Duration
}

// settled is the outcome of a Listener whose status was computed.
func settled(st v1alpha1.ListenerStatus, v verdict) outcome {
	return outcome{decided: true, publish: true, status: st, verdict: v, requeueAfter: recheckAfter(v)}
}

// judged is the outcome of a Listener that publishes no new address, only
// the verdict (the addresses it published stay, see keepPublished).
func judged(v verdict) outcome {
	return settled(v1alpha1.ListenerStatus{}, v)
}

// cacheBehind is the outcome of a reconcile that found the Service cache
// behind the API server (a Service it made is not there yet): it looks
// again shortly, since its own creations send it no event (setup.go).
func cacheBehind() outcome {
	return outcome{decided: true, requeueAfter: serviceCacheRetry}
}

// serviceCacheRetry is how soon a reconcile that found the Service cache
// behind looks again.
const serviceCacheRetry = 50 * time.Millisecond

// ServiceRefusedRecheck is the shortest period after which a Listener
// whose Service the API server refused (ServiceRefused) tries again on its
// own: at most one refused write a period (test/robustness allows that
// many in its quiet window, no more). The period doubles with each refusal
// in a row up to ServiceRefusedRecheckMax (refusalBackoff): at 1,000
// refused Listeners a fixed 15 s made ~66 refused writes a second. A
// ResourceQuota of the namespace made, changed or deleted wakes them at
// once (setup.go), so a lifted quota is noticed without waiting; only
// what sends no event (an admission policy, a full Service IP or node
// port range) waits for the timer.
const ServiceRefusedRecheck = 15 * time.Second

// ServiceRefusedRecheckMax is the longest period between two rechecks of
// a refused Service (the Ready message says "at least every …").
const ServiceRefusedRecheckMax = 5 * time.Minute

// refusedRecheck is the period after the k+1-th refusal in a row:
// ServiceRefusedRecheck doubled k times, at most ServiceRefusedRecheckMax.
func refusedRecheck(k int) time.Duration {
	d := ServiceRefusedRecheck
	for range k {
		if d *= 2; d >= ServiceRefusedRecheckMax {
			return ServiceRefusedRecheckMax
		}
	}
	return d
}

// refusalBackoff counts, per Listener, the ServiceRefused verdicts in a
// row (only of Listeners refused now: a Listener is forgotten with its
// next other verdict, or its deletion). A new leader starts again at the
// shortest period.
type refusalBackoff struct {
	mu sync.Mutex
	n  map[types.NamespacedName]int
}

// recheck is when Listener key, whose reconcile ended with verdict v, looks
// again on its own: the backed-off period when v is ServiceRefused (and
// the count grows), else after (and the count is forgotten).
func (b *refusalBackoff) recheck(key types.NamespacedName, v verdict, after time.Duration) time.Duration {
	if v.ready || v.reason != v1alpha1.ReasonServiceRefused {
		b.forget(key)
		return after
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n == nil {
		b.n = map[types.NamespacedName]int{}
	}
	k := b.n[key]
	b.n[key] = min(k+1, 32)
	return refusedRecheck(k)
}

// forget drops the count of Listener key.
func (b *refusalBackoff) forget(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.n, key)
}

// recheckAfter is how long a Listener with verdict v waits before it looks
// again without an event: only one blocked by something the cache cannot
// see does (blockedOutsideCache, the Gateway API, what refused a Service
// or route). Endpoints, load-balancer addresses and warnings, classes,
// claims and volumes send events the controller maps to the Listener
// (setup.go).
func recheckAfter(v verdict) time.Duration {
	switch {
	case blockedOutsideCache(v):
		return foreignServiceRecheck
	case !v.ready && v.reason == v1alpha1.ReasonGatewayAPIMissing:
		// Nothing is watched before the Gateway API is installed.
		return gatewayRecheck
	case !v.ready && v.reason == v1alpha1.ReasonRouteRefused:
		// What refused the route (a policy, a quota) sends no event.
		return gatewayRecheck
	case !v.ready && v.reason == v1alpha1.ReasonServiceRefused:
		// What refused the Service (a policy, a full cluster range) may
		// send no event (a ResourceQuota does: setup.go); an error's
		// backoff would grow to controller-runtime's 1,000 s. The
		// reconciler backs this off (refusalBackoff).
		return ServiceRefusedRecheck
	}
	return 0
}

// ends reports whether the reconcile ends with o (false for the zero
// outcome: none was decided, go on).
func (o outcome) ends() bool { return o.decided }

// result is the controller-runtime result of an outcome.
func (o outcome) result() (ctrl.Result, error) {
	return ctrl.Result{RequeueAfter: o.requeueAfter}, nil
}
