package listener

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// TestWaitersWokenWhenPortsFreed (make robustness seed
// 9269745483677134096): a Listener waiting for ports of its class's range
// gets them as soon as another Listener gives them up, not at its next
// recheck (rangeRecheck, 30 s): before, a restarted operator found the
// Service to make. Node ports come from the static band's 30077.
func TestWaitersWokenWhenPortsFreed(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	soon := rangeRecheck / 3
	t.Run("node-port range", func(t *testing.T) {
		rng := v1alpha1.NodePortRange{From: 30077, To: 30077}
		class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, NodePortRange: &rng})
		testenv.Create(t, ctx, c, reconciletest.Listener(ns, "first", class.Name, reconciletest.Port("x", 1)))
		inRange(t, c, ns, "first", rng, 1)
		testenv.Create(t, ctx, c, reconciletest.Listener(ns, "waiter", class.Name, reconciletest.Port("y", 2)))
		reconciletest.WaitReason(t, ctx, c, ns, "waiter", v1alpha1.ReasonNodePortRangeExhausted)
		// Give the waiter's first recheck time to pass, so that what
		// follows is not it.
		time.Sleep(time.Second)
		unsetClass(t, c, ns, "first")
		waitService(t, c, ns, "waiter", soon)
	})
	t.Run("sharing range", func(t *testing.T) {
		class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer,
			LoadBalancerClass: ptr.To("listeners.test/none"), LoadBalancerAllocateNodePorts: ptr.To(false),
			LoadBalancerSharing: &v1alpha1.LoadBalancerSharing{From: 9000, To: 9003}})
		boot := reconciletest.Listener(ns, "kafka-bootstrap", class.Name, reconciletest.Port("kafka", 9092), reconciletest.Port("internal", 9093))
		testenv.Create(t, ctx, c, boot, reconciletest.ListenerClaim(ns, "kafka-bootstrap", map[string]string{v1alpha1.AnnotationListenerName: "kafka-bootstrap"}))
		brokerPod(t, c, ns, "kafka", class.Name, 0)
		sharedService(t, c, ns, "kafka-bootstrap", ns+"/kafka", map[string]int32{"kafka": 9002, "internal": 9003})
		brokerPod(t, c, ns, "kafka", class.Name, 1)
		reconciletest.WaitReason(t, ctx, c, ns, "listener-kafka-1", v1alpha1.ReasonSharedPortTaken)
		time.Sleep(time.Second)
		unsetClass(t, c, ns, "kafka-bootstrap")
		waitService(t, c, ns, "listener-kafka-1", soon)
	})
}

// unsetClass takes Listener name's class away: the operator deletes its
// Service.
func unsetClass(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	testenv.Converges(t, "unset class of "+name, func() error {
		l := &v1alpha1.Listener{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, l); err != nil {
			return err
		}
		l.Spec.ClassName = nil
		return c.Update(t.Context(), l)
	})
}

// waitService waits within d for Listener name's Service.
func waitService(t *testing.T, c client.Client, ns, name string, d time.Duration) {
	t.Helper()
	testenv.Eventually(t, d, fmt.Sprintf("Service of %s within %s (its range recheck is %s away)", name, d, rangeRecheck), func() error {
		return c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: names.ServiceName(name)}, &corev1.Service{})
	})
}
