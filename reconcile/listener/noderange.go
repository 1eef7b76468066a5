package listener

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/nodeports"
	"github.com/listener-operator/listener-operator/api/service"
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
	case s.ServiceType == v1alpha1.ServiceTypeLoadBalancer && !mutantRangeIgnoresLoadBalancer && (s.LoadBalancerAllocateNodePorts == nil || *s.LoadBalancerAllocateNodePorts):
		return s.NodePortRange
	}
	return nil
}

// rangeAskOf reads what l's Service, as want says it, asks of its class's
// range (api/nodeports), from the cache: the node ports held (rangeHolders,
// and the ones the class's other Listeners recorded in status.nodePorts,
// which only NodePort Listeners publish, each held by its namespace) and
// l's replica. own is l's Service when it exists: the ports added to it
// ask, taking the last free block; the ports it keeps count for l's
// namespace, and the ones want drops are held for no namespace (the API
// server frees them with the write). For a Service made anew (own nil)
// every port asks, and l's old ones are not held.
func (r *listenerReconciler) rangeAskOf(ctx context.Context, l *v1alpha1.Listener, class *v1alpha1.ListenerClass, own *corev1.Service, want *unstructured.Unstructured) (*nodeports.Ask, error) {
	var others v1alpha1.ListenerList
	if err := r.client.List(ctx, &others, client.MatchingFields{lookup.IndexListenerClass: class.Name}); err != nil {
		return nil, fmt.Errorf("list Listeners of class %s: %w", class.Name, err)
	}
	held, err := rangeHolders(ctx, r.client, *class.Spec.NodePortRange, types.NamespacedName{Namespace: l.Namespace, Name: names.ServiceName(l.Name)})
	if err != nil {
		return nil, err
	}
	a := &nodeports.Ask{Class: class.Name, Range: *class.Spec.NodePortRange, Namespace: l.Namespace, Ports: service.WithoutNodePort(want, own), Replica: -1, Held: held}
	for i := range others.Items {
		o := &others.Items[i]
		if o.Namespace == l.Namespace && o.Name == l.Name {
			continue
		}
		for _, p := range o.Status.NodePorts {
			if _, ok := a.Held[p]; !ok {
				a.Held[p] = o.Namespace
			}
		}
	}
	if own != nil {
		keeps := service.WithoutNodePort(want, nil) // every port of want
		for _, p := range own.Spec.Ports {
			if p.NodePort != 0 && slices.Contains(keeps, p.Name) {
				a.Held[p.NodePort] = l.Namespace
			} else if p.NodePort != 0 {
				a.Held[p.NodePort] = ""
			}
		}
		return a, nil
	}
	pods, err := r.podNamesOf(ctx, l)
	if err != nil {
		return nil, err
	}
	a.Replica = claims.Replica(l, pods)
	return a, nil
}

