package claims

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

func TestReplica(t *testing.T) {
	yes := true
	claimOwned := func(claim string) *v1alpha1.Listener {
		return &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: claim, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: claim, Controller: &yes}}}}
	}
	byName := claimOwned("listener-kafka-2")
	byName.Annotations = map[string]string{v1alpha1.AnnotationStatefulSetPod: "kafka-2"}
	bootstrap := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: "kafka-bootstrap"}}
	podOwned := claimOwned("kafka-1-listener")
	podOwned.OwnerReferences[0] = metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "kafka-1", Controller: &yes}
	tests := []struct {
		name string
		l    *v1alpha1.Listener
		pods []string
		want int
	}{
		{"selects its pod by name", byName, nil, 2},
		{"selects its pod by name, whoever mounts it", byName, []string{"kafka-0", "kafka-1"}, 2},
		{"volumeClaimTemplate claim, pod not made yet", claimOwned("data-kafka-4"), nil, 4},
		{"volumeClaimTemplate claim, its pod", claimOwned("data-kafka-4"), []string{"kafka-4"}, 4},
		{"ephemeral claim: its pod's name", claimOwned("kafka-3-listener-0"), []string{"kafka-3"}, 3},
		{"pod names that are no StatefulSet pod's", claimOwned("web-listener"), []string{"web-abcde"}, -1},
		{"leading zero is no ordinal", claimOwned("data-kafka-01"), nil, -1},
		{"a Listener of its own", &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: "kafka-bootstrap-1"}}, nil, -1},
		{"bootstrap the replicas share", bootstrap, []string{"kafka-0", "kafka-1", "kafka-2"}, -1},
		{"bootstrap mounted by one replica so far", bootstrap, []string{"kafka-0"}, -1},
		{"claim's own Listener several pods mount", claimOwned("shared-data"), []string{"kafka-0", "kafka-1"}, -1},
		{"controller is no claim", podOwned, []string{"kafka-1"}, -1},
		{"a pod of no StatefulSet mounts it too", claimOwned("data-kafka-4"), []string{"touch"}, 4},
		{"its replica and a pod of no StatefulSet", claimOwned("kafka-3-listener-0"), []string{"kafka-3", "touch"}, 3},
		{"two StatefulSets' pods of one ordinal", claimOwned("kafka-3-listener-0"), []string{"kafka-3", "zk-3"}, -1},
		{"one pod listed twice", claimOwned("kafka-3-listener-0"), []string{"kafka-3", "kafka-3"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Replica(tt.l, tt.pods); got != tt.want {
				t.Errorf("Replica = %d, want %d", got, tt.want)
			}
		})
	}
}
