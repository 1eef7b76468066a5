package listener

import (
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// holdLabel on a route of the test's namespace makes holdRoutes' policy
// refuse its deletion.
const holdLabel = "test.listeners.stackable.tech/hold"

// holdRoutes keeps the garbage collector (which the suite runs) from
// deleting the routes of namespace ns that carry holdLabel, for the rest
// of t: the window in which a cluster's collector has not run yet, made
// as long as the test needs.
func holdRoutes(t *testing.T, e *testenv.Env, ns string) {
	t.Helper()
	if err := testenv.InstallGatewayAPI(e.Config); err != nil {
		t.Fatal(err)
	}
	probe := &gwv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "probe-", Labels: map[string]string{holdLabel: "true"}},
		Spec: gwv1.TCPRouteSpec{Rules: []gwv1.TCPRouteRule{{BackendRefs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{Name: "x", Port: ptr.To(gwv1.PortNumber(1))}}}}}}}
	holdDeletes(t, e.Client, ns, gwv1.GroupName, []string{"tlsroutes", "tcproutes"}, probe)
}

// holdDeletes refuses the deletion of the objects of resources (of API
// group) in namespace ns that carry holdLabel, for the rest of t, and
// waits until the policy refuses a dry-run delete of probe (one of them,
// labelled, made here).
func holdDeletes(t *testing.T, c client.Client, ns, group string, resources []string, probe client.Object) {
	t.Helper()
	ctx := t.Context()
	admissionPolicy(t, c, ns, []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}, group, resources,
		fmt.Sprintf("!has(oldObject.metadata.labels) || !(%q in oldObject.metadata.labels)", holdLabel), "held by the test")
	testenv.Create(t, ctx, c, probe)
	testenv.Converges(t, "the policy in force", func() error {
		err := c.Delete(ctx, probe, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "held by the test") {
			return fmt.Errorf("dry-run delete of a held %T: %v", probe, err)
		}
		return nil
	})
}

// hold labels the route at key with holdLabel.
func hold(t *testing.T, c client.Client, key types.NamespacedName, obj client.Object) {
	t.Helper()
	testenv.Converges(t, "route "+key.Name+" held", func() error {
		if err := c.Get(t.Context(), key, obj); err != nil {
			return err
		}
		labels := obj.GetLabels()
		labels[holdLabel] = "true"
		obj.SetLabels(labels)
		return c.Update(t.Context(), obj)
	})
}

// recreate deletes Listener name and makes it again under the same name,
// and returns the new one.
func recreate(t *testing.T, c client.Client, ns, name string, l *v1alpha1.Listener) *v1alpha1.Listener {
	t.Helper()
	ctx := t.Context()
	old := &v1alpha1.Listener{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, old); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	testenv.Converges(t, name+" gone", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(old), &v1alpha1.Listener{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	testenv.Create(t, ctx, c, l)
	if l.UID == old.UID {
		t.Fatal("the recreated Listener has the old one's UID")
	}
	return l
}

// controlledBy waits until the object at key is controlled by l.
func controlledBy(t *testing.T, c client.Client, key types.NamespacedName, obj client.Object, l *v1alpha1.Listener) {
	t.Helper()
	testenv.Converges(t, key.Name+" controlled by the recreated Listener", func() error {
		if err := c.Get(t.Context(), key, obj); err != nil {
			return err
		}
		if !metav1.IsControlledBy(obj, l) {
			now := &v1alpha1.Listener{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(l), now); err != nil {
				return err
			}
			return fmt.Errorf("controller %+v, want UID %s (Listener: %s)", metav1.GetControllerOf(obj), l.UID, readyMessage(now))
		}
		return nil
	})
}

// TestGatewayRecreatedListener: a Listener of a gateway class deleted and
// made again under its name gets its routes and becomes Ready without
// waiting for the garbage collector to remove the old one's routes (it
// read GatewaySectionTaken, or ForeignRoute, until then: the suite's
// collector is held off by holdRoutes). Foreign routes stay untouched
// (TestGatewayTCPRoutes, TestGatewayRouteNames).
func TestGatewayRecreatedListener(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	holdRoutes(t, e, ns)
	t.Run("tcproute", func(t *testing.T) {
		class, gwNS := tcpFixture(t, ctx, e, 2)
		testenv.Create(t, ctx, c, reconciletest.Listener(ns, "tcp", class.Name, reconciletest.Port("kafka", 9092)))
		rt := tcpRouteOf(t, c, ns, "tcp", "tcp-1")
		setTCPRouteStatus(t, c, rt, gwNS, "tcp-1", "Accepted", metav1.ConditionTrue)
		tcpPublished(t, c, ns, "tcp", 19001)
		key := types.NamespacedName{Namespace: ns, Name: names.RouteName("tcp", "kafka")}
		hold(t, c, key, rt)

		l := recreate(t, c, ns, "tcp", reconciletest.Listener(ns, "tcp", class.Name, reconciletest.Port("kafka", 9092)))
		controlledBy(t, c, key, rt, l)
		setTCPRouteStatus(t, c, rt, gwNS, "tcp-1", "Accepted", metav1.ConditionTrue)
		tcpPublished(t, c, ns, "tcp", 19001)
	})
	t.Run("tlsroute", func(t *testing.T) {
		class, gwNS := gatewayFixture(t, ctx, e, "tls")
		testenv.Create(t, ctx, c, reconciletest.Listener(ns, "tls", class.Name, reconciletest.Port("tls", 9093)))
		reconciletest.WaitReason(t, ctx, c, ns, "tls", v1alpha1.ReasonRouteNotAccepted)
		key := types.NamespacedName{Namespace: ns, Name: names.RouteName("tls", "tls")}
		rt := &gwv1.TLSRoute{}
		hold(t, c, key, rt)

		l := recreate(t, c, ns, "tls", reconciletest.Listener(ns, "tls", class.Name, reconciletest.Port("tls", 9093)))
		controlledBy(t, c, key, rt, l)
		setRouteStatus(t, ctx, c, rt, gwNS, "Accepted", metav1.ConditionTrue)
		reconciletest.WaitReason(t, ctx, c, ns, "tls", v1alpha1.ReasonReady)
	})
}
