package listener

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// tcpGatewayAddress is the address the test's Gateway controller writes.
const tcpGatewayAddress = "10.1.2.3"

// tcpFixture is a TCPRoute class with sections tcp-0 … tcp-<n-1> of
// Gateway "shared" (in a namespace of its own) on ports 19000+i, and the
// Gateway's status address written as its controller would.
func tcpFixture(t *testing.T, ctx context.Context, e *testenv.Env, n int) (*v1alpha1.ListenerClass, string) {
	t.Helper()
	c := e.Client
	if err := testenv.InstallGatewayAPI(e.Config); err != nil {
		t.Fatal(err)
	}
	gwNS := e.Namespace(t, ctx, "gw-")
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "shared"}, Spec: gwv1.GatewaySpec{GatewayClassName: "traefik"}}
	spec := v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP, Gateway: &v1alpha1.ListenerGateway{RouteKind: v1alpha1.RouteKindTCPRoute}}
	for i := range n {
		s := fmt.Sprintf("tcp-%d", i)
		spec.Gateway.ParentRefs = append(spec.Gateway.ParentRefs, v1alpha1.GatewayParentRef{Name: "shared", Namespace: gwNS, SectionName: s})
		gw.Spec.Listeners = append(gw.Spec.Listeners, gwv1.Listener{Name: gwv1.SectionName(s), Port: gwv1.PortNumber(19000 + i), Protocol: gwv1.TCPProtocolType})
	}
	testenv.Create(t, ctx, c, gw)
	testenv.Converges(t, "gateway address written", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		gw.Status.Addresses = []gwv1.GatewayStatusAddress{{Type: ptr.To(gwv1.IPAddressType), Value: tcpGatewayAddress}}
		return c.Status().Update(ctx, gw)
	})
	return reconciletest.NewClass(t, ctx, c, spec), gwNS
}

// tcpReplica is the per-claim Listener of StatefulSet replica claim (a
// plain claim: the claim controller leaves it alone), with one port.
func tcpReplica(t *testing.T, c client.Client, ns, claim, class string) *v1alpha1.Listener {
	t.Helper()
	pvc := reconciletest.ListenerClaim(ns, claim, nil)
	pvc.Labels = nil
	testenv.Create(t, t.Context(), c, pvc)
	l := reconciletest.Listener(ns, claim, class, reconciletest.Port("kafka", 9092))
	l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: claim, UID: pvc.UID, Controller: ptr.To(true)}}
	return l
}

// tcpRouteOf waits until Listener name's route of port kafka routes
// section, and returns it.
func tcpRouteOf(t *testing.T, c client.Client, ns, name, section string) *gwv1.TCPRoute {
	t.Helper()
	rt := &gwv1.TCPRoute{}
	testenv.Converges(t, "route of "+name+" on "+section, func() error {
		if err := c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: names.RouteName(name, "kafka")}, rt); err != nil {
			return err
		}
		if len(rt.Spec.ParentRefs) != 1 || rt.Spec.ParentRefs[0].SectionName == nil || string(*rt.Spec.ParentRefs[0].SectionName) != section {
			return fmt.Errorf("parentRefs %+v, want section %s", rt.Spec.ParentRefs, section)
		}
		return nil
	})
	return rt
}

// checkTCPRoute: the route routes its one section to the Listener's
// Service port 9092, is owned by the Listener, and carries only the
// operator's labels.
func checkTCPRoute(t *testing.T, rt *gwv1.TCPRoute, listener, gwNS string) {
	t.Helper()
	p := rt.Spec.ParentRefs[0]
	if string(*p.Namespace) != gwNS || p.Name != "shared" {
		t.Errorf("parentRef %+v, want Gateway %s/shared", p, gwNS)
	}
	if len(rt.Spec.Rules) != 1 || len(rt.Spec.Rules[0].BackendRefs) != 1 || string(rt.Spec.Rules[0].BackendRefs[0].Name) != names.ServiceName(listener) || *rt.Spec.Rules[0].BackendRefs[0].Port != 9092 {
		t.Errorf("rules %+v, want Service %s port 9092", rt.Spec.Rules, names.ServiceName(listener))
	}
	if owner := metav1.GetControllerOf(rt); owner == nil || owner.Kind != "Listener" || owner.Name != listener {
		t.Errorf("owner %+v", owner)
	}
	if len(rt.Labels) != 2 || rt.Labels[v1alpha1.LabelRouteListener] != listener || len(rt.Annotations) != 0 {
		t.Errorf("labels %v annotations %v, want the operator's two labels only", rt.Labels, rt.Annotations)
	}
}

