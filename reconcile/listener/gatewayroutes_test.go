package listener

import (
	"context"
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// gatewayFixture is a gateway class routing through Gateway "shared" in a
// namespace of its own, with Passthrough listeners named after sections.
func gatewayFixture(t *testing.T, ctx context.Context, e *testenv.Env, sections ...string) (*v1alpha1.ListenerClass, string) {
	t.Helper()
	c := e.Client
	if err := testenv.InstallGatewayAPI(e.Config); err != nil {
		t.Fatal(err)
	}
	gwNS := e.Namespace(t, ctx, "gw-")
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "shared"}, Spec: gwv1.GatewaySpec{GatewayClassName: "traefik"}}
	spec := v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP,
		Hostname: &v1alpha1.HostnamePolicy{Template: "{listener}.{namespace}.gw.test"}, Gateway: &v1alpha1.ListenerGateway{}}
	for i, s := range sections {
		spec.Gateway.ParentRefs = append(spec.Gateway.ParentRefs, v1alpha1.GatewayParentRef{Name: "shared", Namespace: gwNS, SectionName: s})
		gw.Spec.Listeners = append(gw.Spec.Listeners, gwv1.Listener{Name: gwv1.SectionName(s), Port: gwv1.PortNumber(9443 + i), Protocol: gwv1.TLSProtocolType,
			Hostname: ptr.To(gwv1.Hostname("*.gw.test")), TLS: &gwv1.ListenerTLSConfig{Mode: ptr.To(gwv1.TLSModePassthrough)}})
	}
	testenv.Create(t, ctx, c, gw)
	return reconciletest.NewClass(t, ctx, c, spec), gwNS
}

