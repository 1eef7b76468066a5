package main

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	eventsclient "k8s.io/client-go/kubernetes/typed/events/v1"
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

// boundedEvents starts internal/recorder's broadcaster with mgr (its
// sender runs on every replica) and returns it: the recorders of the
// reconcilers and of the certificate bootstrap come from it, so that the
// events of a burst of Listeners are not all held for minutes after they
// were sent (controller-runtime's recorder keeps each for six to twelve).
// It is handed to them explicitly; mgr's own GetEventRecorder is not
// used.
func boundedEvents(mgr manager.Manager) (*recorder.Broadcaster, error) {
	c, err := eventsclient.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("events client: %w", err)
	}
	b := recorder.New(c, mgr.GetScheme(), ctrl.Log.WithName("events"), eventsDropped)
	if err := mgr.Add(b); err != nil {
		return nil, fmt.Errorf("add the event sender: %w", err)
	}
	return b, nil
}