// setTCPRouteStatus writes what a Gateway controller writes for a route
// on section: Accepted with reason (True or False), ResolvedRefs True.
func setTCPRouteStatus(t *testing.T, c client.Client, rt *gwv1.TCPRoute, gwNS, section, reason string, accepted metav1.ConditionStatus) {
	t.Helper()
	testenv.Converges(t, "route status written", func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(rt), rt); err != nil {
			return err
		}
		now := metav1.Now()
		rt.Status.Parents = []gwv1.RouteParentStatus{{
			ParentRef:      gwv1.ParentReference{Namespace: ptr.To(gwv1.Namespace(gwNS)), Name: "shared", SectionName: ptr.To(gwv1.SectionName(section))},
			ControllerName: "traefik.io/gateway-controller",
			Conditions: []metav1.Condition{
				{Type: "Accepted", Status: accepted, Reason: reason, Message: "as the test says", ObservedGeneration: rt.Generation, LastTransitionTime: now},
				{Type: "ResolvedRefs", Status: metav1.ConditionTrue, Reason: "ResolvedRefs", ObservedGeneration: rt.Generation, LastTransitionTime: now},
			},
		}}
		return c.Status().Update(t.Context(), rt)
	})
}

// tcpPublished waits until Listener name is Ready and publishes the
// Gateway's address with port.
func tcpPublished(t *testing.T, c client.Client, ns, name string, port int32) {
	t.Helper()
	want := []v1alpha1.ListenerIngress{{Address: tcpGatewayAddress, AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"kafka": port}}}
	reconciletest.WaitStatus(t, t.Context(), c, ns, name, func(l *v1alpha1.Listener) error {
		if r, ok := reconciletest.ReadyReason(l); !ok || !reflect.DeepEqual(l.Status.IngressAddresses, want) {
			return fmt.Errorf("ready %v (%s), addresses %+v, want %+v", ok, r, l.Status.IngressAddresses, want)
		}
		return nil
	})
}

