package robustness

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/listener-operator/listener-operator/api/lbsharing"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// sharing is class slot 0 as a sharing class of range 9000-9003; narrow
// of 9000-9000.
var (
	sharing = Op{Kind: PutShareClass, Type: v1alpha1.ServiceTypeLoadBalancer, Share: 4}
	narrow  = Op{Kind: PutShareClass, Type: v1alpha1.ServiceTypeLoadBalancer, Share: 1}
)

// replicaOne makes each tenant's "web" replica 1 of StatefulSet kafka, as
// the operator leaves it on a sharing class: Service port 9001 forwarding
// to 80, the key on both annotations, waiting for the load balancer.
func replicaOne(s *Snapshot) {
	for t, ns := range s.World.Tenants {
		l, svc := &s.Listeners[t][0], &s.Services[t][0]
		l.Annotations = map[string]string{v1alpha1.AnnotationStatefulSetPod: "kafka-1"}
		l.Status.Conditions[0] = metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonAwaitingLoadBalancer, Message: "no ingress yet"}
		svc.Annotations[v1alpha1.AnnotationMetalLBSharedIP] = ns + "/kafka"
		svc.Annotations[v1alpha1.AnnotationCiliumSharingKey] = ns + "/kafka"
		svc.Spec.Ports = []corev1.ServicePort{{Name: "p0", Port: 9001, TargetPort: intstr.FromInt32(80)}}
	}
}

// withReplicaOne is change after replicaOne.
func withReplicaOne(change func(s *Snapshot)) func(s *Snapshot) {
	return func(s *Snapshot) { replicaOne(s); change(s) }
}

// sharingBreaches are TestInvariantsFindBreaches's rows of shared load
// balancers.
func sharingBreaches() []breachRow {
	key := func(s *Snapshot, t int, v string) {
		s.Services[t][0].Annotations[v1alpha1.AnnotationMetalLBSharedIP] = v
		s.Services[t][0].Annotations[v1alpha1.AnnotationCiliumSharingKey] = v
	}
	rows := []breachRow{
		{name: "sharing: another namespace's key", inv: SharingKeysStayInTheirNamespace, class: &sharing,
			change: withReplicaOne(func(s *Snapshot) { key(s, 1, s.World.Tenants[0]+"/kafka") }), want: "not of its namespace"},
		{name: "sharing: across namespaces", inv: SharingKeysStayInTheirNamespace, class: &sharing,
			change: withReplicaOne(func(s *Snapshot) { s.Services[0][0].Annotations["lbipam.cilium.io/sharing-cross-namespace"] = "*" }), want: "never sets"},
		{name: "sharing: a tenant's key lands", inv: ServicesFollowTheirClass, class: &sharing,
			change: withReplicaOne(func(s *Snapshot) { key(s, 0, s.World.Tenants[0]+"/other") }), want: "not its workload's"},
		{name: "sharing: one key on one annotation", inv: ServicesFollowTheirClass, class: &sharing,
			change: withReplicaOne(func(s *Snapshot) { delete(s.Services[0][0].Annotations, v1alpha1.AnnotationCiliumSharingKey) }), want: "on both"},
		{name: "sharing: a key on a plain class's Service", inv: ServicesFollowTheirClass,
			change: func(s *Snapshot) {
				for t := range s.Services {
					s.Services[t][0].Annotations[networkKey] = "internal"
				}
				s.Services[0][0].Annotations[v1alpha1.AnnotationMetalLBSharedIP] = s.World.Tenants[0] + "/kafka"
			}, want: "exposure annotation metallb.io/allow-shared-ip"},
		{name: "sharing: an address no Service of the key has", inv: ServicesFollowTheirClass, class: &sharing,
			change: withReplicaOne(func(s *Snapshot) {
				s.Services[0][0].Annotations[lbsharing.AnnotationMetalLBIPs] = "203.0.113.99"
				s.Services[0][0].Annotations[lbsharing.AnnotationCiliumIPs] = "203.0.113.99"
			}), want: "which no Service of its key"},
		{name: "sharing: traffic policy Local", inv: ServicesFollowTheirClass, class: &sharing,
			change: withReplicaOne(func(s *Snapshot) {
				s.Services[0][0].Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			}), want: "externalTrafficPolicy Local"},
		{name: "sharing: a port outside the range", inv: ServicesFollowTheirClass, class: &sharing,
			change: withReplicaOne(func(s *Snapshot) { s.Services[0][0].Spec.Ports[0].Port = 9100 }), want: "outside the class's sharing range"},
		{name: "sharing: forwarding to another port", inv: ServicesFollowTheirClass, class: &sharing,
			change: withReplicaOne(func(s *Snapshot) { s.Services[0][0].Spec.Ports[0].TargetPort = intstr.FromInt32(81) }), want: "has ports"},
		{name: "sharing: a held-back Listener's Service stays as it was", inv: ServicesFollowTheirClass, class: &narrow,
			change: withReplicaOne(func(s *Snapshot) {
				s.Listeners[0][0].Status.Conditions[0].Reason = v1alpha1.ReasonSharedPortsExhausted
				s.Services[0][0].Spec.Ports = []corev1.ServicePort{{Name: "p0", Port: 9001, TargetPort: intstr.FromInt32(80)}, {Name: "p1", Port: 9002, TargetPort: intstr.FromInt32(443)}}
				s.Listeners[1][0].Status.Conditions[0].Reason = v1alpha1.ReasonSharedPortsExhausted
			})},
		{name: "sharing: two Services of one key, one port", inv: SharedPortsApart, class: &sharing,
			change: withReplicaOne(func(s *Snapshot) {
				l, svc := s.Listeners[0][0].DeepCopy(), s.Services[0][0].DeepCopy()
				l.Name, l.UID, svc.Name, svc.UID = "web2", "web2", "web2", "web2-svc"
				svc.OwnerReferences[0].Name, svc.OwnerReferences[0].UID = "web2", "web2"
				s.Listeners[0], s.Services[0] = append(s.Listeners[0], *l), append(s.Services[0], *svc)
			}), want: "both have port 9001"},
		{name: "sharing: a new replica's Service off its formula", inv: ReplicasOnTheirPorts, class: &sharing,
			change: withReplicaOne(func(s *Snapshot) { s.Services[0][0].UID = "new"; s.Services[0][0].Spec.Ports[0].Port = 9002 }), want: "gives it 9001"},
		{name: "sharing: a port moved off the formula", inv: ReplicasOnTheirPorts, class: &sharing,
			change: withReplicaOne(func(s *Snapshot) { s.Services[0][0].Spec.Ports[0].Port = 9002 }), want: "gives it 9001"},
		{name: "sharing: a Listener that lost a port keeps the other", inv: ReplicasOnTheirPorts, class: &sharing,
			prev: withReplicaOne(func(s *Snapshot) {
				s.Services[0][0].Spec.Ports = []corev1.ServicePort{{Name: "p0", Port: 9002}, {Name: "p1", Port: 9003}} // replica 1 of 2 ports
			}),
			change: withReplicaOne(func(s *Snapshot) { s.Services[0][0].Spec.Ports[0].Port = 9002 })},
		{name: "sharing: exhausted, not said", inv: SharedPortsShortSaid, class: &narrow, change: replicaOne, want: "does not say SharedPortsExhausted"},
		{name: "sharing: exhausted, its StatefulSet gone said first", inv: SharedPortsShortSaid, class: &narrow, change: withReplicaOne(func(s *Snapshot) {
			for t := range s.Listeners {
				s.Listeners[t][0].Status.Conditions[0].Reason = v1alpha1.ReasonInvalid
			}
		})},
		{name: "sharing: exhausted, said", inv: SharedPortsShortSaid, class: &narrow, change: withReplicaOne(func(s *Snapshot) {
			for t := range s.Listeners {
				s.Listeners[t][0].Status.Conditions[0].Reason = v1alpha1.ReasonSharedPortsExhausted
			}
		})},
		{name: "sharing: exhausted said of ports that fit", inv: SharedPortsShortSaid, class: &sharing, change: withReplicaOne(func(s *Snapshot) {
			s.Listeners[0][0].Status.Conditions[0].Reason = v1alpha1.ReasonSharedPortsExhausted
		}), want: "ports fit"},
		{name: "sharing: Ready without a key", inv: SharedPortsShortSaid, class: &sharing, change: withReplicaOne(func(s *Snapshot) {
			delete(s.Services[1][0].Annotations, v1alpha1.AnnotationMetalLBSharedIP)
			s.Listeners[1][0].Status.Conditions[0] = metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReady}
		}), want: "carries no sharing key"},
	}
	for _, inv := range []func(Step) []string{ServicesFollowTheirClass, SharingKeysStayInTheirNamespace, SharedPortsApart, ReplicasOnTheirPorts, SharedPortsShortSaid, NoOtherTenantNamed, NotReadySaysWhy} {
		rows = append(rows, breachRow{name: "sharing: as it should be", inv: inv, class: &sharing, change: replicaOne})
	}
	return rows
}

