package listener

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/podstate"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/conditions"
)

// observed is what a Listener's status is computed from.
type observed struct {
	class         *v1alpha1.ListenerClass
	svc           *corev1.Service
	nodes         []*corev1.Node // the nodes that serve a NodePort Listener
	clusterDomain string
}

// verdict is a Listener's Ready condition before it is stamped on the
// object. Every verdict names its reason (a v1alpha1.Reason…): the zero
// verdict, which names none, is none (none()), what a check returns when it
// found nothing to say; there is no nil verdict to dereference.
type verdict struct {
	ready   bool
	reason  string
	message string
	// unpublish: the user asked for no Service (no class), so the
	// addresses published last leave too (keepPublished does not apply).
	unpublish bool
}

// none reports whether v is the zero verdict: a check that found nothing.
func (v verdict) none() bool { return v.reason == "" }

// or is v, or other when v is none.
func (v verdict) or(other verdict) verdict {
	if v.none() {
		return other
	}
	return v
}

// serviceStatus computes the status a Listener with a Service publishes.
// problems are the entries of node address annotations that were skipped
// (addresses.NodeRule), for a NodeAddressInvalid event.
func serviceStatus(o observed) (st v1alpha1.ListenerStatus, v verdict, problems []string) {
	st = v1alpha1.ListenerStatus{ServiceName: o.svc.Name, ServiceType: o.class.Spec.ServiceType, ClassName: o.class.Name}
	pref := o.class.Spec.EffectiveAddressType()
	// Only NodePort Listeners publish node ports: the existing operator
	// does the same, and its readers take their presence as "node-scoped".
	if o.class.Spec.ServiceType == v1alpha1.ServiceTypeNodePort {
		if np := addresses.NodePorts(o.svc); len(np) > 0 {
			st.NodePorts = np
		}
	}
	if o.class.Spec.HasFamilies() {
		st.IPFamilies = o.svc.Spec.IPFamilies
	}
	switch o.class.Spec.ServiceType {
	case v1alpha1.ServiceTypeNodePort:
		st.IngressAddresses, problems = addresses.NodePortIngress(o.svc, o.nodes, addresses.NodeRuleOf(&o.class.Spec, st.IPFamilies))
		if len(st.IngressAddresses) == 0 {
			return st, verdict{reason: v1alpha1.ReasonNoNodes, message: fmt.Sprintf("no node with an address serves Service %s yet (no ready endpoints and no pinned volumes)", o.svc.Name)}, problems
		}
	case v1alpha1.ServiceTypeLoadBalancer:
		st.IngressAddresses = addresses.LoadBalancerIngress(o.svc, pref)
		if len(st.IngressAddresses) == 0 {
			return st, verdict{reason: v1alpha1.ReasonAwaitingLoadBalancer, message: fmt.Sprintf("Service %s has no load balancer ingress yet", o.svc.Name)}, problems
		}
	default:
		st.IngressAddresses = addresses.ClusterIPIngress(o.svc, pref, o.clusterDomain)
	}
	return st, verdict{ready: true, reason: v1alpha1.ReasonReady, message: fmt.Sprintf("Service %s publishes %d address(es)", o.svc.Name, len(st.IngressAddresses))}, problems
}

// podNodes are the nodes a NodePort Listener's pods run on: every pod bound
// to a node that has not finished, or, when the Listener does not publish
// addresses of pods that are not ready, only the ready pods that are not
// being deleted. These are the pods its Service's endpoints are made from
// (the EndpointSlice controller derives them from the same pods, which the
// Service selects by the label the Listener's volume gives them), read from
// the pods the operator holds anyway rather than from a copy of them. A pod
// counts from the moment it is bound to its node: the CSI driver writes that
// node's address into the pod's volume then, so the Listener publishes what
// its pods were told.
func podNodes(pods []corev1.Pod, publishNotReady bool) []string {
	seen := map[string]struct{}{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || podstate.Finished(p) {
			continue
		}
		if publishNotReady || (podstate.Ready(p) && p.DeletionTimestamp == nil) {
			seen[p.Spec.NodeName] = struct{}{}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// keepPublished is the status a Listener publishes with a verdict that is
// not Ready. Clients, PodListeners and pods' volumes rely on the addresses
// it published last, and the trouble (a missing class, a rejected Service,
// a gap between endpoints) is often transient or fixable, so each
// published field stays until a correct new value replaces it: the ingress
// addresses while the Service type is unchanged (or unknown, when no
// Service was looked at), node ports and the Service name while none were
// computed. A change of Service type is a real change of address and
// publishes what was computed.
func keepPublished(last, computed v1alpha1.ListenerStatus) v1alpha1.ListenerStatus {
	if computed.ServiceType != "" && computed.ServiceType != last.ServiceType {
		return computed
	}
	kept := computed
	kept.ServiceType = cmp.Or(computed.ServiceType, last.ServiceType)
	kept.ServiceName = cmp.Or(computed.ServiceName, last.ServiceName)
	kept.ClassName = cmp.Or(computed.ClassName, last.ClassName)
	if len(computed.IngressAddresses) == 0 {
		kept.IngressAddresses = last.IngressAddresses
	}
	if len(computed.NodePorts) == 0 {
		kept.NodePorts = last.NodePorts
	}
	return kept
}

// withCondition returns st with the Ready condition from v added to the
// Listener's conditions old, or to the conditions st carries when it
// carries any (the address features' own conditions set on a copy of old:
// withFeatureCondition); the transition time only moves when the status of
// the condition does.
func withCondition(st v1alpha1.ListenerStatus, old []metav1.Condition, generation int64, v verdict) v1alpha1.ListenerStatus {
	if st.Conditions != nil {
		old = st.Conditions
	}
	status := metav1.ConditionFalse
	if v.ready {
		status = metav1.ConditionTrue
	}
	st.Conditions = conditions.Set(old, metav1.Condition{
		Type:               v1alpha1.ConditionReady,
		Status:             status,
		Reason:             v.reason,
		Message:            v1alpha1.TruncateMessage(v.message),
		ObservedGeneration: generation,
	}, time.Now())
	return st
}

// statusEqual compares statuses the way a reader would: nil and empty are
// the same.
func statusEqual(a, b v1alpha1.ListenerStatus) bool {
	return equality.Semantic.DeepEqual(a, b)
}
