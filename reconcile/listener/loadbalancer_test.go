package listener_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
	"github.com/listener-operator/listener-operator/reconcile/listener"
)

// loadBalancerEvent is an event a load-balancer controller writes about a
// Service (MetalLB's controller through client-go's core/v1 recorder).
func loadBalancerEvent(svc *corev1.Service, name, typ, reason, note string) *corev1.Event {
	now := metav1.NewTime(time.Now())
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: name},
		InvolvedObject: corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: svc.Namespace, Name: svc.Name,
			UID: svc.UID, ResourceVersion: svc.ResourceVersion},
		Type: typ, Reason: reason, Message: note, Source: corev1.EventSource{Component: "metallb-controller"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
}

// awaitingLoadBalancer makes Listener name of a LoadBalancer class whose
// load balancer nothing serves, waits until it is AwaitingLoadBalancer, and
// returns the client, its namespace and its Service.
func awaitingLoadBalancer(t *testing.T, name string) (client.Client, string, *corev1.Service) {
	t.Helper()
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To("example.test/lb"),
	})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, name, class.Name, reconciletest.Port("http", 80)))
	reconciletest.WaitReason(t, ctx, c, ns, name, v1alpha1.ReasonAwaitingLoadBalancer)
	return c, ns, reconciletest.GetService(t, ctx, c, ns, name, nil)
}

// TestLoadBalancerFailureExplained: a Service whose load balancer gives no
// address, and says why in a Warning event about it (MetalLB:
// AllocationFailed, its pool is full), gives the Listener a Ready
// condition that quotes it, not only "no ingress yet". A Normal event says
// nothing wrong, and a Warning about an earlier Service of the same name
// (another UID) is not this one's.
func TestLoadBalancerFailureExplained(t *testing.T) {
	c, ns, svc := awaitingLoadBalancer(t, "lb")
	ctx := t.Context()

	stale := svc.DeepCopy()
	stale.UID = "00000000-0000-0000-0000-000000000000"
	testenv.Create(t, ctx, c, loadBalancerEvent(stale, "lb.old", corev1.EventTypeWarning, "AllocationFailed", "an earlier Service's failure"))
	testenv.Create(t, ctx, c, loadBalancerEvent(svc, "lb.ok", corev1.EventTypeNormal, "IPAllocated", "nothing wrong"))
	const note = `Failed to allocate IP for "lb": no available IPs in pool tiny`
	testenv.Create(t, ctx, c, loadBalancerEvent(svc, "lb.full", corev1.EventTypeWarning, "AllocationFailed", note))

	l := reconciletest.WaitStatus(t, ctx, c, ns, "lb", func(l *v1alpha1.Listener) error {
		cond := readyCondition(l)
		if cond == nil || cond.Reason != v1alpha1.ReasonAwaitingLoadBalancer || !strings.Contains(cond.Message, "AllocationFailed: "+note) {
			return fmt.Errorf("Ready condition %+v, want %s quoting the load balancer's AllocationFailed", cond, v1alpha1.ReasonAwaitingLoadBalancer)
		}
		return nil
	})
	if msg := readyCondition(l).Message; strings.Contains(msg, "earlier Service") || strings.Contains(msg, "nothing wrong") {
		t.Errorf("the condition quotes another event: %s", msg)
	}

	// The address comes: Ready, and the failure is gone from the status.
	reconciletest.SetIngress(t, c, ns, "lb", "198.51.100.9")
	reconciletest.WaitReason(t, ctx, c, ns, "lb", v1alpha1.ReasonReady)
}

