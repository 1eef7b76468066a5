package webhooks

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kptr "k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestGatewayClassAdmission: a gateway class is refused before the
// Gateway API is installed; afterwards its Gateway listener is checked
// (TLS Passthrough, the template's names under its hostname), its own
// fields too, and a missing Gateway is a warning. A Listener of the class
// whose port has no section, or that overrides a route, is refused.
func TestGatewayClassAdmission(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := t.Context()
	class := func(name, spec string) []byte {
		return fmt.Appendf(nil, "apiVersion: listeners.stackable.tech/v1alpha1\nkind: ListenerClass\nmetadata: {name: %s}\nspec: %s\n", name, spec)
	}
	const good = `{serviceType: ClusterIP, hostname: {template: "{listener}.{namespace}.gw.test"}, gateway: {parentRefs: [{name: shared, namespace: gw-system, sectionName: tls}]}}`
	// Before the install: refused. In a run of the whole package the
	// catalogue, which comes first, has checked that and installed it.
	if _, err := e.Client.RESTMapper().RESTMapping(gwv1.SchemeGroupVersion.WithKind("Gateway").GroupKind(), gwv1.SchemeGroupVersion.Version); meta.IsNoMatchError(err) {
		out, err := e.Kubectl(ctx, class("gw-early", good), "create", "--dry-run=server", "-f", "-")
		if want := "the Gateway API (gateway.networking.k8s.io/v1 Gateway and TLSRoute) is not installed in this cluster"; err == nil || !strings.Contains(string(out), want) {
			t.Fatalf("before the install: %v\n%s\nwant: %s", err, out, want)
		}
	} else {
		t.Log("the Gateway API is installed already (TestBadInputCatalogue checks the refusal before it is)")
	}
	if err := testenv.InstallGatewayAPI(e.Config); err != nil {
		t.Fatal(err)
	}
	createGateway(t, e)

	for _, tc := range []struct {
		name, spec, want string
		denied           bool
	}{
		{"accepted", good, "created (server dry run)", false},
		{"a Gateway that does not exist yet", `{serviceType: ClusterIP, hostname: {template: "{listener}.{namespace}.gw.test"}, gateway: {parentRefs: [{name: later, namespace: gw-system, sectionName: tls}]}}`,
			"Warning: spec.gateway.parentRefs[0]: Gateway gw-system/later does not exist yet", false},
		{"a listener that terminates TLS", `{serviceType: ClusterIP, hostname: {template: "{listener}.{namespace}.gw.test"}, gateway: {parentRefs: [{name: shared, namespace: gw-system, sectionName: https}]}}`,
			`spec.gateway.parentRefs[0].sectionName: Invalid value: "https": listener "https" of Gateway gw-system/shared has tls.mode Terminate, and a gateway class needs Passthrough`, true},
		{"an HTTP listener", `{serviceType: ClusterIP, hostname: {template: "{listener}.{namespace}.gw.test"}, gateway: {parentRefs: [{name: shared, namespace: gw-system, sectionName: web}]}}`,
			`listener "web" of Gateway gw-system/shared has protocol HTTP, and a gateway class's TLSRoutes attach only to protocol TLS`, true},
		{"no such section", `{serviceType: ClusterIP, hostname: {template: "{listener}.{namespace}.gw.test"}, gateway: {parentRefs: [{name: shared, namespace: gw-system, sectionName: kafka}]}}`,
			`Gateway gw-system/shared has no listener named "kafka" (it has "tls", "https", "web", "admin", "tcp-0", "tcp-1")`, true},
		{"names outside the listener's hostname", `{serviceType: ClusterIP, hostname: {template: "{listener}.{namespace}.example.com"}, gateway: {parentRefs: [{name: shared, namespace: gw-system, sectionName: tls}]}}`,
			`only admits hostnames *.gw.test, and spec.hostname.template "{listener}.{namespace}.example.com" renders names such as listener.namespace.example.com`, true},
		{"a NodePort gateway class", `{serviceType: NodePort, hostname: {template: "{listener}.{namespace}.gw.test"}, gateway: {parentRefs: [{name: shared, namespace: gw-system, sectionName: tls}]}}`,
			`spec.serviceType: Invalid value: "NodePort": a gateway class's Listeners are reached through the Gateway, so their Services are ClusterIP`, true},
		{"no hostname template", `{serviceType: ClusterIP, gateway: {parentRefs: [{name: shared, namespace: gw-system, sectionName: tls}]}}`,
			`spec.hostname: Required value: a gateway class routes each Listener by the DNS name its template renders`, true},
		// TCPRoute classes (issue 52).
		{"a TCPRoute class", `{serviceType: ClusterIP, gateway: {routeKind: TCPRoute, parentRefs: [{name: shared, namespace: gw-system, sectionName: tcp-0}, {name: shared, namespace: gw-system, sectionName: tcp-1}]}}`,
			"created (server dry run)", false},
		{"a TCPRoute class with a hostname", `{serviceType: ClusterIP, hostname: {template: "{listener}.{namespace}.gw.test"}, gateway: {routeKind: TCPRoute, parentRefs: [{name: shared, namespace: gw-system, sectionName: tcp-0}]}}`,
			`spec.hostname: Forbidden: a TCPRoute class publishes the Gateway's address; remove spec.hostname`, true},
		{"a NodePort TCPRoute class", `{serviceType: NodePort, gateway: {routeKind: TCPRoute, parentRefs: [{name: shared, namespace: gw-system, sectionName: tcp-0}]}}`,
			`spec.serviceType: Invalid value: "NodePort": a gateway class's Listeners are reached through the Gateway, so their Services are ClusterIP`, true},
		{"a TCPRoute class on a TLS listener", `{serviceType: ClusterIP, gateway: {routeKind: TCPRoute, parentRefs: [{name: shared, namespace: gw-system, sectionName: tls}]}}`,
			`spec.gateway.parentRefs[0].sectionName: Invalid value: "tls": listener "tls" of Gateway gw-system/shared has protocol TLS, and a TCPRoute class's routes attach only to protocol TCP`, true},
		{"a TCPRoute class naming a section twice", `{serviceType: ClusterIP, gateway: {routeKind: TCPRoute, parentRefs: [{name: shared, namespace: gw-system, sectionName: tcp-0}, {name: shared, namespace: gw-system, sectionName: tcp-0}]}}`,
			`spec.gateway.parentRefs[1]: Duplicate value: "gw-system/shared section tcp-0"`, true},
		{"a TLSRoute class on a TCP listener", `{serviceType: ClusterIP, hostname: {template: "{listener}.{namespace}.gw.test"}, gateway: {parentRefs: [{name: shared, namespace: gw-system, sectionName: tcp-0}]}}`,
			`listener "tcp-0" of Gateway gw-system/shared has protocol TCP, and a gateway class's TLSRoutes attach only to protocol TLS`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := e.Kubectl(ctx, class("gw-case", tc.spec), "create", "--dry-run=server", "-f", "-")
			if (err != nil) != tc.denied || !strings.Contains(string(out), tc.want) {
				t.Errorf("kubectl: %v\n%s\nwant denied=%v and: %s", err, out, tc.denied, tc.want)
			}
		})
	}

	// Listeners of a class with two sections.
	two := `{serviceType: ClusterIP, hostname: {template: "{listener}.{namespace}.gw.test"}, gateway: {parentRefs: [{name: shared, namespace: gw-system, sectionName: tls}, {name: shared, namespace: gw-system, sectionName: admin}]}}`
	if out, err := e.Kubectl(ctx, class("gw-two", two), "create", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Cleanup(func() { _, _ = e.Kubectl(ctx, nil, "delete", "listenerclass", "gw-two") })
	ns := e.Namespace(t, ctx, "gwl-")
	listener := func(ports, extra string) []byte {
		return fmt.Appendf(nil, "apiVersion: listeners.stackable.tech/v1alpha1\nkind: Listener\nmetadata: {name: broker-0, namespace: %s}\nspec: {className: gw-two, ports: %s%s}\n", ns, ports, extra)
	}
	for _, tc := range []struct {
		name, ports, extra, want string
		denied                   bool
	}{
		{"ports named after sections", `[{name: tls, port: 9093}, {name: admin, port: 9094}]`, "", "created (server dry run)", false},
		{"a port without a section", `[{name: tls, port: 9093}, {name: metrics, port: 9404}]`, "",
			`spec.ports[1].name: Invalid value: "metrics": ListenerClass gw-two routes ports through the Gateway listeners (sections) "tls" (Gateway gw-system/shared), "admin" (Gateway gw-system/shared), and none is named "metrics", so this port cannot be routed; name each port after a section, or remove the port`, true},
		{"an override of its route", `[{name: tls, port: 9093}]`, `, objectOverrides: [{apiVersion: gateway.networking.k8s.io/v1, kind: TLSRoute, metadata: {name: broker-0}, spec: {hostnames: [evil.gw.test]}}]`,
			`spec.objectOverrides[0]: Forbidden: a TLSRoute is exposure`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eventually(t, "the Listener judged", func() error {
				out, err := e.Kubectl(ctx, listener(tc.ports, tc.extra), "create", "--dry-run=server", "-f", "-")
				if (err != nil) != tc.denied || !strings.Contains(string(out), tc.want) {
					return errorf("kubectl: %v\n%s\nwant denied=%v and: %s", err, out, tc.denied, tc.want)
				}
				return nil
			})
		})
	}
}

