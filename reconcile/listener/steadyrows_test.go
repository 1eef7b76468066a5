package listener

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/conditions"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// steadyRows are the states of TestSteadyStateWritesNothing: each Ready
// reason and each condition the operator sets, as far as envtest can show
// them (no GatewayAPIMissing: the Gateway API is installed for the gateway
// rows; no AwaitingLoadBalancer or ServiceRefused).
func steadyRows(s *steadyEnv) []steadyRow {
	clusterIP := v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}
	return []steadyRow{
		{name: "Ready", setup: listenerOf(clusterIP, nil), want: ready(v1alpha1.ReasonReady)},
		{name: "NoClass", setup: func(t *testing.T, s *steadyEnv, ns string) string {
			l := reconciletest.Listener(ns, "web", "", reconciletest.Port("http", 80))
			l.Spec.ClassName = nil
			testenv.Create(t, t.Context(), s.c, l)
			return l.Name
		}, want: ready(v1alpha1.ReasonNoClass)},
		{name: "ClassNotFound", setup: func(t *testing.T, s *steadyEnv, ns string) string {
			testenv.Create(t, t.Context(), s.c, reconciletest.Listener(ns, "web", "missing-"+ns, reconciletest.Port("http", 80)))
			return "web"
		}, want: ready(v1alpha1.ReasonClassNotFound)},
		{name: "TenantMetadataAllowed MetadataLeftOut", setup: listenerOf(clusterIP, map[string]string{"lbipam.cilium.io/pool": "public"}),
			want: condition(v1alpha1.ConditionTenantMetadataAllowed, v1alpha1.ReasonMetadataLeftOut, v1alpha1.ReasonReady)},
		// Mode Warn never adds a key off the allow-list that the Service
		// did not carry (docs/webhooks.md): it is left out, as in Enforce.
		{name: "TenantMetadataAllowed Warn MetadataLeftOut", setup: listenerOf(v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP,
			TenantMetadata: &v1alpha1.TenantMetadataPolicy{Mode: v1alpha1.TenantMetadataWarn}}, map[string]string{"team.example.com/owner": "a"}),
			want: condition(v1alpha1.ConditionTenantMetadataAllowed, v1alpha1.ReasonMetadataLeftOut, v1alpha1.ReasonReady)},
		// Mode Warn keeps a key off the allow-list that the Service
		// carried when the class entered Warn (docs/webhooks.md, issue 48).
		{name: "TenantMetadataAllowed Warn MetadataNotAllowed", setup: warnKeptKey,
			want: condition(v1alpha1.ConditionTenantMetadataAllowed, v1alpha1.ReasonMetadataNotAllowed, v1alpha1.ReasonReady)},
		{name: "HostnamePublished", setup: listenerOf(v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP,
			Hostname: &v1alpha1.HostnamePolicy{Template: "{listener}.{namespace}.example.test"}}, nil),
			want: condition(v1alpha1.ConditionHostnamePublished, v1alpha1.ReasonHostnamePublished, v1alpha1.ReasonReady)},
		{name: "HostnameTooLong", setup: func(t *testing.T, s *steadyEnv, ns string) string {
			class := reconciletest.NewClass(t, t.Context(), s.c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP,
				Hostname: &v1alpha1.HostnamePolicy{Template: "{listener}.{namespace}.example.test"}})
			name := strings.Repeat("h", 70)
			testenv.Create(t, t.Context(), s.c, reconciletest.Listener(ns, name, class.Name, reconciletest.Port("http", 80)))
			return name
		}, want: condition(v1alpha1.ConditionHostnamePublished, v1alpha1.ReasonHostnameTooLong, v1alpha1.ReasonReady)},
		{name: "HostnameConflict", setup: hostnameConflict, want: condition(v1alpha1.ConditionHostnamePublished, v1alpha1.ReasonHostnameConflict, v1alpha1.ReasonReady)},
		{name: "CertificateManaged", setup: listenerOf(v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP,
			Certificate: &v1alpha1.ListenerCertificate{IssuerRef: v1alpha1.ListenerCertificateIssuer{Name: "listeners-ca"}}}, nil),
			want: condition(v1alpha1.ConditionCertificateManaged, v1alpha1.ReasonCertificateManaged, v1alpha1.ReasonReady)},
		{name: "PinnedNodesAvailable (node loss)", setup: nodeLost, want: condition(v1alpha1.ConditionPinnedNodesAvailable, v1alpha1.ReasonNodeLost, v1alpha1.ReasonReady)},
		{name: "NameCollision", setup: collidingListener, want: ready(v1alpha1.ReasonInvalid)},
		{name: "NodeAddressInvalid", node: s.badNode, setup: listenerOf(v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort,
			NodeAddress: v1alpha1.NodeAddressAnnotation}, nil), want: func(l *v1alpha1.Listener) error {
			if r, ok := reconciletest.ReadyReason(l); !ok || len(l.Status.IngressAddresses) != 1 || l.Status.IngressAddresses[0].Address != "198.51.100.9" {
				return fmt.Errorf("Ready %s, addresses %+v, want the node's good annotated address", r, l.Status.IngressAddresses)
			}
			return nil
		}},
		{name: "NodePortsTaken", setup: nodePortsTaken, want: func(l *v1alpha1.Listener) error {
			if err := condition(v1alpha1.ConditionNodePortsKept, v1alpha1.ReasonNodePortsTaken, v1alpha1.ReasonReady)(l); err != nil {
				return err
			}
			return condition(v1alpha1.ConditionNodePortsInRange, v1alpha1.ReasonNodePortsInRange, "")(l)
		}},
		{name: "NodePortsOutsideRange", setup: nodePortsOutsideRange, want: condition(v1alpha1.ConditionNodePortsInRange, v1alpha1.ReasonNodePortsOutsideRange, v1alpha1.ReasonReady)},
		{name: "NodePortRangeExhausted", setup: listenerOf(v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort,
			NodePortRange: &v1alpha1.NodePortRange{From: 30070, To: 30071}}, nil, reconciletest.Port("a", 1), reconciletest.Port("b", 2), reconciletest.Port("c", 3)), want: ready(v1alpha1.ReasonNodePortRangeExhausted)},
		{name: "NodePortShareExceeded", setup: listenerOf(v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort,
			NodePortRange: &v1alpha1.NodePortRange{From: 30067, To: 30069, PerNamespace: ptr.To(int32(1))}}, nil, reconciletest.Port("a", 1), reconciletest.Port("b", 2)), want: ready(v1alpha1.ReasonNodePortShareExceeded)},
		{name: "GatewayNotFound", setup: gatewayListener(nil), want: ready(v1alpha1.ReasonGatewayNotFound)},
		{name: "GatewayListenerInvalid", setup: gatewayListener(&gwv1.ListenerTLSConfig{Mode: ptr.To(gwv1.TLSModeTerminate),
			CertificateRefs: []gwv1.SecretObjectReference{{Name: "gw-cert"}}}), want: ready(v1alpha1.ReasonGatewayListenerInvalid)},
		{name: "RouteNotAccepted", setup: gatewayListener(&gwv1.ListenerTLSConfig{Mode: ptr.To(gwv1.TLSModePassthrough)}), want: ready(v1alpha1.ReasonRouteNotAccepted)},
		{name: "Ready through a Gateway", setup: acceptedRoute, want: ready(v1alpha1.ReasonReady)},
	}
}