// TestGatewayTCPRoutes (issue 52): replica i of a TCPRoute class takes
// section i and publishes the Gateway's address with its port, keeps it
// when deleted and made again, a Listener that is not a replica takes the
// last free section; a section a foreign route holds is never taken
// over (GatewaySectionTaken, naming neither the route nor its namespace),
// a class without a free section says so (GatewaySectionsExhausted), and
// a route the Gateway does not accept keeps the Listener not Ready with
// the Gateway's reason. No label or override of the Listener reaches its
// route, and a Listener that leaves the class loses it.
func TestGatewayTCPRoutes(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class, gwNS := tcpFixture(t, ctx, e, 6)
	// A route someone else made, in a namespace of theirs, holds tcp-4.
	tenant := e.Namespace(t, ctx, "tenant-")
	squatter := &gwv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "squatter"}, Spec: gwv1.TCPRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Namespace: ptr.To(gwv1.Namespace(gwNS)), Name: "shared", SectionName: ptr.To(gwv1.SectionName("tcp-4"))}}},
		Rules:           []gwv1.TCPRouteRule{{BackendRefs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{Name: "x", Port: ptr.To(gwv1.PortNumber(1))}}}}},
	}}
	testenv.Create(t, ctx, c, squatter)

	tcpReplicasRouted(t, c, ns, class, gwNS)

	// Replica 1 deleted (its route with it, as the garbage collector
	// does) and made again: section tcp-1 again.
	old := &v1alpha1.Listener{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "data-kafka-1"}, old); err != nil {
		t.Fatal(err)
	}
	owners := old.OwnerReferences
	if err := c.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	// The operator may have removed it already (a reconcile of the
	// Listener as it went): either way it is gone, as after the collector.
	if err := c.Delete(ctx, &gwv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.RouteName("data-kafka-1", "kafka")}}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	testenv.Converges(t, "replica 1 gone", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(old), old); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	again := reconciletest.Listener(ns, "data-kafka-1", class.Name, reconciletest.Port("kafka", 9092))
	again.OwnerReferences = owners
	testenv.Create(t, ctx, c, again)
	rt := tcpRouteOf(t, c, ns, "data-kafka-1", "tcp-1")
	setTCPRouteStatus(t, c, rt, gwNS, "tcp-1", "Accepted", metav1.ConditionTrue)
	tcpPublished(t, c, ns, "data-kafka-1", 19001)

	// A Listener that is no replica: the last free section, tcp-5.
	// Its override of the route (admitted while the webhooks were down)
	// moves neither the route nor its section, and labels nothing.
	other := reconciletest.Listener(ns, "other", class.Name, reconciletest.Port("kafka", 9092))
	other.Spec.ObjectOverrides = []runtime.RawExtension{{Raw: fmt.Appendf(nil,
		`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"TCPRoute","metadata":{"name":%q,"labels":{"team":"a"}},"spec":{"parentRefs":[{"name":"shared","namespace":%q,"sectionName":"tcp-0"}]}}`,
		names.RouteName("other", "kafka"), gwNS)}}
	testenv.Create(t, ctx, c, other)
	checkTCPRoute(t, tcpRouteOf(t, c, ns, "other", "tcp-5"), "other", gwNS)
	got := reconciletest.WaitReason(t, ctx, c, ns, "other", v1alpha1.ReasonInvalid)
	if msg := readyMessage(got); !strings.Contains(msg, "a TCPRoute is exposure") {
		t.Errorf("message %q, want the override refused", msg)
	}

	tcpSectionsHeld(t, c, ns, class.Name, gwNS, tenant, squatter)

	// The Gateway stops admitting the namespace: not Ready, its reason;
	// the address stays.
	rt = tcpRouteOf(t, c, ns, "data-kafka-0", "tcp-0")
	setTCPRouteStatus(t, c, rt, gwNS, "tcp-0", string(gwv1.RouteReasonNotAllowedByListeners), metav1.ConditionFalse)
	got = reconciletest.WaitReason(t, ctx, c, ns, "data-kafka-0", v1alpha1.ReasonRouteNotAccepted)
	if msg := readyMessage(got); !strings.Contains(msg, "NotAllowedByListeners") || !strings.Contains(msg, "admit this namespace") {
		t.Errorf("message %q, want the reason and the fix", msg)
	}
	if len(got.Status.IngressAddresses) != 1 || got.Status.IngressAddresses[0].Address != tcpGatewayAddress {
		t.Errorf("addresses %+v after the route was refused, want them kept", got.Status.IngressAddresses)
	}

	// A Listener that leaves the class loses its route (the operator
	// deletes it: the Gateway would go on routing the section).
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "other"}, other); err != nil {
		t.Fatal(err)
	}
	other.Spec.ClassName = nil
	if err := c.Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	testenv.Converges(t, "the route of a Listener that left the class deleted", func() error {
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.RouteName("other", "kafka")}, &gwv1.TCPRoute{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
}

// tcpReplicasRouted: three replicas take sections tcp-0, tcp-1 and tcp-2
// and publish the Gateway's address with their ports once their routes
// are accepted; a settled one is neither reconciled nor written again.
func tcpReplicasRouted(t *testing.T, c client.Client, ns string, class *v1alpha1.ListenerClass, gwNS string) {
	t.Helper()
	ctx := t.Context()
	// Three replicas: sections tcp-0, tcp-1, tcp-2.
	for i := range 3 {
		l := tcpReplica(t, c, ns, fmt.Sprintf("data-kafka-%d", i), class.Name)
		l.Labels = map[string]string{"team": "a", "listeners.stackable.tech/listener": "evil"}
		testenv.Create(t, ctx, c, l)
	}
	for i := range 3 {
		name, section := fmt.Sprintf("data-kafka-%d", i), fmt.Sprintf("tcp-%d", i)
		reconciletest.WaitReason(t, ctx, c, ns, name, v1alpha1.ReasonRouteNotAccepted)
		rt := tcpRouteOf(t, c, ns, name, section)
		checkTCPRoute(t, rt, name, gwNS)
		setTCPRouteStatus(t, c, rt, gwNS, section, "Accepted", metav1.ConditionTrue)
		tcpPublished(t, c, ns, name, int32(19000+i))
	}
	// Settled: no more reconciles, no more writes (a route that differs
	// from what the API server defaulted would be applied at every look).
	key := types.NamespacedName{Namespace: ns, Name: "data-kafka-0"}
	testenv.Converges(t, "the Listener settled", func() error { return reconciletest.Reconciles.Idle(ControllerName, key) })
	before := reconciletest.Reconciles.Count(ControllerName, key)
	time.Sleep(3 * time.Second)
	if n := reconciletest.Reconciles.Count(ControllerName, key) - before; n > 0 {
		t.Errorf("%d reconciles of a settled TCP Listener in 3 s", n)
	}
	l0 := &v1alpha1.Listener{}
	if err := c.Get(ctx, key, l0); err != nil {
		t.Fatal(err)
	}
	rt := tcpRouteOf(t, c, ns, "data-kafka-0", "tcp-0")
	want := gateway.TCPRoute(l0, gateway.TCPBinding{Port: l0.Spec.Ports[0], Index: 0, Parent: class.Spec.Gateway.ParentRefs[0], RouteName: rt.Name}, names.ServiceName(l0.Name))
	if !tcpRouteUpToDate(rt, want) {
		t.Errorf("the route as the API server defaulted it is not up to date with what the operator wants: %+v", rt.Spec)
	}

}

// tcpSectionsHeld: a replica whose section a foreign route holds does not
// take it over; a Listener that is no replica takes the last section
// that is free, and none is left for the next.
func tcpSectionsHeld(t *testing.T, c client.Client, ns, class, gwNS, tenant string, squatter *gwv1.TCPRoute) {
	t.Helper()
	ctx := t.Context()
	// Replica 4's section is the squatter's: not taken over.
	testenv.Create(t, ctx, c, tcpReplica(t, c, ns, "data-kafka-4", class))
	got := reconciletest.WaitReason(t, ctx, c, ns, "data-kafka-4", v1alpha1.ReasonGatewaySectionTaken)
	msg := readyMessage(got)
	if !strings.Contains(msg, `section "tcp-4" of Gateway `+gwNS+"/shared") || strings.Contains(msg, tenant) || strings.Contains(msg, "squatter") {
		t.Errorf("message %q, want the Gateway and section, and neither the route nor its namespace", msg)
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.RouteName("data-kafka-4", "kafka")}, &gwv1.TCPRoute{}); !apierrors.IsNotFound(err) {
		t.Errorf("a route was made on a section someone else holds: %v", err)
	}
	after := &gwv1.TCPRoute{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(squatter), after); err != nil || after.ResourceVersion != squatter.ResourceVersion {
		t.Errorf("the foreign route was touched: %v, resourceVersion %s, was %s", err, after.ResourceVersion, squatter.ResourceVersion)
	}

	// Non-replicas: the next takes tcp-3 (tcp-4 is held); then none is left.
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "more", class, reconciletest.Port("kafka", 9092)))
	tcpRouteOf(t, c, ns, "more", "tcp-3")
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "last", class, reconciletest.Port("kafka", 9092)))
	got = reconciletest.WaitReason(t, ctx, c, ns, "last", v1alpha1.ReasonGatewaySectionsExhausted)
	if msg := readyMessage(got); !strings.Contains(msg, "has 6 section(s)") || !strings.Contains(msg, "add sections") {
		t.Errorf("message %q, want the count and the fix", msg)
	}

}
