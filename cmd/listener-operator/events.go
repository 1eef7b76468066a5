package main

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	eventsclient "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/listener-operator/listener-operator/internal/recorder"
)

// eventsDropped counts the events the controller dropped because its
// queue to the API server was full (internal/recorder).
var eventsDropped = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "listener_operator_events_dropped_total",
	Help: "Events not sent because the queue to the API server was full.",
})

func init() {
	metrics.Registry.MustRegister(eventsDropped)
}

// boundedEventsManager is a manager whose event recorders are
// internal/recorder's, so that the events of a burst of Listeners are not
// all held for minutes after they were sent (controller-runtime's
// recorder keeps each for six to twelve).
type boundedEventsManager struct {
	manager.Manager
	b *recorder.Broadcaster
}

// GetEventRecorder returns a recorder that reports as name.
func (m boundedEventsManager) GetEventRecorder(name string) events.EventRecorder {
	return m.b.Recorder(name)
}

// withBoundedEvents returns mgr with internal/recorder's recorders; the
// sender runs with mgr, on every replica.
func withBoundedEvents(mgr manager.Manager) (manager.Manager, error) {
	c, err := eventsclient.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("events client: %w", err)
	}
	b := recorder.New(c, mgr.GetScheme(), ctrl.Log.WithName("events"), eventsDropped)
	if err := mgr.Add(b); err != nil {
		return nil, fmt.Errorf("add the event sender: %w", err)
	}
	return boundedEventsManager{Manager: mgr, b: b}, nil
}
