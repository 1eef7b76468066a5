//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The TCP sections of the shared Gateway (testdata/gateway/traefik.yaml):
// tcp-0..tcp-2, protocol TCP, one Traefik entry point each, admitting
// TCPRoutes from the namespaces labelled gateway-access=allowed.
var gatewayTCPSections = []string{"tcp-0", "tcp-1", "tcp-2"}

// Issue 52, the data plane without the operator: Traefik (experimental
// channel) accepts a hand-made TCPRoute written as gateway.networking.k8s.io/v1
// (which it reads as v1alpha2: the Experimental CRD serves both, without
// conversion), and a client on the host reaches the plain-TCP pod behind it
// on the section's port of the Gateway's one address. The other sections
// route nothing; a route from a namespace the sections do not admit is not
// Accepted, with the reason a user reads.
func TestGatewayTraefikTCPRoute(t *testing.T) {
	ctx := t.Context()
	gw := installGateway(t)
	ns := namespace(t, ctx, "e2e-gw-tcp")
	allowGatewayRoutes(t, ctx, ns)
	labels := map[string]string{"app": "plain"}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: labels,
			Ports: []corev1.ServicePort{{Name: "http", Port: 9092, TargetPort: intstr.FromString("http")}}},
	}
	for _, o := range []client.Object{plainDemoPod(ns, "plain-0", labels), svc} {
		if err := k8s.client.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	section := gatewayTCPSections[0]
	created := time.Now()
	if err := k8s.client.Create(ctx, tcpRoute(ns, "plain-0", section, "plain", 9092)); err != nil {
		t.Fatalf("create TCPRoute (v1): %v", err)
	}
	eventually(t, ctx, time.Minute, "TCPRoute plain-0 Accepted and ResolvedRefs", func(ctx context.Context) (bool, string) {
		accepted, resolved, msg := tcpRouteAttached(ctx, ns, "plain-0", section)
		return accepted && resolved, msg
	})
	t.Logf("TCPRoute %s/plain-0 Accepted and ResolvedRefs by Traefik within %s of its create", ns, time.Since(created).Round(100*time.Millisecond))
	podsReady(t, ctx, ns, "plain", 1, podTimeout)
	port := strconv.Itoa(int(gw.Ports[section]))
	answers(t, ctx, gw.Address, port, "plain-0")
	t.Logf("%s:%s (section %s) answered by plain-0 %s after the route's create", gw.Address, port, section, time.Since(created).Round(10*time.Millisecond))
	// A section no route holds is an entry point without a TCP router:
	// Traefik answers HTTP there itself (404), never with the pod.
	for _, other := range gatewayTCPSections[1:] {
		if body, err := httpGet(ctx, gw.Address, strconv.Itoa(int(gw.Ports[other]))); err == nil && body == "hello from plain-0" {
			t.Errorf("section %s, which no route holds, reached plain-0", other)
		}
	}

	denied := namespace(t, ctx, "e2e-gw-tcp-denied")
	if err := k8s.client.Create(ctx, tcpRoute(denied, "plain-0", gatewayTCPSections[1], "plain", 9092)); err != nil {
		t.Fatalf("create TCPRoute in %s: %v", denied, err)
	}
	eventually(t, ctx, time.Minute, "the TCPRoute of a namespace the section does not admit is not Accepted", func(ctx context.Context) (bool, string) {
		conds, _, err := tcpRouteParentConditions(ctx, denied, "plain-0", gatewayTCPSections[1])
		if err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(conds, string(gwv1.RouteConditionAccepted))
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == string(gwv1.RouteReasonNotAllowedByListeners), fmt.Sprintf("%+v", conds)
	})
}

// plainDemoPod is the demo server answering plain HTTP (over TCP, no TLS)
// on its port "http" (8080) with its pod name.
func plainDemoPod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "hello", Image: demoImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Args: []string{"-listen", ":8080"},
				Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
			}},
		},
	}
}

// tcpRoute is a v1 TCPRoute to Service backend:port, attached to one
// section of the shared Gateway.
func tcpRoute(ns, name, section, backend string, port int32) *gwv1.TCPRoute {
	return &gwv1.TCPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gwv1.TCPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{
				Name: gatewayName, Namespace: ptr.To(gwv1.Namespace(gatewayNamespace)), SectionName: ptr.To(gwv1.SectionName(section)),
			}}},
			Rules: []gwv1.TCPRouteRule{{BackendRefs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{
				Name: gwv1.ObjectName(backend), Port: ptr.To(gwv1.PortNumber(port)),
			}}}}},
		},
	}
}

// tcpRouteParentConditions reads the conditions Traefik wrote on TCPRoute
// ns/name for the shared Gateway's section; nil when it wrote none.
func tcpRouteParentConditions(ctx context.Context, ns, name, section string) ([]metav1.Condition, int64, error) {
	var route gwv1.TCPRoute
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &route); err != nil {
		return nil, 0, err
	}
	return sectionConditions(route.Status.Parents, section), route.Generation, nil
}

// tcpRouteAttached is routeAttached for a TCPRoute.
func tcpRouteAttached(ctx context.Context, ns, name, section string) (accepted, resolved bool, msg string) {
	conds, gen, err := tcpRouteParentConditions(ctx, ns, name, section)
	if err != nil {
		return false, false, err.Error()
	}
	accepted, resolved = attached(conds, gen)
	return accepted, resolved, fmt.Sprintf("conditions for section %s: %+v", section, conds)
}
