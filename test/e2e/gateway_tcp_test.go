//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
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
	ns := tcpNamespace(t, ctx, "e2e-gw-tcp")
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

	denied := tcpNamespace(t, ctx, "e2e-gw-tcp-denied")
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

// Issue 52 on the real nodes: three replicas of a plain-TCP workload behind
// the shared Gateway's one address. A StatefulSet opted in by its label, on a
// TCPRoute class whose sections are tcp-0..tcp-2: replica i reads the
// Gateway's address and section tcp-i's port from its volume, its Listener
// publishes the same, and a client on the host reaches each replica at that
// address and port. A replica deleted comes back on the same port. A
// Listener in a namespace the sections do not admit is not Ready, with the
// Gateway's reason.
func TestGatewayTCPClassOnRealNodes(t *testing.T) {
	ctx := t.Context()
	gw := installGateway(t)
	const class = "e2e-gateway-tcp"
	var refs []v1alpha1.GatewayParentRef
	for _, s := range gatewayTCPSections {
		refs = append(refs, v1alpha1.GatewayParentRef{Name: gatewayName, Namespace: gatewayNamespace, SectionName: s})
	}
	ensureClass(t, ctx, listenerClass(class, v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeClusterIP,
		Gateway:     &v1alpha1.ListenerGateway{RouteKind: v1alpha1.RouteKindTCPRoute, ParentRefs: refs},
	}))
	tcpSectionsFree(t, ctx)

	// First, while every section is free: a Listener that is no replica
	// takes the first section, tcp-0, in a namespace the Gateway does not
	// admit. Removed before the StatefulSet, whose replica 0 needs tcp-0.
	denied := tcpNamespace(t, ctx, "e2e-gw-tcp-denied")
	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: denied, Name: "kafka-0"}, Spec: v1alpha1.ListenerSpec{
		ClassName: ptr.To(class), Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}}}
	if err := k8s.client.Create(ctx, l); err != nil {
		t.Fatalf("create Listener %s/%s: %v", denied, l.Name, err)
	}
	eventually(t, ctx, time.Minute, "the Listener of a namespace the Gateway does not admit says so", func(ctx context.Context) (bool, string) {
		if err := k8s.client.Get(ctx, client.ObjectKeyFromObject(l), l); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonRouteNotAccepted &&
			strings.Contains(c.Message, string(gwv1.RouteReasonNotAllowedByListeners)), fmt.Sprintf("Ready %+v", c)
	})
	t.Logf("Listener %s/%s: Ready=False %s: %s", denied, l.Name, v1alpha1.ReasonRouteNotAccepted, meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady).Message)
	if len(l.Status.IngressAddresses) != 0 {
		t.Errorf("a Listener whose route is refused publishes %v", l.Status.IngressAddresses)
	}
	if err := k8s.client.Delete(ctx, l); err != nil {
		t.Fatal(err)
	}
	tcpSectionsFree(t, ctx)

	ns := tcpNamespace(t, ctx, "e2e-gw-tcp")
	allowGatewayRoutes(t, ctx, ns)
	const replicas = 3
	sts := demoStatefulSet(ns, "kafka", class, replicas)
	sts.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	start := time.Now()
	if err := k8s.client.Create(ctx, sts); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	pods := podsReady(t, ctx, ns, "kafka", replicas, 2*podTimeout)
	for i := range replicas {
		pod := fmt.Sprintf("kafka-%d", i)
		port := strconv.Itoa(int(gw.Ports[gatewayTCPSections[i]]))
		tcpReplicaPublishes(t, ctx, gw, ns, pod, port)
		answers(t, ctx, gw.Address, port, pod)
		t.Logf("%s reads and publishes %s:%s and answers there through the Gateway (%s after the StatefulSet's create)", pod, gw.Address, port, time.Since(start).Round(100*time.Millisecond))
	}

	// A replica deleted comes back on the same section, and is reached.
	old := pods["kafka-1"]
	if err := k8s.client.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	eventually(t, ctx, podTimeout, "kafka-1 recreated and Ready", func(ctx context.Context) (bool, string) {
		var p corev1.Pod
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kafka-1"}, &p); err != nil {
			return false, err.Error()
		}
		return p.UID != old.UID && p.DeletionTimestamp == nil && isReady(&p), podState(&p)
	})
	port := strconv.Itoa(int(gw.Ports[gatewayTCPSections[1]]))
	tcpReplicaPublishes(t, ctx, gw, ns, "kafka-1", port)
	answers(t, ctx, gw.Address, port, "kafka-1")
	t.Logf("the new kafka-1 reads %s:%s again and answers there (%s after the delete)", gw.Address, port, time.Since(deleted).Round(100*time.Millisecond))
}

