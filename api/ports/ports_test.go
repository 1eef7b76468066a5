package ports

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

func pod(name string, phase corev1.PodPhase, ports ...corev1.ContainerPort) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Ports: ports}}}, Status: corev1.PodStatus{Phase: phase}}
}

func tcp(name string, n int32) v1alpha1.ListenerPort {
	return v1alpha1.ListenerPort{Name: name, Port: n, Protocol: corev1.ProtocolTCP}
}

func TestFromPods(t *testing.T) {
	deleting := pod("d", corev1.PodRunning, corev1.ContainerPort{Name: "old", ContainerPort: 3})
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	tests := []struct {
		name string
		pods []corev1.Pod
		want []v1alpha1.ListenerPort
	}{
		{"no pods", nil, nil},
		{"unnamed ports are named by number, UDP kept",
			[]corev1.Pod{pod("a", "", corev1.ContainerPort{ContainerPort: 53, Protocol: corev1.ProtocolUDP}, corev1.ContainerPort{Name: "http", ContainerPort: 80})},
			[]v1alpha1.ListenerPort{tcp("http", 80), {Name: "port-53", Port: 53, Protocol: corev1.ProtocolUDP}}},
		{"same name in two pods: the first pod by name wins",
			[]corev1.Pod{pod("b", "", corev1.ContainerPort{Name: "http", ContainerPort: 81}), pod("a", "", corev1.ContainerPort{Name: "http", ContainerPort: 80})},
			[]v1alpha1.ListenerPort{tcp("http", 80)}},
		{"finished, evicted and terminating pods are left out",
			[]corev1.Pod{pod("a", corev1.PodSucceeded, corev1.ContainerPort{Name: "old", ContainerPort: 1}), pod("b", corev1.PodRunning, corev1.ContainerPort{Name: "new", ContainerPort: 2}),
				pod("c", corev1.PodFailed, corev1.ContainerPort{Name: "evicted", ContainerPort: 4}), deleting},
			[]v1alpha1.ListenerPort{tcp("new", 2)}},
		{"only finished pods: no ports",
			[]corev1.Pod{pod("a", corev1.PodFailed, corev1.ContainerPort{Name: "old", ContainerPort: 1})}, nil},
		{"a named and an unnamed port with one number: the name wins",
			[]corev1.Pod{pod("a", "", corev1.ContainerPort{ContainerPort: 8080}), pod("b", "", corev1.ContainerPort{Name: "http", ContainerPort: 8080})},
			[]v1alpha1.ListenerPort{tcp("http", 8080)}},
		{"one number under two names: the alphabetically first name",
			[]corev1.Pod{pod("a", "", corev1.ContainerPort{Name: "web", ContainerPort: 80}), pod("b", "", corev1.ContainerPort{Name: "http", ContainerPort: 80})},
			[]v1alpha1.ListenerPort{tcp("http", 80)}},
		{"one number, TCP and UDP: both, the generated name once",
			[]corev1.Pod{pod("a", "", corev1.ContainerPort{ContainerPort: 53}, corev1.ContainerPort{ContainerPort: 53, Protocol: corev1.ProtocolUDP}, corev1.ContainerPort{Name: "dns-udp", ContainerPort: 53, Protocol: corev1.ProtocolUDP})},
			[]v1alpha1.ListenerPort{{Name: "dns-udp", Port: 53, Protocol: corev1.ProtocolUDP}, tcp("port-53", 53)}},
		{"the same port in every pod once",
			[]corev1.Pod{pod("a", "", corev1.ContainerPort{ContainerPort: 9090}), pod("b", "", corev1.ContainerPort{ContainerPort: 9090})},
			[]v1alpha1.ListenerPort{tcp("port-9090", 9090)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FromPods(tt.pods)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("FromPods = %+v, want %+v", got, tt.want)
			}
			// Any order of the same pods gives the same ports.
			rev := make([]corev1.Pod, len(tt.pods))
			for i, p := range tt.pods {
				rev[len(tt.pods)-1-i] = p
			}
			if again := FromPods(rev); !reflect.DeepEqual(again, got) {
				t.Errorf("FromPods of the pods reversed = %+v, want %+v", again, got)
			}
		})
	}
}

func TestUncovered(t *testing.T) {
	p := pod("a", "", corev1.ContainerPort{Name: "http", ContainerPort: 80}, corev1.ContainerPort{ContainerPort: 53, Protocol: corev1.ProtocolUDP}, corev1.ContainerPort{ContainerPort: 9000})
	tests := []struct {
		name     string
		listener []v1alpha1.ListenerPort
		want     []string
	}{
		{"all covered, whatever the names", []v1alpha1.ListenerPort{tcp("web", 80), {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, {Name: "x", Port: 9000}}, nil},
		{"a new port of a rolling update", []v1alpha1.ListenerPort{tcp("http", 80), {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}, []string{"9000/TCP"}},
		{"protocol matters", []v1alpha1.ListenerPort{tcp("http", 80), tcp("dns", 53), tcp("x", 9000)}, []string{"53/UDP"}},
		{"nothing covered", nil, []string{"80/TCP", "53/UDP", "9000/TCP"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Uncovered(tt.listener, &p); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Uncovered = %v, want %v", got, tt.want)
			}
		})
	}
}