// TestLoadBalancerWarningWakesListener: a Listener waiting for its load
// balancer's address does not look again on its own (it listed the
// Service's events from the API server every 15 s: ~66 requests a second at
// 1,000 Listeners, issue 51); a Warning that comes later reaches its Ready
// condition through the cache's watch of Warning events about Services.
func TestLoadBalancerWarningWakesListener(t *testing.T) {
	c, ns, svc := awaitingLoadBalancer(t, "late")
	ctx := t.Context()
	key := types.NamespacedName{Namespace: ns, Name: "late"}
	testenv.Converges(t, "the Listener waits without a recheck", func() error { return reconciletest.Reconciles.Idle(listener.ControllerName, key) })

	const note = `Failed to allocate IP for "late": no available IPs in pool tiny`
	testenv.Create(t, ctx, c, loadBalancerEvent(svc, "late.full", corev1.EventTypeWarning, "AllocationFailed", note))
	reconciletest.WaitStatus(t, ctx, c, ns, "late", func(l *v1alpha1.Listener) error {
		if cond := readyCondition(l); cond == nil || !strings.Contains(cond.Message, "AllocationFailed: "+note) {
			return fmt.Errorf("Ready condition %+v does not quote the Warning", cond)
		}
		return nil
	})
}

// TestLoadBalancerClassChangeRecreates: spec.loadBalancerClass of a
// Service cannot change (the API server refuses the update), so a class
// whose loadBalancerClass changes gets its Listeners' Services deleted and
// made again with the new one, with an event that says why, and the
// Listener never turns Invalid.
func TestLoadBalancerClassChangeRecreates(t *testing.T) {
	for _, tc := range []struct {
		name string
		rng  *v1alpha1.NodePortRange
	}{
		{"node ports from the API server", nil},
		// A class with a node-port range writes its Services through
		// writeInRange: the change must reach that path too.
		{"node ports from the class's range", &v1alpha1.NodePortRange{From: 30940, To: 30943}},
	} {
		t.Run(tc.name, func(t *testing.T) { loadBalancerClassChangeRecreates(t, tc.rng) })
	}
}

func loadBalancerClassChangeRecreates(t *testing.T, rng *v1alpha1.NodePortRange) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To("a.example.test/lb"), NodePortRange: rng,
	})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "lb", class.Name, reconciletest.Port("http", 80)))
	reconciletest.WaitReason(t, ctx, c, ns, "lb", v1alpha1.ReasonAwaitingLoadBalancer)
	old := reconciletest.GetService(t, ctx, c, ns, "lb", nil)

	patch := client.MergeFrom(class.DeepCopy())
	class.Spec.LoadBalancerClass = ptr.To("b.example.test/lb")
	if err := c.Patch(ctx, class, patch); err != nil {
		t.Fatal(err)
	}
	reconciletest.GetService(t, ctx, c, ns, "lb", func(svc *corev1.Service) error {
		if svc.UID == old.UID || ptr.Deref(svc.Spec.LoadBalancerClass, "") != "b.example.test/lb" {
			return fmt.Errorf("Service uid %s (old %s), loadBalancerClass %v", svc.UID, old.UID, ptr.Deref(svc.Spec.LoadBalancerClass, ""))
		}
		if np := svc.Spec.Ports[0].NodePort; rng != nil && (np < rng.From || np > rng.To) {
			return fmt.Errorf("node port %d outside the class's range %d-%d", np, rng.From, rng.To)
		}
		return nil
	})
	ev := reconciletest.WaitEvent(t, ctx, c, ns, "lb", "ServiceDeleted")
	if !strings.Contains(ev.Note, "a.example.test/lb") || !strings.Contains(ev.Note, "b.example.test/lb") {
		t.Errorf("event %q does not say which loadBalancerClass changed", ev.Note)
	}
	l := reconciletest.WaitReason(t, ctx, c, ns, "lb", v1alpha1.ReasonAwaitingLoadBalancer)
	if cond := readyCondition(l); cond.ObservedGeneration != l.Generation {
		t.Errorf("condition %+v", cond)
	}
}

// readyCondition is the Listener's Ready condition (nil when it has none).
func readyCondition(l *v1alpha1.Listener) *metav1.Condition {
	return meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
}
