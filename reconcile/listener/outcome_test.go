package listener

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// A Listener looks again on its own only when what it waits for sends no
// event: a foreign Service (outside the cache). Endpoints, an address
// given and a load balancer's Warning (lbwarning.go) wake it through their
// events.
func TestRecheckAfter(t *testing.T) {
	for _, tc := range []struct {
		v    verdict
		want bool
	}{
		{verdict{ready: true, reason: v1alpha1.ReasonReady}, false},
		{verdict{reason: v1alpha1.ReasonNoNodes}, false},
		{verdict{reason: v1alpha1.ReasonAwaitingLoadBalancer}, false},
		{verdict{reason: v1alpha1.ReasonClassNotFound}, false},
		{verdict{reason: v1alpha1.ReasonInvalid}, false},
		{verdict{reason: v1alpha1.ReasonForeignService}, true},
		{verdict{reason: v1alpha1.ReasonNoClass}, false},
	} {
		o := settled(v1alpha1.ListenerStatus{}, tc.v)
		if got := o.requeueAfter > 0; got != tc.want || !o.publish {
			t.Errorf("settled(%s) requeues after %s (publish %v), want a recheck: %v", tc.v.reason, o.requeueAfter, o.publish, tc.want)
		}
	}
	if o := cacheBehind(); o.publish || o.requeueAfter == 0 {
		t.Errorf("cacheBehind() = %+v, want a retry that publishes nothing", o)
	}
}

// TestPodFindsTheListenersOfItsClaims: a pod maps to the Listener of each
// listener claim it mounts (a claim's own, one it shares, one of an
// ephemeral volume), read from the reconcilers' cache, and to nothing
// through a claim that is not a listener claim: what a pod event or a node
// event wakes (the nodes a NodePort Listener publishes are its pods').
func TestPodFindsTheListenersOfItsClaims(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	own := reconciletest.ListenerClaim(ns, "web-0-listener", map[string]string{v1alpha1.AnnotationListenerClass: "absent-" + ns})
	shared := reconciletest.ListenerClaim(ns, "shared", map[string]string{v1alpha1.AnnotationListenerName: "brokers"})
	eph := reconciletest.ListenerClaim(ns, "web-0-bootstrap", map[string]string{v1alpha1.AnnotationListenerName: "bootstrap"})
	ordinary := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *reconciletest.ResourceOne()}},
		},
	}
	testenv.Create(t, ctx, c, own, shared, eph, ordinary)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: ns}, Spec: corev1.PodSpec{
		Volumes: []corev1.Volume{
			reconciletest.ClaimVolume("listener", own.Name), reconciletest.ClaimVolume("brokers", shared.Name), reconciletest.ClaimVolume("data", ordinary.Name),
			{Name: "bootstrap", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
		},
	}}
	want := []string{"bootstrap", "brokers", own.Name}
	testenv.Converges(t, "pod web-0 maps to the Listeners of its three listener claims", func() error {
		var got []string
		for _, req := range listenersOfPod(ctx, reconciletest.LeaderClient, pod) {
			if req.Namespace != ns {
				return fmt.Errorf("request %s in another namespace", req)
			}
			got = append(got, req.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("mapped to %v, want %v", got, want)
		}
		return nil
	})
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: ns}, Spec: corev1.PodSpec{
		Volumes: []corev1.Volume{reconciletest.ClaimVolume("data", ordinary.Name), reconciletest.ClaimVolume("gone", "never-made")},
	}}
	if got := listenersOfPod(ctx, reconciletest.LeaderClient, other); len(got) != 0 {
		t.Errorf("a pod with no listener claim maps to %v, want nothing", got)
	}
}

// applyOtherCondition writes a condition on the Listener's status the way
// the pinned-node-loss controller does: server-side apply of that condition
// alone, under a field manager of its own.
func applyOtherCondition(t *testing.T, ctx context.Context, c client.Client, l *v1alpha1.Listener, status metav1.ConditionStatus) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Listener",
		"metadata": map[string]any{"namespace": l.Namespace, "name": l.Name},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "PinnedNodesAvailable", "status": string(status), "reason": "Test", "message": "written by another controller",
			"lastTransitionTime": metav1.Now().UTC().Format("2006-01-02T15:04:05Z"),
		}}},
	}}
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("test-other-writer"), client.ForceOwnership); err != nil {
		t.Fatalf("apply another controller's condition: %v", err)
	}
}

