package robustness

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Snapshot is what the API server holds of one world once the operator
// settled: what the invariants judge.
type Snapshot struct {
	World World
	// Classes are the world's ListenerClasses by name.
	Classes map[string]*v1alpha1.ListenerClass
	// Listeners, Services and Events are those of the tenants' namespaces
	// (index of World.Tenants).
	Listeners [2][]v1alpha1.Listener
	Services  [2][]corev1.Service
	Events    [2][]eventsv1.Event
	// Pods, Claims, PodListeners and StatefulSets are those of the
	// tenants' namespaces too; Volumes the claims' bound volumes by name,
	// Nodes the world's nodes by name (podstold.go).
	Pods         [2][]corev1.Pod
	Claims       [2][]corev1.PersistentVolumeClaim
	PodListeners [2][]v1alpha1.PodListeners
	StatefulSets [2][]appsv1.StatefulSet
	Volumes      map[string]*corev1.PersistentVolume
	Nodes        map[string]*corev1.Node
	// Told is what each Running pod's listener volume tells it, by
	// toldKey (Kubelet.Observe).
	Told map[string]Told
	// Routes are the TLSRoutes the operator made in the tenants'
	// namespaces, Gateways the world's by name (with Traefik only).
	Routes   [2][]gwv1.TLSRoute
	Gateways map[string]*gwv1.Gateway
	// TCPRoutes are the TCPRoutes the operator made there (tcp.go).
	TCPRoutes [2][]gwv1.TCPRoute
}

// Take reads the world's objects as the administrator (c).
func Take(ctx context.Context, c client.Reader, w World) (*Snapshot, error) {
	s := &Snapshot{World: w, Classes: map[string]*v1alpha1.ListenerClass{}}
	var classes v1alpha1.ListenerClassList
	if err := c.List(ctx, &classes); err != nil {
		return nil, fmt.Errorf("list ListenerClasses: %w", err)
	}
	for i := range classes.Items {
		if strings.HasPrefix(classes.Items[i].Name, w.Prefix+"-") {
			s.Classes[classes.Items[i].Name] = &classes.Items[i]
		}
	}
	for t, ns := range w.Tenants {
		var ls v1alpha1.ListenerList
		var svcs corev1.ServiceList
		var evs eventsv1.EventList
		for _, l := range []client.ObjectList{&ls, &svcs, &evs} {
			if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
				return nil, fmt.Errorf("list %T in %s: %w", l, ns, err)
			}
		}
		s.Listeners[t], s.Services[t], s.Events[t] = ls.Items, svcs.Items, evs.Items
	}
	if err := s.takeGateways(ctx, c); err != nil {
		return nil, err
	}
	return s, s.takeWorkloads(ctx, c)
}

// listener is tenant t's Listener name, or nil.
func (s *Snapshot) listener(t int, name string) *v1alpha1.Listener {
	for i := range s.Listeners[t] {
		if s.Listeners[t][i].Name == name {
			return &s.Listeners[t][i]
		}
	}
	return nil
}

// service is tenant t's Service name, or nil.
func (s *Snapshot) service(t int, name string) *corev1.Service {
	for i := range s.Services[t] {
		if s.Services[t][i].Name == name {
			return &s.Services[t][i]
		}
	}
	return nil
}

// owner is the Listener that controls svc (of tenant t), or nil.
func (s *Snapshot) owner(t int, svc *corev1.Service) *v1alpha1.Listener {
	return s.controller(t, svc.OwnerReferences)
}

// controller is the Listener of tenant t that refs name as controller, or
// nil.
func (s *Snapshot) controller(t int, refs []metav1.OwnerReference) *v1alpha1.Listener {
	for _, ref := range refs {
		if ref.Kind == "Listener" && ref.Controller != nil && *ref.Controller {
			if l := s.listener(t, ref.Name); l != nil && l.UID == ref.UID {
				return l
			}
		}
	}
	return nil
}

// classOf is the class Listener l names, or nil when it does not exist.
func (s *Snapshot) classOf(l *v1alpha1.Listener) *v1alpha1.ListenerClass {
	if l.Spec.ClassName == nil {
		return nil
	}
	return s.Classes[*l.Spec.ClassName]
}