// listenerOf makes Listener web (with labels, and ports: one when none)
// of a new class of spec.
func listenerOf(spec v1alpha1.ListenerClassSpec, labels map[string]string, ports ...v1alpha1.ListenerPort) func(*testing.T, *steadyEnv, string) string {
	return func(t *testing.T, s *steadyEnv, ns string) string {
		class := reconciletest.NewClass(t, t.Context(), s.c, spec)
		if len(ports) == 0 {
			ports = []v1alpha1.ListenerPort{reconciletest.Port("http", 80)}
		}
		l := reconciletest.Listener(ns, "web", class.Name, ports...)
		l.Labels = labels
		testenv.Create(t, t.Context(), s.c, l)
		return l.Name
	}
}

// warnKeptKey: Listener web's label team.example.com/owner reaches its
// Service while the class allows team.example.com/*; the class then drops
// the pattern and enters mode Warn, which keeps the key the Service
// carries (docs/webhooks.md, "Mode Warn").
func warnKeptKey(t *testing.T, s *steadyEnv, ns string) string {
	ctx, c := t.Context(), s.c
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP,
		TenantMetadata: &v1alpha1.TenantMetadataPolicy{Labels: []string{"team.example.com/*"}}})
	l := reconciletest.Listener(ns, "web", class.Name, reconciletest.Port("http", 80))
	l.Labels = map[string]string{"team.example.com/owner": "a"}
	testenv.Create(t, ctx, c, l)
	reconciletest.GetService(t, ctx, c, ns, l.Name, func(svc *corev1.Service) error {
		if svc.Labels["team.example.com/owner"] != "a" {
			return fmt.Errorf("the Service does not carry team.example.com/owner yet: %v", svc.Labels)
		}
		return nil
	})
	if err := mergePatch(ctx, c, class, `{"spec":{"tenantMetadata":{"mode":"Warn","labels":null}}}`); err != nil {
		t.Fatal(err)
	}
	return l.Name
}