// TestStatusWritersDoNotRequeueOnEachOther: another controller writing its
// condition on a Listener's status (as node loss does) right after the
// Listener controller wrote its own is neither taken for a cache that lags
// the Listener controller's write (which reconciled again every 50 ms for up
// to 10 s) nor overwritten by it. Counted: the Listener controller's
// reconciles of that Listener for one spec change, once the controller has
// nothing more scheduled for it (so a requeue after the status converged
// counts too).
func TestStatusWritersDoNotRequeueOnEachOther(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	l := reconciletest.Listener(ns, "shared", "absent-"+ns, reconciletest.Port("http", 80))
	testenv.Create(t, ctx, c, l)
	reconciletest.WaitReason(t, ctx, c, ns, l.Name, v1alpha1.ReasonClassNotFound)
	applyOtherCondition(t, ctx, c, l, metav1.ConditionTrue)

	key := client.ObjectKeyFromObject(l)
	before := reconciletest.Reconciles.Count(ControllerName, key)
	if err := c.Get(ctx, key, l); err != nil {
		t.Fatal(err)
	}
	l.Spec.Ports = append(l.Spec.Ports, reconciletest.Port("https", 443))
	if err := c.Update(ctx, l); err != nil {
		t.Fatalf("change the Listener: %v", err)
	}
	got := reconciletest.WaitStatus(t, ctx, c, ns, l.Name, func(got *v1alpha1.Listener) error {
		ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		if ready == nil || ready.ObservedGeneration != got.Generation {
			return fmt.Errorf("Ready %+v not of generation %d", ready, got.Generation)
		}
		return nil
	})
	testenv.Converges(t, "the Listener controller has nothing scheduled for the Listener", func() error {
		return reconciletest.Reconciles.Idle(ControllerName, key)
	})
	n := reconciletest.Reconciles.Count(ControllerName, key) - before
	t.Logf("%d reconciles of the Listener for the change", n)
	if n > 3 {
		t.Errorf("%d reconciles of the Listener for one change of its spec, want at most 3 (no retries on the other writer's write)", n)
	}
	other := meta.FindStatusCondition(got.Status.Conditions, "PinnedNodesAvailable")
	if other == nil || other.Status != metav1.ConditionTrue {
		t.Errorf("the other controller's condition is %+v after the Listener controller's write, want it kept", other)
	}

	// And the other way round: the other writer's next write keeps Ready.
	applyOtherCondition(t, ctx, c, l, metav1.ConditionFalse)
	if err := c.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if reason, _ := reconciletest.ReadyReason(got); reason != v1alpha1.ReasonClassNotFound {
		t.Errorf("Ready reason %q after the other writer's write, want ClassNotFound kept", reason)
	}
}

// TestStatusFieldsOfAnotherManagerAreTakenOver: a status written by another
// field manager (the existing operator's, as the migration leaves it, with
// node ports a ClusterIP Listener does not publish) is taken over: the
// fields the Listener controller does not publish go and Ready comes back.
func TestStatusFieldsOfAnotherManagerAreTakenOver(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	l := reconciletest.Listener(ns, "migrated", class.Name, reconciletest.Port("http", 80))
	testenv.Create(t, ctx, c, l)
	l = reconciletest.WaitReason(t, ctx, c, ns, l.Name, v1alpha1.ReasonReady)

	l.Status = v1alpha1.ListenerStatus{ServiceName: l.Status.ServiceName, IngressAddresses: l.Status.IngressAddresses, NodePorts: map[string]int32{"http": 31080}}
	if err := c.Status().Update(ctx, l, client.FieldOwner("listeners.stackable.tech_listener")); err != nil {
		t.Fatalf("write their status: %v", err)
	}
	// A label change wakes the controller (status writes do not).
	l.Labels = map[string]string{"touched": "yes"}
	if err := c.Update(ctx, l); err != nil {
		t.Fatal(err)
	}
	reconciletest.WaitStatus(t, ctx, c, ns, l.Name, func(got *v1alpha1.Listener) error {
		if reason, _ := reconciletest.ReadyReason(got); reason != v1alpha1.ReasonReady || len(got.Status.NodePorts) > 0 || got.Status.ServiceType != v1alpha1.ServiceTypeClusterIP {
			return fmt.Errorf("Ready %q, nodePorts %v, serviceType %q", reason, got.Status.NodePorts, got.Status.ServiceType)
		}
		return nil
	})
}

// TestRefusedRecheckBacksOff: a refused Service is looked at again after
// 15 s, then 30 s, doubling up to 5 min with each refusal in a row; any
// other verdict starts again at 15 s, as does another Listener.
func TestRefusedRecheckBacksOff(t *testing.T) {
	refused := verdict{reason: v1alpha1.ReasonServiceRefused}
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	var r refusalBackoff
	var got []time.Duration
	for range 8 {
		got = append(got, r.recheck(a, refused, ServiceRefusedRecheck))
	}
	want := []time.Duration{15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	if !slices.Equal(got, want) {
		t.Errorf("periods %v, want %v", got, want)
	}
	if d := r.recheck(b, refused, ServiceRefusedRecheck); d != ServiceRefusedRecheck {
		t.Errorf("another Listener's first period %s, want %s", d, ServiceRefusedRecheck)
	}
	if d := r.recheck(a, verdict{ready: true, reason: v1alpha1.ReasonReady}, 0); d != 0 {
		t.Errorf("a Ready Listener rechecks after %s, want only on events", d)
	}
	if d := r.recheck(a, refused, ServiceRefusedRecheck); d != ServiceRefusedRecheck {
		t.Errorf("refused again after Ready: %s, want %s", d, ServiceRefusedRecheck)
	}
	if d := refusedRecheck(1 << 20); d != ServiceRefusedRecheckMax {
		t.Errorf("refusedRecheck(huge) = %s", d)
	}
	r.forget(a)
	r.forget(b)
	if len(r.n) != 0 {
		t.Errorf("%d Listeners remembered after they were forgotten", len(r.n))
	}
}