// TestShareOperationsAreExtra: the sharing operations come in addition to
// a history's n (the others are drawn as without them), the fixed seeds
// play them, and a PutShareClass makes a sharing class or a plain
// LoadBalancer one.
func TestShareOperationsAreExtra(t *testing.T) {
	shared := 0
	for _, seed := range []struct {
		seed uint64
		n    int
	}{{1, 26}, {17, 18}, {1957, 13}} {
		ops := Generate(seed.seed, seed.n)
		others := 0
		for _, op := range ops {
			if op.Class == shareSlot && (op.Kind == PutShareClass || op.Kind == PutListener || op.Kind == PutStatefulSet) ||
				op.Name == shareStatefulSet || op.Name == shareBootstrap || op.Name == shareLone {
				shared++
			} else {
				others++
			}
		}
		if others != seed.n {
			t.Errorf("seed %d: %d operations besides the sharing ones, want %d", seed.seed, others, seed.n)
		}
	}
	if shared == 0 {
		t.Error("the fixed seeds play no sharing operation")
	}
	w := NewWorld(3)
	if c := w.Class(Op{Kind: PutShareClass, Class: shareSlot, Type: v1alpha1.ServiceTypeLoadBalancer, Share: 3}); c.Spec.LoadBalancerSharing == nil || c.Spec.LoadBalancerSharing.Size() != 3 {
		t.Errorf("a PutShareClass of 3 ports made %+v", c.Spec.LoadBalancerSharing)
	}
	if c := w.Class(Op{Kind: PutShareClass, Class: shareSlot, Type: v1alpha1.ServiceTypeLoadBalancer}); c.Spec.LoadBalancerSharing != nil {
		t.Errorf("a PutShareClass of 0 ports shares: %+v", c.Spec.LoadBalancerSharing)
	}
}