// hostnameConflict: web in namespace v-<ns> publishes the name the class
// gives web-v in ns too (TestHostnameConflict); web-v is the row's.
func hostnameConflict(t *testing.T, s *steadyEnv, ns string) string {
	ctx, c := t.Context(), s.c
	other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "v-" + ns}}
	testenv.Create(t, ctx, c, other)
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(ctx), other) })
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP,
		Hostname: &v1alpha1.HostnamePolicy{Template: "{listener}-{namespace}.example.test", AllowAmbiguous: ptr.To(true)}})
	testenv.Create(t, ctx, c, reconciletest.Listener(other.Name, "web", class.Name, reconciletest.Port("http", 80)))
	reconciletest.WaitStatus(t, ctx, c, other.Name, "web", condition(v1alpha1.ConditionHostnamePublished, v1alpha1.ReasonHostnamePublished, ""))
	time.Sleep(1100 * time.Millisecond) // creationTimestamp counts seconds
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "web-v", class.Name, reconciletest.Port("http", 80)))
	return "web-v"
}

// nodeLost: a Ready Listener on which the node-loss controller noted a
// lost node (written here as it writes it: that controller does not run in
// this package's manager).
func nodeLost(t *testing.T, s *steadyEnv, ns string) string {
	ctx, c := t.Context(), s.c
	name := listenerOf(v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}, nil)(t, s, ns)
	l := reconciletest.WaitReason(t, ctx, c, ns, name, v1alpha1.ReasonReady)
	cond := &metav1.Condition{Type: v1alpha1.ConditionPinnedNodesAvailable, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNodeLost, Message: "node gone (the test says)"}
	if _, err := conditions.For(v1alpha1.NodeLossStatusWriter).ApplyCondition(ctx, c, l, cond, time.Now()); err != nil {
		t.Fatal(err)
	}
	return name
}

// collidingListener: a Listener named like another's Service, created later
// (TestLaterNameCollisionGetsNoService); the later one is the row's.
func collidingListener(t *testing.T, s *steadyEnv, ns string) string {
	ctx, c := t.Context(), s.c
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	first := reconciletest.Listener(ns, "web.shop", class.Name, reconciletest.Port("http", 80))
	testenv.Create(t, ctx, c, first)
	reconciletest.WaitReason(t, ctx, c, ns, first.Name, v1alpha1.ReasonReady)
	time.Sleep(time.Until(first.CreationTimestamp.Add(time.Second)))
	later := reconciletest.Listener(ns, names.ServiceName(first.Name), class.Name, reconciletest.Port("http", 80))
	testenv.Create(t, ctx, c, later)
	return later.Name
}

