package robustness

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/listener-operator/listener-operator/api/podready"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// gatedWorld is podWorld with the pod gated and its condition True, as
// the operator leaves a pod whose Listener is Ready and recorded; change
// edits it.
func gatedWorld(change func(s *Snapshot)) *Snapshot {
	return podWorld(func(s *Snapshot) {
		pod := &s.Pods[0][0]
		pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: v1alpha1.PodConditionAddressesReady}}
		pod.Status.Conditions = []corev1.PodCondition{{Type: v1alpha1.PodConditionAddressesReady, Status: corev1.ConditionTrue,
			Reason: v1alpha1.ReasonAddressesReady, Message: "every listener volume is reachable at the addresses the pod was told"}}
		if change != nil {
			change(s)
		}
	})
}

// setGate sets the pod's gate condition to what v says.
func setGate(s *Snapshot, v podready.Verdict) {
	status := corev1.ConditionFalse
	if v.Ready {
		status = corev1.ConditionTrue
	}
	s.Pods[0][0].Status.Conditions[0] = corev1.PodCondition{Type: v1alpha1.PodConditionAddressesReady, Status: status, Reason: v.Reason, Message: v.Message}
}

// TestGatedPodsReadyOnlyWhenReachable: the invariant holds on a gated pod
// whose condition is api/podready's verdict, and reports a condition
// missing, True while the Listener is not Ready, or naming the other
// namespace.
func TestGatedPodsReadyOnlyWhenReachable(t *testing.T) {
	notReady := func(s *Snapshot) {
		s.Listeners[0][0].Generation = 4
		s.Listeners[0][0].Status.Conditions[0].ObservedGeneration = 3 // Ready for an older spec
	}
	tests := []struct {
		name   string
		change func(s *Snapshot)
		want   string // in the breach; "" for none
	}{
		{name: "True, reachable as told"},
		{name: "not gated, no condition", change: func(s *Snapshot) {
			s.Pods[0][0].Spec.ReadinessGates, s.Pods[0][0].Status.Conditions = nil, nil
		}},
		{name: "not bound yet, no condition", change: func(s *Snapshot) {
			s.Pods[0][0].Spec.NodeName, s.Pods[0][0].Status.Conditions = "", nil
		}},
		{name: "no condition", change: func(s *Snapshot) { s.Pods[0][0].Status.Conditions = nil }, want: "has no listeners.stackable.tech/addresses-ready condition"},
		{name: "True while the Listener is not Ready", change: notReady, want: "podready says ready=false (ListenerNotReady"},
		{name: "False with the Listener's reason", change: func(s *Snapshot) {
			notReady(s)
			vols, _ := s.gateVolumes(0, &s.Pods[0][0])
			setGate(s, podready.Judge(vols))
		}},
		{name: "the PodListeners write refused, said", change: func(s *Snapshot) {
			s.PodListeners[0] = nil
			vols, _ := s.gateVolumes(0, &s.Pods[0][0])
			setGate(s, podready.Refused(vols, `exceeded quota: pl, requested: count/podlisteners.listeners.stackable.tech=1`))
		}},
		{name: "another reason", change: func(s *Snapshot) {
			s.Pods[0][0].Status.Conditions[0].Status, s.Pods[0][0].Status.Conditions[0].Reason = corev1.ConditionFalse, v1alpha1.ReasonAddressesChanged
		}, want: "podready says ready=true (AddressesReady"},
		{name: "names the other namespace", change: func(s *Snapshot) {
			s.Pods[0][0].Status.Conditions[0].Message += " (as in " + s.World.Tenants[1] + ")"
		}, want: "names namespace rb7-tenant-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantBreach(t, GatedPodsReadyOnlyWhenReachable(Step{Cur: gatedWorld(tt.change)}), tt.want)
		})
	}
}
