package listener

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// replicaListener is the per-claim Listener of StatefulSet replica claim
// (a plain claim: the claim controller leaves it alone), with two ports.
func replicaListener(t *testing.T, c client.Client, ns, claim, class string) *v1alpha1.Listener {
	t.Helper()
	pvc := reconciletest.ListenerClaim(ns, claim, nil)
	pvc.Labels = nil
	testenv.Create(t, t.Context(), c, pvc)
	l := reconciletest.Listener(ns, claim, class, reconciletest.Port("a", 9092), reconciletest.Port("b", 9093))
	l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: claim, UID: pvc.UID, Controller: ptr.To(true)}}
	return l
}

// nodePortsAre waits until Listener name records want.
func nodePortsAre(t *testing.T, c client.Client, ns, name string, want map[string]int32) *v1alpha1.Listener {
	t.Helper()
	return reconciletest.WaitStatus(t, t.Context(), c, ns, name, func(l *v1alpha1.Listener) error {
		if !reflect.DeepEqual(l.Status.NodePorts, want) {
			return fmt.Errorf("node ports %v, want %v", l.Status.NodePorts, want)
		}
		return nil
	})
}

// TestNodePortRange: replica i of a range class gets from + i×n + j for its
// port j, another Listener the last free block; a port another Service
// holds goes to the next free one (NodePortsTaken); a full range leaves the
// Listener without a Service and not Ready, saying how full it is.
// Listeners are created one after another: ports are first come, first
// served. The ports are in the API server's static band (30000-30085),
// which other tests' Services do not get.
func TestNodePortRange(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort,
		NodePortRange: &v1alpha1.NodePortRange{From: 30010, To: 30017}})
	thief := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "thief", Namespace: ns}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "thief"},
		Ports: []corev1.ServicePort{{Name: "x", Port: 80, NodePort: 30012}}}}
	testenv.Create(t, ctx, c, thief)

	testenv.Create(t, ctx, c, replicaListener(t, c, ns, "data-kafka-0", class.Name))
	nodePortsAre(t, c, ns, "data-kafka-0", map[string]int32{"a": 30010, "b": 30011})

	// Replica 1 wants 30012 and 30013; the thief has 30012.
	testenv.Create(t, ctx, c, replicaListener(t, c, ns, "data-kafka-1", class.Name))
	l := nodePortsAre(t, c, ns, "data-kafka-1", map[string]int32{"a": 30013, "b": 30014})
	kept := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionNodePortsKept)
	if kept == nil || kept.Status != metav1.ConditionFalse || kept.Reason != v1alpha1.ReasonNodePortsTaken || !strings.Contains(kept.Message, "a=30012") || !strings.Contains(kept.Message, "range 30010-30017") {
		t.Errorf("NodePortsKept = %+v, want False %s naming a=30012 and the range", kept, v1alpha1.ReasonNodePortsTaken)
	}
	reconciletest.WaitEvent(t, ctx, c, ns, "data-kafka-1", EventNodePortsTaken)

	// Not a replica: the last whole free block.
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "bootstrap", class.Name, reconciletest.Port("a", 9092), reconciletest.Port("b", 9093)))
	nodePortsAre(t, c, ns, "bootstrap", map[string]int32{"a": 30016, "b": 30017})

	// 30012 (the thief's) and 30015 are left: one port for a Listener of two.
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "late", class.Name, reconciletest.Port("a", 9092), reconciletest.Port("b", 9093)))
	l = reconciletest.WaitReason(t, ctx, c, ns, "late", v1alpha1.ReasonNodePortRangeExhausted)
	ready := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
	want := "node port range 30010-30017 of ListenerClass " + class.Name + " is exhausted: 7 of its 8 ports are in use (6 of them by this namespace's Listeners) and this Listener needs 2; widen spec.nodePortRange"
	if !strings.Contains(ready.Message, want) {
		t.Errorf("Ready message %q, want %q", ready.Message, want)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "late"}, &corev1.Service{}); err == nil {
		t.Error("a Listener whose range is full got a Service")
	}
	for _, name := range []string{"data-kafka-0", "data-kafka-1", "bootstrap"} {
		svc := reconciletest.GetService(t, ctx, c, ns, name, nil)
		l := nodePortsAre(t, c, ns, name, nodePortsOf(svc))
		if cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionNodePortsInRange); cond == nil || cond.Status != metav1.ConditionTrue {
			t.Errorf("%s: NodePortsInRange = %+v, want True", name, cond)
		}
	}
}

func nodePortsOf(svc *corev1.Service) map[string]int32 {
	out := map[string]int32{}
	for _, p := range svc.Spec.Ports {
		out[p.Name] = p.NodePort
	}
	return out
}

// TestRangeAddedToClassMovesNoService: a class that gains a range leaves its
// Listeners' Services as they are, with NodePortsInRange False; a Service
// made anew comes inside the range.
func TestRangeAddedToClassMovesNoService(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "old", class.Name, reconciletest.Port("http", 80)))
	before := reconciletest.GetService(t, ctx, c, ns, "old", nil)
	if p := before.Spec.Ports[0].NodePort; p >= 30020 && p <= 30023 {
		t.Skipf("the API server picked %d, inside the range this test adds", p)
	}
	class.Spec.NodePortRange = &v1alpha1.NodePortRange{From: 30020, To: 30023}
	if err := c.Update(ctx, class); err != nil {
		t.Fatal(err)
	}
	l := reconciletest.WaitStatus(t, ctx, c, ns, "old", func(l *v1alpha1.Listener) error {
		cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionNodePortsInRange)
		if cond == nil || cond.Reason != v1alpha1.ReasonNodePortsOutsideRange {
			return fmt.Errorf("NodePortsInRange %+v", cond)
		}
		return nil
	})
	if msg := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionNodePortsInRange).Message; !strings.Contains(msg, fmt.Sprintf("http=%d outside range 30020-30023", before.Spec.Ports[0].NodePort)) || !strings.Contains(msg, "delete the Service") {
		t.Errorf("NodePortsInRange message %q", msg)
	}
	if got := reconciletest.GetService(t, ctx, c, ns, "old", nil); got.UID != before.UID || got.Spec.Ports[0].NodePort != before.Spec.Ports[0].NodePort {
		t.Errorf("the Service moved: %v → %v", before.Spec.Ports, got.Spec.Ports)
	}
	if err := c.Delete(ctx, before); err != nil {
		t.Fatal(err)
	}
	svc := reconciletest.GetService(t, ctx, c, ns, "old", func(s *corev1.Service) error {
		if s.UID == before.UID {
			return fmt.Errorf("still the old Service")
		}
		return nil
	})
	if p := svc.Spec.Ports[0].NodePort; p != 30023 {
		t.Errorf("the Service made anew has node port %d, want 30023 (the range's last block: no replica's)", p)
	}
	reconciletest.WaitStatus(t, ctx, c, ns, "old", func(l *v1alpha1.Listener) error {
		if cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionNodePortsInRange); cond == nil || cond.Status != metav1.ConditionTrue {
			return fmt.Errorf("NodePortsInRange %+v", cond)
		}
		return nil
	})
}
