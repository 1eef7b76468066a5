package listener

import (
	"time"

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

// ServiceRefusedRecheck is how often a Listener whose Service the API
// server refused (ServiceRefused) tries again: one refused write a period,
// and what was lifted is noticed within it (test/robustness allows that
// many refused writes in its quiet window, no more).
const ServiceRefusedRecheck = 15 * time.Second

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
		// What refused the Service (a ResourceQuota, a policy, a full
		// cluster range) sends no event either; an error's backoff would
		// grow to controller-runtime's 1,000 s, and a lifted quota be
		// noticed that late.
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
