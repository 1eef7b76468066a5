package nodeloss

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The collectors live for the process, like the registry they are on.
var (
	// lostGauge is 1 for each listener claim pinned to a node that is gone
	// and not (yet) released, labelled with what resolves it.
	lostGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "listener_operator_pinned_node_lost",
		Help: "1 for each listener claim pinned to a node that is gone (deleted, or not Ready), by namespace, claim, node and remedy (see docs/nodeloss.md).",
	}, []string{"namespace", "claim", "node", "remedy"})

	// releasesTotal counts pins released, by what triggered the release.
	releasesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "listener_operator_pinned_claims_released_total",
		Help: "Listener claims released from a lost node, by trigger (NodeDeleted, NodeNotReady, Annotation).",
	}, []string{"trigger"})

	// podsRecreatedTotal counts Pending pods deleted because they required
	// a lost node after their claim was released.
	podsRecreatedTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "listener_operator_pinned_pods_recreated_total",
		Help: "Pending pods deleted (for their controller to recreate) because they still required a lost node after their listener claim was released.",
	})

	// handoversExpiredTotal counts handed-over Listeners deleted because
	// their claim did not come back.
	handoversExpiredTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "listener_operator_handovers_expired_total",
		Help: "Handed-over Listeners deleted because no claim of their name came back within the handover timeout.",
	})
)

func init() {
	metrics.Registry.MustRegister(lostGauge, releasesTotal, podsRecreatedTotal, handoversExpiredTotal)
}

// setLost records that claim is pinned to a lost node, replacing what was
// recorded for it before.
func setLost(namespace, claim, node, remedy string) {
	lostGauge.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "claim": claim})
	lostGauge.WithLabelValues(namespace, claim, node, remedy).Set(1)
}

// clearLost removes what was recorded for claim.
func clearLost(namespace, claim string) {
	lostGauge.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "claim": claim})
}