// routesOf are the names of the routes the operator made for Listener
// name (its owner).
func routesOf(ctx context.Context, c client.Client, ns, name string) ([]string, error) {
	var routes gwv1.TLSRouteList
	if err := c.List(ctx, &routes, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var out []string
	for _, r := range routes.Items {
		if owner := metav1.GetControllerOf(&r); owner != nil && owner.Kind == "Listener" && owner.Name == name {
			out = append(out, r.Name)
		}
	}
	return out, nil
}

// TestGatewayRouteNames (issue 48, cases 4 and 5): Listener "web" with
// ports tls and admin and Listener "web-tls" each get their routes (with
// routes named <listener>-<port>, one of them stayed ForeignRoute); a
// Listener whose name is longer than a label value gets its route (its
// name was a label value the API server refused on every retry, and Ready
// said nothing).
func TestGatewayRouteNames(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class, _ := gatewayFixture(t, ctx, e, "tls", "admin")
	// 81 characters; its hostname's labels stay under 63.
	long := strings.Repeat("l", 40) + "." + strings.Repeat("m", 40)
	testenv.Create(t, ctx, c,
		reconciletest.Listener(ns, "web", class.Name, reconciletest.Port("tls", 9093), reconciletest.Port("admin", 9094)),
		reconciletest.Listener(ns, "web-tls", class.Name, reconciletest.Port("tls", 9093)),
		reconciletest.Listener(ns, long, class.Name, reconciletest.Port("tls", 9093)))
	for name, routes := range map[string]int{"web": 2, "web-tls": 1, long: 1} {
		// Routes made, waiting for the Gateway's controller (none runs).
		reconciletest.WaitReason(t, ctx, c, ns, name, v1alpha1.ReasonRouteNotAccepted)
		got, err := routesOf(ctx, c, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != routes {
			t.Errorf("Listener %.20s…: routes %v, want %d", name, got, routes)
		}
		for _, r := range got {
			if msgs := validation.IsDNS1123Subdomain(r); len(msgs) > 0 {
				t.Errorf("route %q: %v", r, msgs)
			}
		}
	}
}

// TestGatewayRoutePredecessor: a route named as before routes were named
// uniquely (the Listener's own name) keeps routing until its successor is
// attached, and is deleted then: an upgrade does not unroute a Listener.
func TestGatewayRoutePredecessor(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class, gwNS := gatewayFixture(t, ctx, e, "tls")
	l := reconciletest.Listener(ns, "broker-0", class.Name, reconciletest.Port("kafka", 9093))
	testenv.Create(t, ctx, c, l)
	// As the earlier version made it: named after the Listener.
	old := gatewayRoute(t, c, ns, l.Name, "broker-0."+ns+".gw.test", gwNS)
	old.Labels[v1alpha1.LabelRouteListener] = l.Name
	testenv.Converges(t, "the predecessor route made", func() error {
		err := c.Create(ctx, old.DeepCopy())
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	setRouteStatus(t, ctx, c, old, gwNS, "Accepted", metav1.ConditionTrue)
	reconciletest.WaitReason(t, ctx, c, ns, l.Name, v1alpha1.ReasonRouteNotAccepted)
	if err := c.Get(ctx, client.ObjectKeyFromObject(old), &gwv1.TLSRoute{}); err != nil {
		t.Fatalf("the predecessor route before its successor is attached: %v", err)
	}
	routes, err := routesOf(ctx, c, ns, l.Name)
	if err != nil {
		t.Fatal(err)
	}
	var successor *gwv1.TLSRoute
	for _, name := range routes {
		if name != old.Name {
			successor = &gwv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		}
	}
	if successor == nil {
		t.Fatalf("routes %v, want a successor of %s", routes, old.Name)
	}
	setRouteStatus(t, ctx, c, successor, gwNS, "Accepted", metav1.ConditionTrue)
	reconciletest.WaitReason(t, ctx, c, ns, l.Name, v1alpha1.ReasonReady)
	testenv.Converges(t, "the predecessor route deleted", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(old), &gwv1.TLSRoute{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("predecessor: %v", err)
		}
		return nil
	})
}

// TestGatewayRouteRefused (issue 48, case 5): a route the API server
// refuses (here an admission policy) is a Ready reason that carries its
// answer, not only retries in the operator's log; once the policy goes,
// the route is made without an event of the Listener's.
func TestGatewayRouteRefused(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class, _ := gatewayFixture(t, ctx, e, "tls")
	binding := routePolicy(t, c, ns, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		[]string{"tlsroutes"}, "false", "no TLSRoutes in this namespace, says the test")
	probe := &gwv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}, Spec: gwv1.TLSRouteSpec{
		Hostnames: []gwv1.Hostname{"probe.gw.test"},
		Rules:     []gwv1.TLSRouteRule{{BackendRefs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{Name: "x", Port: ptr.To(gwv1.PortNumber(1))}}}}},
	}}
	testenv.Converges(t, "the policy in force", func() error {
		err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "says the test") {
			return fmt.Errorf("dry-run create of a route: %v", err)
		}
		return nil
	})

	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "refused", class.Name, reconciletest.Port("kafka", 9093)))
	got := reconciletest.WaitReason(t, ctx, c, ns, "refused", v1alpha1.ReasonRouteRefused)
	if msg := readyMessage(got); !strings.Contains(msg, "no TLSRoutes in this namespace, says the test") {
		t.Errorf("Ready message %q, want the API server's answer", msg)
	}
	if err := c.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	reconciletest.WaitReason(t, ctx, c, ns, "refused", v1alpha1.ReasonRouteNotAccepted)
}

// routePolicy makes an admission policy that refuses the ops on the
// Gateway API's resources in namespace ns unless expr holds, with msg,
// for the rest of t; it returns its binding (deleting it lifts the
// policy).
func routePolicy(t *testing.T, c client.Client, ns string, ops []admissionregistrationv1.OperationType, resources []string, expr, msg string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	t.Helper()
	return admissionPolicy(t, c, ns, ops, gwv1.GroupName, resources, expr, msg)
}

// admissionPolicy is routePolicy for the resources of any API group.
func admissionPolicy(t *testing.T, c client.Client, ns string, ops []admissionregistrationv1.OperationType, group string, resources []string, expr, msg string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	t.Helper()
	ctx := t.Context()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{GenerateName: "routes-"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: ops,
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: resources},
				}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expr, Message: msg}},
		}}
	testenv.Create(t, ctx, c, policy)
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "routes-"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}}}}
	testenv.Create(t, ctx, c, binding)
	t.Cleanup(func() {
		_ = c.Delete(context.WithoutCancel(ctx), binding)
		_ = c.Delete(context.WithoutCancel(ctx), policy)
	})
	return binding
}
