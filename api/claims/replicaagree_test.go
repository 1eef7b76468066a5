package claims_test

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/lbsharing"
	"github.com/listener-operator/listener-operator/api/nodeports"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestReplicaAgreement: the rules that give each replica of a StatefulSet
// a place of its own (a node-port range, a sharing class's Service ports,
// a TCPRoute class's sections) agree on the replica a Listener serves
// (claims.Replica; for a sharing class the one lbsharing.WorkloadOf
// reports) and put it in the same block of an empty range of four
// blocks: replica i in block i, a Listener the pods share in the last,
// so that it never holds a replica's place.
func TestReplicaAgreement(t *testing.T) {
	yes := true
	listener := func(name, ownerKind, ownerName string, annotations map[string]string) *v1alpha1.Listener {
		l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: annotations},
			Spec: v1alpha1.ListenerSpec{Ports: []v1alpha1.ListenerPort{{Name: "kafka", Port: 9092}}}}
		if ownerKind != "" {
			l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: ownerKind, Name: ownerName, Controller: &yes}}
		}
		return l
	}
	bootstrap := listener("kafka-bootstrap", "", "", nil)
	replicas := []string{"kafka-0", "kafka-1", "kafka-2"}
	for _, tc := range []struct {
		name  string
		l     *v1alpha1.Listener
		pods  []string
		block int
	}{
		{"bootstrap the three replicas mount", bootstrap, replicas, 3},
		{"bootstrap one replica mounts so far", bootstrap, replicas[:1], 3},
		{"bootstrap no pod mounts yet", bootstrap, nil, 3},
		{"a claim's own Listener, its one pod", listener("listener-kafka-1", "PersistentVolumeClaim", "listener-kafka-1", nil), replicas[1:2], 1},
		{"a volumeClaimTemplate claim's, before its pod", listener("data-kafka-2", "PersistentVolumeClaim", "data-kafka-2", nil), nil, 2},
		{"selects its pod by name", listener("l", "PersistentVolumeClaim", "l", map[string]string{v1alpha1.AnnotationStatefulSetPod: "kafka-2"}), replicas, 2},
		{"a claim's own Listener several pods mount", listener("shared", "PersistentVolumeClaim", "shared", nil), replicas[:2], 3},
		{"a Listener that no claim owns, one pod", listener("kafka-0-extra", "", "", nil), replicas[:1], 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replica := claims.Replica(tc.l, tc.pods)
			want := tc.block
			if want == 3 {
				want = -1
			}
			if replica != want {
				t.Errorf("claims.Replica = %d, want %d", replica, want)
			}
			pods := make([]corev1.Pod, len(tc.pods))
			for i, name := range tc.pods {
				pods[i] = corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.LabelStatefulSetPodName: name}}}
			}
			if w, ok, err := lbsharing.WorkloadOf(tc.l, pods); err != nil || ok && w.Replica != replica {
				t.Errorf("lbsharing.WorkloadOf replica %d (ok %v, %v), claims.Replica %d", w.Replica, ok, err, replica)
			}
			got := map[string]int{}
			np, err := (&nodeports.Ask{Class: "c", Range: v1alpha1.NodePortRange{From: 31000, To: 31003}, Namespace: "ns", Ports: []string{"kafka"}, Replica: replica}).NodePorts()
			got["node-port range"] = blockOf(np["kafka"]-31000, err)
			sp, err := (&lbsharing.Ask{Class: "c", Range: v1alpha1.LoadBalancerSharing{From: 9000, To: 9003}, Ports: []string{"kafka"}, Replica: replica}).Assign()
			got["load-balancer sharing"] = blockOf(sp["kafka"]-9000, err)
			class := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: v1alpha1.ListenerClassSpec{Gateway: &v1alpha1.ListenerGateway{RouteKind: v1alpha1.RouteKindTCPRoute}}}
			for i := range 4 {
				class.Spec.Gateway.ParentRefs = append(class.Spec.Gateway.ParentRefs, v1alpha1.GatewayParentRef{Namespace: "gw", Name: "g", SectionName: fmt.Sprintf("tcp-%d", i)})
			}
			b, err := gateway.TCPSections(class, tc.l, replica, nil, nil)
			if len(b) != 1 {
				got["TCPRoute sections"] = blockOf(-1, fmt.Errorf("%d bindings, %w", len(b), err))
			} else {
				got["TCPRoute sections"] = blockOf(int32(b[0].Index), err)
			}
			for rule, block := range got {
				if block != tc.block {
					t.Errorf("%s: block %d, want %d", rule, block, tc.block)
				}
			}
		})
	}
}