// nodePortsTaken: a replica whose block of the class's range another
// Service holds in part (TestNodePortRange).
func nodePortsTaken(t *testing.T, s *steadyEnv, ns string) string {
	ctx, c := t.Context(), s.c
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort,
		NodePortRange: &v1alpha1.NodePortRange{From: 30060, To: 30063}})
	testenv.Create(t, ctx, c, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "thief", Namespace: ns}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "thief"},
		Ports: []corev1.ServicePort{{Name: "x", Port: 80, NodePort: 30060}}}})
	testenv.Create(t, ctx, c, replicaListener(t, c, ns, "data-kafka-0", class.Name))
	return "data-kafka-0"
}

// nodePortsOutsideRange: a class that gains a range its Listener's
// Service is outside of (TestRangeAddedToClassMovesNoService).
func nodePortsOutsideRange(t *testing.T, s *steadyEnv, ns string) string {
	ctx, c := t.Context(), s.c
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "web", class.Name, reconciletest.Port("http", 80)))
	svc := reconciletest.GetService(t, ctx, c, ns, "web", func(s *corev1.Service) error {
		if s.Spec.Ports[0].NodePort == 0 {
			return fmt.Errorf("no node port yet")
		}
		return nil
	})
	if p := svc.Spec.Ports[0].NodePort; p >= 30065 && p <= 30066 {
		t.Skipf("the API server picked %d, inside the range this test adds", p)
	}
	class.Spec.NodePortRange = &v1alpha1.NodePortRange{From: 30065, To: 30066}
	if err := c.Update(ctx, class); err != nil {
		t.Fatal(err)
	}
	return "web"
}

// gatewayListener makes Listener broker-0 of a gateway class whose
// Gateway (in a namespace of its own) has a listener with tls, or none
// when tls is nil.
func gatewayListener(tls *gwv1.ListenerTLSConfig) func(*testing.T, *steadyEnv, string) string {
	return func(t *testing.T, s *steadyEnv, ns string) string {
		ctx, c := t.Context(), s.c
		gwNS := reconciletest.Env.Namespace(t, ctx, "gw-")
		class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{
			ServiceType: v1alpha1.ServiceTypeClusterIP,
			Hostname:    &v1alpha1.HostnamePolicy{Template: "{listener}.{namespace}.gw.test"},
			Gateway:     &v1alpha1.ListenerGateway{ParentRefs: []v1alpha1.GatewayParentRef{{Name: "shared", Namespace: gwNS, SectionName: "tls"}}},
		})
		if tls != nil {
			testenv.Create(t, ctx, c, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "shared"}, Spec: gwv1.GatewaySpec{
				GatewayClassName: "traefik",
				Listeners:        []gwv1.Listener{{Name: "tls", Port: 9443, Protocol: gwv1.TLSProtocolType, Hostname: ptr.To(gwv1.Hostname("*.gw.test")), TLS: tls}},
			}})
		}
		testenv.Create(t, ctx, c, reconciletest.Listener(ns, "broker-0", class.Name, reconciletest.Port("kafka", 9093)))
		return "broker-0"
	}
}

// acceptedRoute: a gateway Listener whose route the Gateway accepted.
func acceptedRoute(t *testing.T, s *steadyEnv, ns string) string {
	name := gatewayListener(&gwv1.ListenerTLSConfig{Mode: ptr.To(gwv1.TLSModePassthrough)})(t, s, ns)
	ctx, c := t.Context(), s.c
	reconciletest.WaitReason(t, ctx, c, ns, name, v1alpha1.ReasonRouteNotAccepted)
	route := &gwv1.TLSRoute{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.RouteName(name, "kafka")}, route); err != nil {
		t.Fatal(err)
	}
	setRouteStatus(t, ctx, c, route, string(*route.Spec.ParentRefs[0].Namespace), "Accepted", metav1.ConditionTrue)
	return name
}
