package listener

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
)

// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=list;watch

// maxWarningNote bounds how much of a load balancer's event a condition
// quotes.
const maxWarningNote = 300

// explainedStatus is serviceStatus, with a LoadBalancer Service that has
// no address yet explained by the latest Warning event about it (the load
// balancer's own words), when there is one. Without it the Listener said
// only "no load balancer ingress yet", forever, and only the Service's
// events said the pool was full. A Warning that comes later wakes the
// Listener (warningListeners), so nothing is read periodically. Reading
// the events is best effort: the plain verdict stands when they cannot be
// read.
func (r *listenerReconciler) explainedStatus(ctx context.Context, o observed) (v1alpha1.ListenerStatus, verdict, []string) {
	st, v, problems := serviceStatus(o)
	if v.reason != v1alpha1.ReasonAwaitingLoadBalancer {
		return st, v, problems
	}
	warning, err := r.loadBalancerWarning(ctx, o.svc)
	if err != nil {
		log.FromContext(ctx).V(1).Info("cannot read the events of the Service", "service", o.svc.Name, "error", err.Error())
	}
	if warning != "" {
		v.message = fmt.Sprintf("Service %s has no load balancer ingress; its load balancer reports %s. Fix what it names (for a full address pool: free an address or add addresses to the pool the class picks); the Listener follows what the load balancer reports next",
			o.svc.Name, warning)
	}
	return st, v, problems
}

// loadBalancerWarning is "<reason>: <note>" of the latest Warning event
// about this Service (this UID: not an earlier Service of the same name),
// "" when there is none. It reads the cache, which holds the Warning
// events about Services (caches.ServiceWarnings), through their index by
// the Service's UID, in the Service's namespace only.
func (r *listenerReconciler) loadBalancerWarning(ctx context.Context, svc *corev1.Service) (string, error) {
	var evs eventsv1.EventList
	if err := r.client.List(ctx, &evs, client.InNamespace(svc.Namespace), client.MatchingFields{lookup.IndexEventRegarding: string(svc.UID)}); err != nil {
		return "", err
	}
	var latest *eventsv1.Event
	for i := range evs.Items {
		ev := &evs.Items[i]
		if ev.Type != corev1.EventTypeWarning || ev.Regarding.Kind != "Service" {
			continue
		}
		if latest == nil || eventTime(ev).After(eventTime(latest)) {
			latest = ev
		}
	}
	if latest == nil {
		return "", nil
	}
	note := latest.Note
	if len(note) > maxWarningNote {
		cut := maxWarningNote
		for cut > 0 && !utf8.RuneStart(note[cut]) {
			cut--
		}
		note = note[:cut] + "…"
	}
	return latest.Reason + ": " + note, nil
}

// eventTime is when an event was last seen, whichever API wrote it.
func eventTime(ev *eventsv1.Event) time.Time {
	switch {
	case ev.Series != nil:
		return ev.Series.LastObservedTime.Time
	case !ev.DeprecatedLastTimestamp.IsZero():
		return ev.DeprecatedLastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}

// warningListeners maps a Warning event about a Service to the Listener
// that controls that Service (this UID: a Warning about an earlier Service
// of the name wakes nobody), so that what a load balancer reports reaches
// the Listener's Ready condition when it is said.
func warningListeners(ctx context.Context, c client.Reader, o client.Object) []ctrl.Request {
	ev, ok := o.(*eventsv1.Event)
	if !ok || ev.Regarding.Kind != "Service" {
		return nil
	}
	svc := &corev1.Service{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ev.Regarding.Namespace, Name: ev.Regarding.Name}, svc); err != nil || svc.UID != ev.Regarding.UID {
		return nil // not the operator's (not cached), gone, or an earlier one
	}
	if owner := lookup.ControlledByListener(svc); owner != "" {
		return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: svc.Namespace, Name: owner}}}
	}
	return nil
}
