package robustness

import (
	"fmt"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// operatorIdle says whether the operator's controllers, in this process,
// have nothing queued and nothing in hand: every workqueue_depth and
// controller_runtime_active_workers is 0. A quiet second at the audit log
// alone is not settled on a loaded machine: a change the operator had not
// picked up yet (a class revised) was written after it, and the history
// failed QuietAfterSettling with nothing wrong. This only decides when to
// judge; the writes themselves are still counted at the API server.
func operatorIdle() (bool, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return false, fmt.Errorf("read the controllers' queues: %w", err)
	}
	for _, f := range families {
		if f.GetName() != "workqueue_depth" && f.GetName() != "controller_runtime_active_workers" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetGauge().GetValue() > 0 {
				return false, nil
			}
		}
	}
	return true, nil
}
