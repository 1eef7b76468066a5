package listener

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// TestGatewayClass: a Listener of a gateway class before and after the
// Gateway API is installed (the operator runs without it, and notices the
// install), with its Gateway missing, wrong and right, and with its route
// accepted, refused and tampered with. The test writes the route's status
// as a Gateway controller would (the e2e test runs Traefik). It removes
// the Gateway API whichever test installed it, and runs an operator of its
// own started without it: it no longer has to run before the tests that
// install it (TestGatewayTCPBootstrap had to sort after it).
func TestGatewayClass(t *testing.T) {
	e, ctx, _ := reconciletest.Setup(t)
	c := e.Client
	uninstallGatewayAPI(t, c)
	ns := reconciletest.OwnLeaderNamespace(t)
	reconciletest.StartLeader(t, ns)
	gwNS := e.Namespace(t, ctx, "gw-")
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeClusterIP,
		Hostname:    &v1alpha1.HostnamePolicy{Template: "{listener}.{namespace}.gw.test"},
		Gateway:     &v1alpha1.ListenerGateway{ParentRefs: []v1alpha1.GatewayParentRef{{Name: "shared", Namespace: gwNS, SectionName: "tls"}}},
	})
	l := reconciletest.Listener(ns, "broker-0", class.Name, reconciletest.Port("kafka", 9093))
	l.Labels = map[string]string{"team": "a"}
	testenv.Create(t, ctx, c, l)
	host := "broker-0." + ns + ".gw.test"

	// 1. No Gateway API: not Ready, with what to install.
	got := reconciletest.WaitReason(t, ctx, c, ns, l.Name, v1alpha1.ReasonGatewayAPIMissing)
	if msg := readyMessage(got); !strings.Contains(msg, "install its CRDs") {
		t.Errorf("message %q, want it to say what to install", msg)
	}
	// 2. Installed later: noticed without a restart; no Gateway yet.
	start := time.Now()
	if err := testenv.InstallGatewayAPI(e.Config); err != nil {
		t.Fatal(err)
	}
	got = reconciletest.WaitReason(t, ctx, c, ns, l.Name, v1alpha1.ReasonGatewayNotFound)
	t.Logf("Gateway API install noticed after %s", time.Since(start).Round(time.Second))
	if msg := readyMessage(got); !strings.Contains(msg, "Gateway "+gwNS+"/shared") {
		t.Errorf("message %q, want it to name the Gateway", msg)
	}
	// 3. A Gateway whose listener terminates TLS: refused, with the fix.
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "shared"}, Spec: gwv1.GatewaySpec{
		GatewayClassName: "traefik",
		Listeners: []gwv1.Listener{{Name: "tls", Port: 9443, Protocol: gwv1.TLSProtocolType, Hostname: ptr.To(gwv1.Hostname("*.gw.test")),
			TLS: &gwv1.ListenerTLSConfig{Mode: ptr.To(gwv1.TLSModeTerminate), CertificateRefs: []gwv1.SecretObjectReference{{Name: "gw-cert"}}}}},
	}}
	testenv.Create(t, ctx, c, gw)
	got = reconciletest.WaitReason(t, ctx, c, ns, l.Name, v1alpha1.ReasonGatewayListenerInvalid)
	if msg := readyMessage(got); !strings.Contains(msg, "tls.mode Terminate") || !strings.Contains(msg, "Passthrough") {
		t.Errorf("message %q, want the mode and the fix", msg)
	}
	// 4. Passthrough: the route is made, and waits for the controller.
	gw.Spec.Listeners[0].TLS = &gwv1.ListenerTLSConfig{Mode: ptr.To(gwv1.TLSModePassthrough)}
	if err := c.Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
	reconciletest.WaitReason(t, ctx, c, ns, l.Name, v1alpha1.ReasonRouteNotAccepted)
	route := &gwv1.TLSRoute{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.RouteName(l.Name, "kafka")}, route); err != nil {
		t.Fatal(err)
	}
	checkRoute(t, route, host, gwNS)
	if len(got.Status.IngressAddresses) != 0 {
		t.Errorf("published %v before the route is attached", got.Status.IngressAddresses)
	}
	// 5. Accepted and resolved: Ready, the name with the Gateway's port.
	setRouteStatus(t, ctx, c, route, gwNS, "Accepted", metav1.ConditionTrue)
	want := []v1alpha1.ListenerIngress{{Address: host, AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"kafka": 9443}}}
	reconciletest.WaitStatus(t, ctx, c, ns, l.Name, func(l *v1alpha1.Listener) error {
		if r, ok := reconciletest.ReadyReason(l); !ok || !reflect.DeepEqual(l.Status.IngressAddresses, want) {
			return fmt.Errorf("ready %v (%s), addresses %+v, want %+v", ok, r, l.Status.IngressAddresses, want)
		}
		return nil
	})
	// Settled: no more reconciles, no more writes (a route that differs
	// from what the API server defaulted would be applied at every look).
	key := types.NamespacedName{Namespace: ns, Name: l.Name}
	testenv.Converges(t, "the Listener settled", func() error { return reconciletest.Reconciles.Idle(ControllerName, key) })
	before := reconciletest.Reconciles.Count(ControllerName, key)
	time.Sleep(3 * time.Second)
	if n := reconciletest.Reconciles.Count(ControllerName, key) - before; n > 0 {
		t.Errorf("%d reconciles of a settled gateway Listener in 3 s", n)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(route), route); err != nil {
		t.Fatal(err)
	}
	if have := route.DeepCopy(); !routeUpToDate(have, gatewayRoute(t, c, ns, l.Name, host, gwNS)) {
		t.Errorf("the route as the API server defaulted it is not up to date with what the operator wants: %+v", have.Spec)
	}
	// 6. The Gateway stops admitting the namespace: not Ready, the reason
	// and the fix; the address stays published.
	setRouteStatus(t, ctx, c, route, gwNS, string(gwv1.RouteReasonNotAllowedByListeners), metav1.ConditionFalse)
	got = reconciletest.WaitReason(t, ctx, c, ns, l.Name, v1alpha1.ReasonRouteNotAccepted)
	if msg := readyMessage(got); !strings.Contains(msg, "NotAllowedByListeners") || !strings.Contains(msg, "admit this namespace") {
		t.Errorf("message %q, want the reason and the fix", msg)
	}
	if !reflect.DeepEqual(got.Status.IngressAddresses, want) {
		t.Errorf("addresses %+v after the route was refused, want %+v kept", got.Status.IngressAddresses, want)
	}
	// 7. A hand edit of the route is undone.
	if err := c.Get(ctx, client.ObjectKeyFromObject(route), route); err != nil {
		t.Fatal(err)
	}
	route.Spec.Hostnames = []gwv1.Hostname{"stolen.gw.test"}
	if err := c.Update(ctx, route); err != nil {
		t.Fatal(err)
	}
	testenv.Converges(t, "route restored", func() error {
		r := &gwv1.TLSRoute{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(route), r); err != nil {
			return err
		}
		if len(r.Spec.Hostnames) != 1 || string(r.Spec.Hostnames[0]) != host {
			return fmt.Errorf("hostnames %v", r.Spec.Hostnames)
		}
		return nil
	})
	// 8. A route someone else made already carries a Listener's name: that
	// Listener gets no route and publishes nothing.
	foreign := &gwv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "squatter"}, Spec: gwv1.TLSRouteSpec{
		Hostnames: []gwv1.Hostname{gwv1.Hostname("broker-1." + ns + ".gw.test")},
		Rules:     []gwv1.TLSRouteRule{{BackendRefs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{Name: "x", Port: ptr.To(gwv1.PortNumber(1))}}}}},
	}}
	testenv.Create(t, ctx, c, foreign)
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "broker-1", class.Name, reconciletest.Port("kafka", 9093)))
	got = reconciletest.WaitReason(t, ctx, c, ns, "broker-1", v1alpha1.ReasonHostnameConflict)
	if cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionHostnamePublished); cond == nil || !strings.Contains(cond.Message, "a route the operator did not make") || strings.Contains(cond.Message, gwNS) {
		t.Errorf("HostnamePublished %+v, want it to blame a foreign route without naming its namespace", cond)
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.RouteName("broker-1", "kafka")}, &gwv1.TLSRoute{}); !apierrors.IsNotFound(err) {
		t.Errorf("a route was made for a name someone else routes: %v", err)
	}
	// ... until that route goes.
	if err := c.Delete(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	reconciletest.WaitReason(t, ctx, c, ns, "broker-1", v1alpha1.ReasonRouteNotAccepted)
}

