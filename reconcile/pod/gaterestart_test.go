package pod_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// TestGateAfterRestart: while the operator is down gated pods keep their
// condition; a restarted operator (a new leader, cold cache) brings every
// pod's condition to what it should be now with one status write for a pod
// whose verdict changed while it was down, and none for the others (a
// write that found the pod changed since its read lands nothing).
func TestGateAfterRestart(t *testing.T) {
	e := testenv.Require(t, reconciletest.Env)
	c, ctx := e.Client, t.Context()
	ns := reconciletest.OwnLeaderNamespace(t)
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer,
		LoadBalancerAllocateNodePorts: ptr.To(false), PodReadiness: ptr.To(v1alpha1.PodReadinessGate)})
	// Three Listeners, one gated pod each (a pod named after its Listener).
	for _, name := range []string{"steady", "moved", "late"} {
		claim := reconciletest.ListenerClaim(ns, name, map[string]string{v1alpha1.AnnotationListenerName: name})
		testenv.Create(t, ctx, c, reconciletest.Listener(ns, name, class.Name, reconciletest.Port("tls", 9093)), claim, reconciletest.GatedPod(ns, name, claim.Name, "some-node"))
	}
	first := reconciletest.StartLeader(t, ns)
	reconciletest.SetIngress(t, c, ns, "steady", "198.51.100.11")
	reconciletest.SetIngress(t, c, ns, "moved", "198.51.100.12")
	want := map[string]string{"steady": v1alpha1.ReasonAddressesReady, "moved": v1alpha1.ReasonAddressesReady, "late": v1alpha1.ReasonListenerNotReady}
	before := waitGates(t, c, ns, want)
	first()

	// Down: the address of "moved" changes, "late" gets one.
	reconciletest.SetIngress(t, c, ns, "moved", "198.51.100.22")
	reconciletest.SetIngress(t, c, ns, "late", "198.51.100.13")
	time.Sleep(2 * time.Second) // what a write would take: no timing is asserted, only that none came
	if now := gates(t, c, ns); !maps.Equal(now, before) {
		t.Errorf("with the operator down, the pods' conditions changed: %v → %v", before, now)
	}

	mark := reconciletest.MarkAudit(t)
	reconciletest.StartLeader(t, ns)
	want["moved"], want["late"] = v1alpha1.ReasonAddressesChanged, v1alpha1.ReasonAddressesReady
	waitGates(t, c, ns, want)
	time.Sleep(2 * time.Second) // room for a second write, had there been one
	var podWrites []string
	for _, w := range reconciletest.OperatorWrites(t, mark, ns) {
		// A write refused because the pod changed since it was read
		// (409, its resourceVersion) changes nothing: the pod is judged
		// again.
		if strings.Contains(w, "pods/status") && !strings.HasSuffix(w, "(409)") {
			podWrites = append(podWrites, w)
		}
	}
	slices.Sort(podWrites)
	if wantWrites := []string{"patch pods/status late (200)", "patch pods/status moved (200)"}; !slices.Equal(podWrites, wantWrites) {
		t.Errorf("the restarted operator wrote pods' status %q, want one write for each pod whose verdict changed: %q", podWrites, wantWrites)
	}
}

// gates are the reasons of the gate conditions of ns's pods, by pod
// ("" for a pod without one).
func gates(t *testing.T, c client.Client, ns string) map[string]string {
	t.Helper()
	pods := &corev1.PodList{}
	if err := c.List(t.Context(), pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		out[p.Name] = ""
		for _, cond := range p.Status.Conditions {
			if cond.Type == v1alpha1.PodConditionAddressesReady {
				out[p.Name] = cond.Reason
			}
		}
	}
	return out
}

// waitGates waits until ns's pods' gate reasons are want.
func waitGates(t *testing.T, c client.Client, ns string, want map[string]string) map[string]string {
	t.Helper()
	var got map[string]string
	testenv.Converges(t, fmt.Sprintf("gate reasons %v", want), func() error {
		if got = gates(t, c, ns); !maps.Equal(got, want) {
			return fmt.Errorf("reasons %v", got)
		}
		return nil
	})
	return got
}