// TestGatewayClassWorkloadPorts: an opted-in StatefulSet of a gateway class
// whose containers declare a port no section routes is refused at apply
// time (the replicas' Listeners take the containers' ports), naming the
// port, the sections and the fix.
func TestGatewayClassWorkloadPorts(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := t.Context()
	if err := testenv.InstallGatewayAPI(e.Config); err != nil {
		t.Fatal(err)
	}
	two := []byte("apiVersion: listeners.stackable.tech/v1alpha1\nkind: ListenerClass\nmetadata: {name: gw-sts}\nspec: {serviceType: ClusterIP, hostname: {template: \"{listener}.{namespace}.gw.test\"}, gateway: {parentRefs: [{name: shared, namespace: gw-system, sectionName: tls}, {name: shared, namespace: gw-system, sectionName: admin}]}}\n")
	if out, err := e.Kubectl(ctx, two, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Cleanup(func() { _, _ = e.Kubectl(ctx, nil, "delete", "listenerclass", "gw-sts") })
	ns := e.Namespace(t, ctx, "gws-")
	sts := func(ports string) []byte {
		return fmt.Appendf(nil, `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: broker, namespace: %s, labels: {listeners.stackable.tech/enabled: "true"}, annotations: {listeners.stackable.tech/listener-class: gw-sts}}
spec:
  serviceName: broker
  selector: {matchLabels: {app: broker}}
  template:
    metadata: {labels: {app: broker}}
    spec: {containers: [{name: broker, image: x, ports: %s}]}
`, ns, ports)
	}
	for _, tc := range []struct {
		name, ports, want string
		denied            bool
	}{
		{"ports named after the sections", `[{name: tls, containerPort: 9093}, {name: admin, containerPort: 9094}]`, "created (server dry run)", false},
		{"a port no section routes", `[{name: tls, containerPort: 9093}, {name: metrics, containerPort: 9404}]`,
			`spec.template.spec.containers: Invalid value: "metrics": the container port "metrics" becomes a port of the listener volume's own Listener: ListenerClass gw-sts routes ports through the Gateway listeners (sections) "tls" (Gateway gw-system/shared), "admin" (Gateway gw-system/shared), and none is named "metrics"`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eventually(t, "the StatefulSet judged", func() error {
				out, err := e.Kubectl(ctx, sts(tc.ports), "create", "--dry-run=server", "-f", "-")
				if (err != nil) != tc.denied || !strings.Contains(string(out), tc.want) {
					return errorf("kubectl: %v\n%s\nwant denied=%v and: %s", err, out, tc.denied, tc.want)
				}
				return nil
			})
		})
	}
}

