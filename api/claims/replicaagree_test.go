package claims_test

import (
	"fmt"
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