// tcpReplicaPublishes checks that pod reads the Gateway's address and port
// in its volume, that its Listener publishes the same (and is Ready), and
// that its one TCPRoute is attached to the section of that port.
func tcpReplicaPublishes(t *testing.T, ctx context.Context, gw gatewayInfo, ns, pod, port string) {
	t.Helper()
	if addr, got := defaultAddress(t, tree(t, ctx, ns, pod)); addr != gw.Address || got != port {
		t.Fatalf("%s reads %s:%s from its volume, want the Gateway's %s:%s", pod, addr, got, gw.Address, port)
	}
	name := v1alpha1.VolumeName + "-" + pod
	eventually(t, ctx, time.Minute, "Listener "+name+" Ready and publishing "+gw.Address+":"+port, func(ctx context.Context) (bool, string) {
		var l v1alpha1.Listener
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &l); err != nil {
			return false, err.Error()
		}
		ready := meta.IsStatusConditionTrue(l.Status.Conditions, v1alpha1.ConditionReady)
		ok := ready && slices.Equal(ingressSet(&l), []string{gw.Address + ":" + port}) && l.Status.IngressAddresses[0].AddressType == v1alpha1.AddressTypeIP
		return ok, fmt.Sprintf("publishes %+v, conditions %+v", l.Status.IngressAddresses, l.Status.Conditions)
	})
	var routes gwv1.TCPRouteList
	if err := k8s.client.List(ctx, &routes, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelRouteListener: name}); err != nil {
		t.Fatal(err)
	}
	if len(routes.Items) != 1 {
		t.Fatalf("Listener %s has %d TCPRoutes, want 1", name, len(routes.Items))
	}
	r := &routes.Items[0]
	refs := r.Spec.ParentRefs
	section := ""
	if len(refs) == 1 && refs[0].SectionName != nil {
		section = string(*refs[0].SectionName)
	}
	if len(refs) != 1 || strconv.Itoa(int(gw.Ports[section])) != port {
		t.Fatalf("TCPRoute %s of Listener %s has parentRefs %+v, want the one section on port %s", r.Name, name, refs, port)
	}
	if accepted, resolved := attached(sectionConditions(r.Status.Parents, section), r.Generation); !accepted || !resolved {
		t.Fatalf("TCPRoute %s on section %s: Accepted %v, ResolvedRefs %v: %+v", r.Name, section, accepted, resolved, r.Status.Parents)
	}
}

// tcpSectionsFree waits until no TCPRoute anywhere names a TCP section of
// the shared Gateway: a section held by any route is taken for a TCPRoute
// class (GatewaySectionTaken), so routes of another test's namespace that
// is still being deleted would take this test's sections.
func tcpSectionsFree(t *testing.T, ctx context.Context) {
	t.Helper()
	eventually(t, ctx, 2*time.Minute, "no TCPRoute holds a TCP section of the shared Gateway", func(ctx context.Context) (bool, string) {
		var routes gwv1.TCPRouteList
		if err := k8s.client.List(ctx, &routes); err != nil {
			return false, err.Error()
		}
		var held []string
		for i := range routes.Items {
			r := &routes.Items[i]
			for _, p := range r.Spec.ParentRefs {
				if string(p.Name) == gatewayName && p.Namespace != nil && string(*p.Namespace) == gatewayNamespace {
					held = append(held, r.Namespace+"/"+r.Name)
				}
			}
		}
		return len(held) == 0, fmt.Sprintf("held by %v", held)
	})
}

// tcpNamespace is namespace for a test that makes TCPRoutes on the shared
// Gateway: after the namespace's delete, its cleanup waits until its
// TCPRoutes are gone, so the next test finds the sections free.
func tcpNamespace(t *testing.T, ctx context.Context, prefix string) string {
	t.Helper()
	var ns string
	// Registered first, so it runs after the namespace's own cleanup.
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			var routes gwv1.TCPRouteList
			err := k8s.client.List(ctx, &routes, client.InNamespace(ns))
			return err == nil && len(routes.Items) == 0, nil
		})
		if err != nil && os.Getenv("E2E_KEEP") == "" {
			t.Errorf("the TCPRoutes of namespace %s were not gone 2 minutes after its delete: %v", ns, err)
		}
	})
	ns = namespace(t, ctx, prefix)
	return ns
}
