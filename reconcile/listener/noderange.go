package listener

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/nodeports"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
)

// nodePortRange is the class's node port range when its Services get node
// ports (NodePort, or LoadBalancer with node ports allocated); nil otherwise.
func nodePortRange(class *v1alpha1.ListenerClass) *v1alpha1.NodePortRange {
	s := &class.Spec
	switch {
	case s.NodePortRange == nil:
		return nil
	case s.ServiceType == v1alpha1.ServiceTypeNodePort:
		return s.NodePortRange
	case s.ServiceType == v1alpha1.ServiceTypeLoadBalancer && (s.LoadBalancerAllocateNodePorts == nil || *s.LoadBalancerAllocateNodePorts):
		return s.NodePortRange
	}
	return nil
}

// rangeAsk is what a new Service of a Listener asks for in its class's node
// port range, read once per creation: the Listener's ports, its replica,
// and the ports that are not free (other Listeners of the class hold them,
// or the API server refused them: another Service has them).
type rangeAsk struct {
	class   string
	rng     v1alpha1.NodePortRange
	ports   []string
	replica int
	used    map[int32]bool
}

// rangeAskOf reads what l's new Service asks for in its class's range.
func (r *listenerReconciler) rangeAskOf(ctx context.Context, l *v1alpha1.Listener, class *v1alpha1.ListenerClass) (*rangeAsk, error) {
	var others v1alpha1.ListenerList
	if err := r.client.List(ctx, &others, client.MatchingFields{lookup.IndexListenerClass: class.Name}); err != nil {
		return nil, fmt.Errorf("list Listeners of class %s: %w", class.Name, err)
	}
	a := &rangeAsk{class: class.Name, rng: *class.Spec.NodePortRange, used: map[int32]bool{}}
	for i := range others.Items {
		o := &others.Items[i]
		if o.Namespace == l.Namespace && o.Name == l.Name {
			continue
		}
		for _, p := range o.Status.NodePorts {
			a.used[p] = true
		}
	}
	pods, err := r.podNamesOf(ctx, l)
	if err != nil {
		return nil, err
	}
	for _, p := range l.Spec.Ports {
		a.ports = append(a.ports, p.Name)
	}
	a.replica = nodeports.Replica(l, pods)
	return a, nil
}

// nodePorts are the node ports to ask for (nodeports.InRange): the
// replica's block, or the first free one. The error is a
// *nodeports.Exhausted when the range has no room.
func (a *rangeAsk) nodePorts() (map[string]int32, error) {
	return nodeports.InRange(a.class, a.rng, a.ports, a.replica, a.used)
}

// podNamesOf are the names of the pods that mount l's claims, sorted.
func (r *listenerReconciler) podNamesOf(ctx context.Context, l *v1alpha1.Listener) ([]string, error) {
	claims, err := lookup.ClaimsOfListener(ctx, r.client, l.Namespace, l.Name)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, c := range claims {
		pods, err := caches.PodsOfClaim(ctx, r.client, c.Namespace, c.Name)
		if err != nil {
			return nil, err
		}
		for i := range pods {
			names = append(names, pods[i].Name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// rangeCondition is NodePortsInRange for a Listener whose class has a node
// port range: False when its Service has node ports outside it (the Service
// existed before the class got the range: it never moves), nil for a class
// without one.
func rangeCondition(l *v1alpha1.Listener, class *v1alpha1.ListenerClass, svc *corev1.Service) *metav1.Condition {
	rng := nodePortRange(class)
	if rng == nil {
		return nil
	}
	cond := &metav1.Condition{Type: v1alpha1.ConditionNodePortsInRange, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonNodePortsInRange,
		ObservedGeneration: l.Generation, Message: fmt.Sprintf("every node port of Service %s is in range %s of ListenerClass %s", svc.Name, rng, class.Name)}
	var outside []string
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 && !rng.Contains(p.NodePort) {
			outside = append(outside, fmt.Sprintf("%s=%d", p.Name, p.NodePort))
		}
	}
	if len(outside) > 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonNodePortsOutsideRange
		cond.Message = fmt.Sprintf("Service %s has node ports %s outside range %s of ListenerClass %s: an existing Service keeps its ports; delete the Service to have it made anew inside the range (clients must then use the new ports)",
			svc.Name, strings.Join(outside, ", "), rng, class.Name)
	}
	return cond
}

// rangeRecheck is how soon a Listener whose class's range had no room
// looks again: a port freed by a Listener of the class, or by another
// Service, sends it no event.
const rangeRecheck = 30 * time.Second

// rangeExhausted is the outcome of a Service that could not be created
// because its class's node port range has no room: not Ready, nothing
// created, with the range, how full it is and the fix.
func rangeExhausted(err error) (outcome, bool) {
	var ex *nodeports.Exhausted
	if !errors.As(err, &ex) {
		return outcome{}, false
	}
	o := judged(verdict{reason: v1alpha1.ReasonNodePortRangeExhausted, message: ex.Error()})
	o.requeueAfter = rangeRecheck
	return o, true
}