// blockOf is the block of one port at offset off, -1 on an error.
func blockOf(off int32, err error) int {
	if err != nil {
		return -1
	}
	return int(off)
}

// TestSharedListenerFromTheEnd: when no whole block of a range is free,
// a Listener that is no replica's takes nothing below a place it leaves
// free, by every rule that places replicas (a node-port range, a sharing
// class's Service ports, a TCPRoute class's sections): it takes the last
// free places, or none, so that the replicas keep theirs as long as they
// can (it took the first free node ports, replica 0's).
func TestSharedListenerFromTheEnd(t *testing.T) {
	// Four blocks of two; the second place of each block is held.
	const size, n = 8, 2
	heldOffs := []int{1, 3, 5, 7}
	ports := []string{"kafka", "metrics"}
	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bootstrap"},
		Spec: v1alpha1.ListenerSpec{Ports: []v1alpha1.ListenerPort{{Name: "kafka", Port: 9092}, {Name: "metrics", Port: 9093}}}}
	if r := claims.Replica(l, nil); r != -1 {
		t.Fatalf("claims.Replica = %d, want -1", r)
	}
	taken := map[string][]int{} // rule → offsets it gives (none on an error)
	npHeld, lbHeld, tcpHeld := map[int32]string{}, map[int32]string{}, map[int]bool{}
	for _, off := range heldOffs {
		npHeld[31000+int32(off)] = "ns"
		lbHeld[9000+int32(off)] = "other-service"
		tcpHeld[off] = true
	}
	np, err := (&nodeports.Ask{Class: "c", Range: v1alpha1.NodePortRange{From: 31000, To: 31000 + size - 1}, Namespace: "ns", Ports: ports, Replica: -1, Held: npHeld}).NodePorts()
	if err == nil {
		for _, p := range np {
			taken["node-port range"] = append(taken["node-port range"], int(p-31000))
		}
	}
	sp, err := (&lbsharing.Ask{Class: "c", Range: v1alpha1.LoadBalancerSharing{From: 9000, To: 9000 + size - 1}, Ports: ports, Replica: -1, Held: lbHeld}).Assign()
	if err == nil {
		for _, p := range sp {
			taken["load-balancer sharing"] = append(taken["load-balancer sharing"], int(p-9000))
		}
	}
	class := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: v1alpha1.ListenerClassSpec{Gateway: &v1alpha1.ListenerGateway{RouteKind: v1alpha1.RouteKindTCPRoute}}}
	for i := range size {
		class.Spec.Gateway.ParentRefs = append(class.Spec.Gateway.ParentRefs, v1alpha1.GatewayParentRef{Namespace: "gw", Name: "g", SectionName: fmt.Sprintf("tcp-%d", i)})
	}
	if b, err := gateway.TCPSections(class, l, -1, nil, tcpHeld); err == nil {
		for _, x := range b {
			taken["TCPRoute sections"] = append(taken["TCPRoute sections"], x.Index)
		}
	}
	for _, rule := range []string{"node-port range", "load-balancer sharing", "TCPRoute sections"} {
		offs := taken[rule]
		if len(offs) != 0 && len(offs) != n {
			t.Errorf("%s: places %v, want %d or none", rule, offs, n)
		}
		low := size
		for _, o := range offs {
			low = min(low, o)
		}
		for o := low + 1; o < size; o++ {
			if !slices.Contains(heldOffs, o) && !slices.Contains(offs, o) {
				t.Errorf("%s: takes %v and leaves %d free above them", rule, offs, o)
			}
		}
	}
}
