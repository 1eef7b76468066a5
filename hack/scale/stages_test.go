package main

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/names"
)

// TestStagesOfAPod: a per-claim listener pod's stages are read from its
// claim, volume, Listener, Service and slice by name, in the order the
// report prints them; a pod on a shared Listener has none.
func TestStagesOfAPod(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 11, 27, 12, 0, s, 0, time.UTC) }
	own := listenerPod("large", 0)
	shared := listenerPod("large", 1)
	claim := names.EphemeralClaimName(own.Name, "listener")
	listener := names.ClaimListenerName(claim)
	service := names.ServiceName(listener)
	own.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at(5))},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at(10))},
	}
	tm := times{
		claimAt: map[string]time.Time{claim: at(1)}, selectedAt: map[string]time.Time{claim: at(2)}, boundAt: map[string]time.Time{claim: at(4)},
		listenerAt: map[string]time.Time{listener: at(6)}, readyAt: map[string]time.Time{listener: at(9)},
		svcAt: map[string]time.Time{service: at(7)}, sliceAt: map[string]time.Time{service: at(8)},
		volumeAt: func(c string) time.Time {
			if c == claim {
				return at(3)
			}
			return time.Time{}
		},
	}
	want := []time.Time{at(1), at(2), at(3), at(4), at(5), at(6), at(7), at(8), at(9), podRunningAt(own)}
	if got := tm.of(own); !slices.Equal(got, want) {
		t.Errorf("stages of a per-claim pod:\n got %v\nwant %v", got, want)
	}
	if got := tm.of(shared); got != nil {
		t.Errorf("stages of a pod on a shared Listener: %v, want none", got)
	}
}

// TestComponentName: the table names the operator's processes; pods that
// are not processes on the real node are not measured.
func TestComponentName(t *testing.T) {
	pod := func(component, node string, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app.kubernetes.io/component": component}},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{PodIP: "10.0.0.1"}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	for _, tc := range []struct {
		pod    *corev1.Pod
		leader string
		want   string
	}{
		{pod("controller", "node-1", false), "p", "controller (leader)"},
		{pod("controller", "node-1", false), "other", "controller (non-leader)"},
		{pod("csi-node", "node-1", false), "", nodePluginName},
		{pod("csi-node", kwokNodeName(3), false), "", ""},
		{pod("csi-controller", "node-1", false), "", "csi controller"},
		{pod("controller", "node-1", true), "p", ""},
		{pod("something-else", "node-1", false), "", ""},
	} {
		if got := componentName(tc.pod, tc.leader); got != tc.want {
			t.Errorf("componentName(%s on %s, leader %q) = %q, want %q", tc.pod.Labels["app.kubernetes.io/component"], tc.pod.Spec.NodeName, tc.leader, got, tc.want)
		}
	}
}
