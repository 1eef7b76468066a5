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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/lbsharing"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/service"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
)

// sharing is what the Service of a Listener of a sharing class
// (spec.loadBalancerSharing) shares: its workload's key and the other
// Services of the key, as the cache had them.
type sharing struct {
	key      string
	siblings []corev1.Service
	// held is the outcome the reconcile ends with once the Service took
	// what of the class needs no port (holdShared): not Ready, the range
	// has no room. The zero outcome when the range gave l its ports.
	held outcome
}

// shareLoadBalancer makes want, l's Service, the Service of its workload's
// sharing key (api/lbsharing): the key on both annotations, the Service
// ports the range gives l, externalTrafficPolicy Cluster; set after every
// override, so no tenant input changes them. For a class without sharing
// it does nothing (nil). A Listener whose key is not known yet (no pod of
// a StatefulSet mounts it), mounted by pods of several workloads, or
// whose ports the range has no room for, or a port of which another
// Service of the key holds, is not Ready with a verdict that says so and
// what to do, and no other Listener's port moves: without a Service it
// ends the reconcile; its Service, if it has one, keeps its ports and
// follows the class otherwise (holdShared), then the reconcile ends with
// sharing.held. current is l's Service now (nil: none).
func (r *listenerReconciler) shareLoadBalancer(ctx context.Context, l *v1alpha1.Listener, class *v1alpha1.ListenerClass, want *unstructured.Unstructured, current *corev1.Service) (*sharing, outcome, error) {
	rng := class.Spec.LoadBalancerSharing
	if rng == nil || class.Spec.ServiceType != v1alpha1.ServiceTypeLoadBalancer {
		return nil, outcome{}, nil
	}
	w, err := r.workloadOf(ctx, l, current)
	if err != nil || w.StatefulSet == "" {
		if v, ok := asVerdict(err); ok {
			return nil, judged(v), nil
		}
		return nil, outcome{}, err
	}
	key := w.Key()
	// One Listener of a key picks ports at a time, seeing the ports given
	// a moment ago that the cache does not show yet (rangewrites.go).
	lockName := "sharing/" + key // class names have no "/": no class's lock
	cw := r.ranges.lock(lockName)
	defer cw.mu.Unlock()
	siblings, err := r.servicesOfKey(ctx, l.Namespace, key, names.ServiceName(l.Name))
	if err != nil {
		return nil, outcome{}, err
	}
	ask := lbsharing.Ask{Class: class.Name, Range: *rng, Ports: portNames(l), Replica: w.Replica,
		Held: map[int32]string{}, Own: lbsharing.OwnPorts(current, key)}
	for i := range siblings {
		for _, p := range siblings[i].Spec.Ports {
			ask.Held[p.Port] = siblings[i].Name
		}
	}
	self, now := client.ObjectKeyFromObject(l), time.Now()
	cw.holdGiven(ask.Held, self, now, func(l types.NamespacedName) string { return names.ServiceName(l.Name) })
	ports, err := ask.Assign()
	if err != nil {
		return holdShared(l, want, current, err)
	}
	for _, p := range ports {
		cw.given[p] = givenPort{listener: self, at: now}
	}
	if err := lbsharing.Apply(want, key, ports, keyAddress(siblings, current)); err != nil {
		return nil, outcome{}, err
	}
	return &sharing{key: key, siblings: siblings}, outcome{}, service.StampHash(want)
}

// keyAddress is the address of the key of siblings and current (nil:
// none), for current's Service to ask for (lbsharing.KeyAddress).
func keyAddress(siblings []corev1.Service, current *corev1.Service) []string {
	if current == nil {
		return lbsharing.KeyAddress(siblings)
	}
	return lbsharing.KeyAddress(append(slices.Clip(siblings), *current))
}

// sharingVerdict is a Listener's verdict that ends shareLoadBalancer.
type sharingVerdict struct{ v verdict }

func (e *sharingVerdict) Error() string { return e.v.message }

func asVerdict(err error) (verdict, bool) {
	var sv *sharingVerdict
	if errors.As(err, &sv) {
		return sv.v, true
	}
	return verdict{}, false
}

// workloadOf is l's workload (lbsharing.WorkloadOf, from the pods of its
// claims). While no pod of a StatefulSet mounts it (scaled to zero), a
// Service that carries a key of l's namespace keeps it, and its ports. The
// error is a *sharingVerdict when l has no workload to share with.
func (r *listenerReconciler) workloadOf(ctx context.Context, l *v1alpha1.Listener, current *corev1.Service) (lbsharing.Workload, error) {
	pods, err := r.podsOf(ctx, l)
	if err != nil {
		return lbsharing.Workload{}, err
	}
	w, ok, err := lbsharing.WorkloadOf(l, pods)
	if err != nil {
		return w, &sharingVerdict{verdict{reason: v1alpha1.ReasonInvalid, message: err.Error()}}
	}
	if ok {
		return w, nil
	}
	own := false
	if current != nil {
		// A predecessor's Service (isOwn) keeps its key too: the
		// Listener takes it over once it has a workload to apply.
		if own, err = r.isOwn(ctx, current, l); err != nil {
			return w, err
		}
	}
	if own {
		if key := current.Annotations[v1alpha1.AnnotationMetalLBSharedIP]; lbsharing.KeyOfNamespace(key, l.Namespace) {
			w.StatefulSet = key[len(l.Namespace)+1:]
			return w, nil
		}
	}
	return w, &sharingVerdict{verdict{reason: v1alpha1.ReasonAwaitingWorkload, message: fmt.Sprintf(
		"ListenerClass %s shares one load-balancer IP per workload (spec.loadBalancerSharing), and no pod of a StatefulSet mounts this Listener yet, so its workload is not known; its Service is made once one does (mount it from a StatefulSet's pods, or use a class without spec.loadBalancerSharing)",
		*l.Spec.ClassName)}}
}