func readyMessage(l *v1alpha1.Listener) string {
	if c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		return c.Message
	}
	return ""
}

// checkRoute: the route routes host from the class's Gateway listener to
// the Listener's Service, is owned by the Listener, and carries none of
// the Listener's labels.
func checkRoute(t *testing.T, r *gwv1.TLSRoute, host, gwNS string) {
	t.Helper()
	if len(r.Spec.Hostnames) != 1 || string(r.Spec.Hostnames[0]) != host {
		t.Errorf("hostnames %v, want [%s]", r.Spec.Hostnames, host)
	}
	if len(r.Spec.ParentRefs) != 1 || string(*r.Spec.ParentRefs[0].Namespace) != gwNS || r.Spec.ParentRefs[0].Name != "shared" || string(*r.Spec.ParentRefs[0].SectionName) != "tls" {
		t.Errorf("parentRefs %+v", r.Spec.ParentRefs)
	}
	if len(r.Spec.Rules) != 1 || len(r.Spec.Rules[0].BackendRefs) != 1 || r.Spec.Rules[0].BackendRefs[0].Name != "broker-0" || *r.Spec.Rules[0].BackendRefs[0].Port != 9093 {
		t.Errorf("rules %+v, want the Service broker-0 port 9093", r.Spec.Rules)
	}
	if owner := metav1.GetControllerOf(r); owner == nil || owner.Kind != "Listener" || owner.Name != "broker-0" {
		t.Errorf("owner %+v", owner)
	}
	if _, ok := r.Labels["team"]; ok {
		t.Errorf("the Listener's label reached the route: %v", r.Labels)
	}
	if m := r.ManagedFields; len(m) == 0 || m[0].Manager != v1alpha1.RouteFieldManager {
		t.Errorf("managed fields %+v, want the route field manager", m)
	}
}

