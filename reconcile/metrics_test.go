package reconcile

import (
	"testing"

	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestMetricsExposed checks that a Listener's life shows up in the metrics
// the manager serves: its reconciles and the writes they made.
func TestMetricsExposed(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "metered", class.Name, reconciletest.Port("http", 80)))
	reconciletest.WaitReason(t, ctx, c, ns, "metered", v1alpha1.ReasonReady)

	mfs, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	find := func(name string, labels map[string]string) *dto.Metric {
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
		next:
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
						continue next
					}
				}
				return m
			}
		}
		return nil
	}
	if m := find("listener_operator_reconcile_duration_seconds", map[string]string{"controller": "listener"}); m == nil || m.GetHistogram().GetSampleCount() == 0 {
		t.Errorf("no reconcile durations recorded for the listener controller: %v", m)
	}
	for _, w := range []map[string]string{
		{"controller": "listener", "kind": "Service", "verb": "create", "result": "success"},
		{"controller": "listener", "kind": "Listener", "verb": "update-status", "result": "success"},
	} {
		if m := find("listener_operator_writes_total", w); m == nil || m.GetCounter().GetValue() == 0 {
			t.Errorf("no writes counted for %v", w)
		}
	}
}
