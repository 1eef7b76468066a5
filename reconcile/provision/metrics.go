package provision

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results of a provisioning attempt, the label of provisionedTotal.
const (
	resultCreated = "created"
	// resultExists: the volume was there already (csi-provisioner, or an
	// earlier attempt whose answer was lost, made it).
	resultExists = "exists"
	resultError  = "error"
)

// provisionedTotal counts volumes this controller created, found made, or
// failed to create. The collector lives for the process, like the
// registry it is on.
var provisionedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "listener_operator_volumes_provisioned_total",
	Help: "Listener volumes the operator provisioned, by result (created; exists: made already, by csi-provisioner or an earlier attempt; error).",
}, []string{"result"})

func init() {
	metrics.Registry.MustRegister(provisionedTotal)
}