// createGateway makes gw-system/shared with a TLS Passthrough listener
// "tls" (and "admin") for *.gw.test, a TLS Terminate one, an HTTP one and
// two TCP ones, "tcp-0" and "tcp-1".
func createGateway(t *testing.T, e *testenv.Env) {
	t.Helper()
	ctx := t.Context()
	_, _ = e.Kubectl(ctx, nil, "create", "namespace", "gw-system")
	pass := &gwv1.ListenerTLSConfig{Mode: kptr.To(gwv1.TLSModePassthrough)}
	host := kptr.To(gwv1.Hostname("*.gw.test"))
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "gw-system", Name: "shared"}, Spec: gwv1.GatewaySpec{
		GatewayClassName: "traefik",
		Listeners: []gwv1.Listener{
			{Name: "tls", Port: 9443, Protocol: gwv1.TLSProtocolType, Hostname: host, TLS: pass},
			{Name: "https", Port: 8443, Protocol: gwv1.TLSProtocolType, Hostname: host,
				TLS: &gwv1.ListenerTLSConfig{Mode: kptr.To(gwv1.TLSModeTerminate), CertificateRefs: []gwv1.SecretObjectReference{{Name: "cert"}}}},
			{Name: "web", Port: 8080, Protocol: gwv1.HTTPProtocolType},
			{Name: "admin", Port: 9444, Protocol: gwv1.TLSProtocolType, Hostname: host, TLS: pass},
			{Name: "tcp-0", Port: 19000, Protocol: gwv1.TCPProtocolType},
			{Name: "tcp-1", Port: 19001, Protocol: gwv1.TCPProtocolType},
		},
	}}
	testenv.Create(t, ctx, e.Client, gw)
}