// setRouteStatus writes the status a Gateway controller writes: Accepted
// with reason (True or False) and ResolvedRefs True.
func setRouteStatus(t *testing.T, ctx context.Context, c client.Client, r *gwv1.TLSRoute, gwNS, reason string, accepted metav1.ConditionStatus) {
	t.Helper()
	testenv.Converges(t, "route status written", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
			return err
		}
		now := metav1.Now()
		r.Status.Parents = []gwv1.RouteParentStatus{{
			ParentRef:      gwv1.ParentReference{Namespace: ptr.To(gwv1.Namespace(gwNS)), Name: "shared", SectionName: ptr.To(gwv1.SectionName("tls"))},
			ControllerName: "traefik.io/gateway-controller",
			Conditions: []metav1.Condition{
				{Type: "Accepted", Status: accepted, Reason: reason, Message: "as the test says", ObservedGeneration: r.Generation, LastTransitionTime: now},
				{Type: "ResolvedRefs", Status: metav1.ConditionTrue, Reason: "ResolvedRefs", ObservedGeneration: r.Generation, LastTransitionTime: now},
			},
		}}
		return c.Status().Update(ctx, r)
	})
}

// gatewayRoute is the route the operator wants for Listener name.
func gatewayRoute(t *testing.T, c client.Client, ns, name, host, gwNS string) *gwv1.TLSRoute {
	t.Helper()
	l := &v1alpha1.Listener{}
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, l); err != nil {
		t.Fatal(err)
	}
	b := gateway.Binding{Port: l.Spec.Ports[0], Parents: []v1alpha1.GatewayParentRef{{Name: "shared", Namespace: gwNS, SectionName: "tls"}}, RouteName: name}
	return gateway.Route(l, b, host, name)
}

// uninstallGatewayAPI deletes the Gateway API's CRDs (testenv.InstallGatewayAPI
// installs them again) and waits until they are gone: the Gateway API
// missing, as on a cluster without it.
func uninstallGatewayAPI(t *testing.T, c client.Client) {
	t.Helper()
	for _, kind := range []string{"gatewayclasses", "gateways", "tlsroutes", "tcproutes"} {
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		crd.SetName(kind + "." + gwv1.GroupName)
		if err := c.Delete(t.Context(), crd); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		testenv.Converges(t, "CRD "+crd.GetName()+" deleted", func() error {
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(crd), crd); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there: %v", err)
			}
			return nil
		})
	}
}