// podsOf are the pods that mount l's claims.
func (r *listenerReconciler) podsOf(ctx context.Context, l *v1alpha1.Listener) ([]corev1.Pod, error) {
	claims, err := lookup.ClaimsOfListener(ctx, r.client, l.Namespace, l.Name)
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, c := range claims {
		pods, err := caches.PodsOfClaim(ctx, r.client, c.Namespace, c.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, pods...)
	}
	return out, nil
}

// servicesOfKey are the Services of namespace ns (the operator's, as the
// cache holds them) that carry sharing key key, but the one named self,
// through the cache's index by key (BenchmarkServicesOfKey, 1,000
// Services in the namespace, 3 of the key: 41 µs and 15 KB a reconcile;
// listing the namespace's Services cost 8.9 ms and 1.8 MB).
func (r *listenerReconciler) servicesOfKey(ctx context.Context, ns, key, self string) ([]corev1.Service, error) {
	var list corev1.ServiceList
	if err := r.client.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{lookup.IndexServiceSharingKey: key}); err != nil {
		return nil, fmt.Errorf("list services of sharing key %s in namespace %s: %w", key, ns, err)
	}
	var out []corev1.Service
	for _, s := range list.Items {
		if s.Name != self && s.Annotations[v1alpha1.AnnotationMetalLBSharedIP] == key {
			out = append(out, s)
		}
	}
	return out, nil
}

func portNames(l *v1alpha1.Listener) []string {
	out := make([]string, 0, len(l.Spec.Ports))
	for _, p := range l.Spec.Ports {
		out = append(out, p.Name)
	}
	return out
}

// holdShared is what shareLoadBalancer decides for l when the range has
// no ports for it (short, an lbsharing.Exhausted or Taken). Without a
// Service (current nil), or with one that has none of want's ports, the
// reconcile ends with the verdict and the Service stays as it is.
// Otherwise want becomes what of it needs no new port (lbsharing.Held:
// the class's metadata and fields, the ports and key as they are), so
// that exposure the class no longer gives goes, and the reconcile writes
// it before it ends with the verdict (sharing.held).
func holdShared(l *v1alpha1.Listener, want *unstructured.Unstructured, current *corev1.Service, short error) (*sharing, outcome, error) {
	if current == nil {
		return nil, sharedPortsShort(short, ""), nil
	}
	held, missing, err := lbsharing.Held(want, current, l.Namespace)
	if err != nil {
		return nil, outcome{}, err
	}
	if held == nil {
		return nil, sharedPortsShort(short, fmt.Sprintf("until then Service %s stays as it is", current.Name)), nil
	}
	if err := service.StampHash(held); err != nil {
		return nil, outcome{}, err
	}
	want.Object = held.Object
	until := fmt.Sprintf("until then Service %s keeps its ports", current.Name)
	if len(missing) > 0 {
		until += ", without " + strings.Join(missing, ", ")
	}
	return &sharing{held: sharedPortsShort(short, until)}, outcome{}, nil
}

// sharedPortsShort is the outcome of a Listener the range has no ports
// for (lbsharing.Exhausted, lbsharing.Taken): not Ready, saying what its
// Service does meanwhile (until, "" when it has none), looked at again
// later (a port freed sends it no event).
func sharedPortsShort(err error, until string) outcome {
	reason := v1alpha1.ReasonSharedPortsExhausted
	var taken *lbsharing.Taken
	if errors.As(err, &taken) {
		reason = v1alpha1.ReasonSharedPortTaken
	}
	msg := err.Error()
	if until != "" {
		msg += "; " + until
	}
	o := judged(verdict{reason: reason, message: msg})
	o.requeueAfter = rangeRecheck
	return o
}

// sharingCondition is LoadBalancerShared for a Listener of a sharing class
// (sh nil: none): whether its Service svc got the IP of its key's other
// Services (lbsharing.Shared).
func sharingCondition(l *v1alpha1.Listener, sh *sharing, svc *corev1.Service) *metav1.Condition {
	if sh == nil {
		return nil
	}
	v := lbsharing.Shared(svc, sh.key, sh.siblings)
	status := metav1.ConditionFalse
	if v.Shared {
		status = metav1.ConditionTrue
	}
	return &metav1.Condition{Type: v1alpha1.ConditionLoadBalancerShared, Status: status, Reason: v.Reason, Message: v.Message, ObservedGeneration: l.Generation}
}
