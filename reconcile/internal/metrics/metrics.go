// Package metrics counts what the leader's controllers do: how long each
// reconcile takes and every write to the API server, by controller.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results of a write, for listener_operator_writes_total.
const (
	resultSuccess = "success"
	resultError   = "error"
)

// The collectors live for the process, like the registry they are on.
var (
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "listener_operator_reconcile_duration_seconds",
		Help:    "Time one reconcile takes, by controller.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"controller"})

	writesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "listener_operator_writes_total",
		Help: "Writes to the API server, by controller, kind of object, verb and result.",
	}, []string{"controller", "kind", "verb", "result"})
)

func init() {
	metrics.Registry.MustRegister(reconcileDuration, writesTotal)
}

// ObserveReconcile records how long a reconcile of controller took; call it
// deferred with the start time.
func ObserveReconcile(controller string, start time.Time) {
	reconcileDuration.WithLabelValues(controller).Observe(time.Since(start).Seconds())
}

// CountWrite records one write and passes its error through.
func CountWrite(controller, kind, verb string, err error) error {
	result := resultSuccess
	if err != nil {
		result = resultError
	}
	writesTotal.WithLabelValues(controller, kind, verb, result).Inc()
	return err
}
