package pod

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// TestReadinessGate: a pod with the readiness gate gets its condition False
// with the reason while its Listener has no address, True once the
// address it is told is recorded, False again when that address changes
// under it; nothing is written while nothing changes; a pod without the
// gate gets no condition.
func TestReadinessGate(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer,
		LoadBalancerAllocateNodePorts: ptr.To(false), PodReadiness: ptr.To(v1alpha1.PodReadinessGate)})
	claim := reconciletest.ListenerClaim(ns, "gate-claim", map[string]string{v1alpha1.AnnotationListenerName: "gate"})
	pod := func(name string, gated bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{NodeName: "some-node", Containers: []corev1.Container{{Name: "main", Image: "example"}},
				Volumes: []corev1.Volume{reconciletest.ClaimVolume("listener", claim.Name)}}}
		if gated {
			p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: v1alpha1.PodConditionAddressesReady}}
		}
		return p
	}
	gatedPod, plainPod := pod("gated", true), pod("plain", false)
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "gate", class.Name, reconciletest.Port("tls", 9093)), claim, gatedPod, plainPod)
	waitGate(t, c, gatedPod, corev1.ConditionFalse, v1alpha1.ReasonListenerNotReady)

	reconciletest.SetIngress(t, c, ns, "gate", "198.51.100.7")
	ready := waitGate(t, c, gatedPod, corev1.ConditionTrue, v1alpha1.ReasonAddressesReady)

	// Steady state: a change that changes no verdict writes nothing.
	testenv.Converges(t, "annotate the Listener", func() error {
		l := &v1alpha1.Listener{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gate"}, l); err != nil {
			return err
		}
		l.Annotations = map[string]string{"example.test/touch": "1"}
		return c.Update(ctx, l)
	})
	time.Sleep(2 * time.Second) // what a write would take: no timing is asserted, only that none came
	if now := getPod(t, c, gatedPod); now.ResourceVersion != ready.ResourceVersion {
		t.Errorf("the pod was written at steady state: resourceVersion %s → %s", ready.ResourceVersion, now.ResourceVersion)
	}

	reconciletest.SetIngress(t, c, ns, "gate", "198.51.100.9")
	changed := waitGate(t, c, gatedPod, corev1.ConditionFalse, v1alpha1.ReasonAddressesChanged)
	if msg := gateCondition(changed).Message; msg != "volume listener: the addresses the pod started with (198.51.100.7) are no longer those of Listener gate (198.51.100.9): restart the pod to advertise the new ones, or set the class's addressChange.restartPods" {
		t.Errorf("message %q", msg)
	}
	if cond := gateCondition(getPod(t, c, plainPod)); cond != nil {
		t.Errorf("a pod without the gate got %+v", cond)
	}
}

func getPod(t *testing.T, c client.Client, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(pod), p); err != nil {
		t.Fatal(err)
	}
	return p
}

func gateCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1alpha1.PodConditionAddressesReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// waitGate waits until pod's gate condition has status and reason.
func waitGate(t *testing.T, c client.Client, pod *corev1.Pod, status corev1.ConditionStatus, reason string) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	testenv.Converges(t, fmt.Sprintf("pod %s gate %s %s", pod.Name, status, reason), func() error {
		p = &corev1.Pod{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(pod), p); err != nil {
			return err
		}
		if cond := gateCondition(p); cond == nil || cond.Status != status || cond.Reason != reason {
			return fmt.Errorf("condition %+v", cond)
		}
		return nil
	})
	return p
}