// rangeHolders are the node ports of rng that the Listeners' Services
// hold, each by its Service's namespace, through the cache's index of
// them by block of node ports (lookup.IndexServiceNodePortBlock): every
// class's, as a Listener moved to another class keeps its node ports, and
// the API server refuses them to anyone else. own (the asking Listener's
// Service) is left out: its ports are its own to keep or drop
// (rangeAskOf).
func rangeHolders(ctx context.Context, c client.Reader, rng v1alpha1.NodePortRange, own types.NamespacedName) (map[int32]string, error) {
	held := map[int32]string{}
	for b := int(rng.From) / lookup.NodePortBlock; b <= int(rng.To)/lookup.NodePortBlock; b++ {
		var svcs corev1.ServiceList
		if err := c.List(ctx, &svcs, client.MatchingFields{lookup.IndexServiceNodePortBlock: strconv.Itoa(b)}); err != nil {
			return nil, fmt.Errorf("list Services holding node ports of range %s: %w", rng, err)
		}
		for i := range svcs.Items {
			s := &svcs.Items[i]
			if s.Namespace == own.Namespace && s.Name == own.Name {
				continue
			}
			for _, p := range s.Spec.Ports {
				if p.NodePort != 0 && rng.Contains(p.NodePort) {
					held[p.NodePort] = s.Namespace
				}
			}
		}
	}
	return held, nil
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

// rangeShort is the outcome of a Listener whose Service could not be
// written because its class's node port range has no room for it, or its
// namespace's share of the range none: not Ready (a Service made anew is
// not made, an existing one takes only what needs no new node port:
// writeHeld), with the range, how full it is and the fix.
func rangeShort(err error) (outcome, bool) {
	var ex *nodeports.Exhausted
	var sh *nodeports.ShareExceeded
	reason := v1alpha1.ReasonNodePortRangeExhausted
	switch {
	case errors.As(err, &sh):
		reason = v1alpha1.ReasonNodePortShareExceeded
	case !errors.As(err, &ex):
		return outcome{}, false
	}
	o := judged(verdict{reason: reason, message: err.Error()})
	o.requeueAfter = rangeRecheck
	return o, true
}

// writeInRange writes l's Service for a class whose Services take node
// ports from a range (nodePortRange): creates it (current nil) or applies
// want to current, asking in the range for the node port of each port
// that has none yet (every port of a Service made anew; the ports added to
// an existing one, whose other ports keep theirs). What is held is read
// from the cache again each round: a port the API server refuses because
// a Listener of the class took it a moment ago is then seen held, and the
// Listener is not told its ports were taken. A port still refused after
// nodePortRetries rounds is another Service's: it is given up for the
// next free one, with NodePortsTaken (noteNodePorts). One Listener of a
// class writes at a time, seeing the ports given a moment ago that the
// cache does not show yet (rangeWrites). The error is a
// *nodeports.Exhausted or *nodeports.ShareExceeded (rangeShort) when the
// range, or the namespace's share of it, has no room.
func (r *listenerReconciler) writeInRange(ctx context.Context, l *v1alpha1.Listener, class *v1alpha1.ListenerClass, want *unstructured.Unstructured, current *corev1.Service) (*corev1.Service, error) {
	need := service.WithoutNodePort(want, current)
	if len(need) == 0 {
		return r.writeService(ctx, l, want, current)
	}
	cw := r.ranges.lock(class.Name) // rangewrites.go
	defer cw.mu.Unlock()
	key := client.ObjectKeyFromObject(l)
	refused := map[int32]bool{}
	var taken []string
	for round := 0; ; round++ {
		ask, err := r.rangeAskOf(ctx, l, class, current, want)
		if err != nil {
			return nil, err
		}
		cw.holdGiven(ask.Held, key, time.Now(), heldByNamespace)
		for p := range refused {
			if _, ok := ask.Held[p]; !ok {
				ask.Held[p] = ""
			}
		}
		ports, err := ask.NodePorts()
		if err != nil && current != nil {
			return nil, r.writeHeld(ctx, l, want, current, need, &ask.Range, err)
		} else if err != nil {
			return nil, err
		}
		req, _ := service.RequestNodePorts(want, ports)
		svc, err := r.writeService(ctx, l, req, current)
		idx := refusedNodePorts(err)
		refusedNames := service.RequestedAt(req, idx)
		if err == nil || len(refusedNames) == 0 {
			if err == nil {
				cw.gave(svc, key, time.Now())
			}
			if err == nil && len(taken) > 0 {
				r.noteNodePorts(l, svc, taken, &ask.Range)
			}
			return svc, err
		}
		if round < nodePortRetries {
			if err := pause(ctx); err != nil { // nodeports.go
				return nil, err
			}
			continue
		}
		for _, name := range refusedNames {
			refused[ports[name]] = true
			taken = append(taken, fmt.Sprintf("%s=%d", name, ports[name]))
		}
	}
}

// writeHeld writes to current, while the range is short (short, the
// error of rangeAskOf's NodePorts), what of want needs no new node port
// (service.WithinHeld): the ports the Listener dropped go and the class's
// metadata follows, and only the ports in need are kept back. It writes
// nothing when current is that already (its own hash), so that a
// recheck of a full range is no write. The error says what is kept back.
func (r *listenerReconciler) writeHeld(ctx context.Context, l *v1alpha1.Listener, want *unstructured.Unstructured, current *corev1.Service, need []string, rng *v1alpha1.NodePortRange, short error) error {
	held := service.WithinHeld(want, current, need)
	if held == nil {
		return fmt.Errorf("%w; until then Service %s stays as it is, without %s", short, current.Name, strings.Join(need, ", "))
	}
	if err := service.StampHash(held); err != nil {
		return err
	}
	if upToDate, err := serviceUpToDate(current, held); err != nil {
		return err
	} else if !upToDate {
		if _, err := r.writeService(ctx, l, held, current); err != nil {
			return err
		}
	}
	if current.Spec.Type == corev1.ServiceTypeClusterIP {
		return fmt.Errorf("%w; until then Service %s stays of type ClusterIP", short, current.Name)
	}
	return fmt.Errorf("%w; until then Service %s is without %s%s", short, current.Name, strings.Join(need, ", "), keptOutside(current, service.WithoutNodePort(held, nil), rng))
}

// keptOutside names the node ports outside rng of current's ports named in
// kept, the ports the held Service keeps (a Service moved from a class
// without the range keeps its node ports), as the end of writeHeld's
// message; "" when there are none.
func keptOutside(current *corev1.Service, kept []string, rng *v1alpha1.NodePortRange) string {
	var outside []string
	for _, p := range current.Spec.Ports {
		if p.NodePort != 0 && !rng.Contains(p.NodePort) && slices.Contains(kept, p.Name) {
			outside = append(outside, fmt.Sprintf("%s=%d", p.Name, p.NodePort))
		}
	}
	if len(outside) == 0 {
		return ""
	}
	return fmt.Sprintf(", and keeps node ports %s outside range %s", strings.Join(outside, ", "), rng)
}

// writeService creates want (current nil) or applies it to current.
func (r *listenerReconciler) writeService(ctx context.Context, l *v1alpha1.Listener, want *unstructured.Unstructured, current *corev1.Service) (*corev1.Service, error) {
	if current == nil {
		return r.createService(ctx, l, want)
	}
	return r.applyService(ctx, l, want, current)
}
