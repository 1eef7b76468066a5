//go:build e2e

package e2e

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// The gateway of the gateway-class scenario: Traefik (built from source by
// make gateway-tools) on node 1's network, its listener "tls" on 18443 for
// *.gw.e2e.test, admitting the namespaces labelled gateway-access=allowed
// (testdata/gateway/traefik.yaml, installed by installGateway in
// gateway_setup_test.go).
const (
	gatewayAddress = "10.88.0.1" // node 1, the host
	gatewayPort    = "18443"
)

// TestGatewayClassOnRealNodes: three brokers behind one Gateway. Each
// replica of an opted-in StatefulSet of a gateway class reads its own name
// and the Gateway's port from its volume, serves TLS with a certificate for
// that name (issued by the cluster's cert-manager from a CA ClusterIssuer),
// and a client
// outside the cluster reaches each replica by name through the Gateway's
// one address. A replica deleted comes back under the same name. A
// namespace the Gateway does not admit gets a Listener that says so.
func TestGatewayClassOnRealNodes(t *testing.T) {
	ctx := t.Context()
	requireCertManager(t, ctx)
	installGateway(t)
	roots := ensureListenerCA(t, ctx, certManagerClient(t))
	const class = "e2e-gateway"
	ensureClass(t, ctx, listenerClass(class, v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeClusterIP,
		Hostname:    &v1alpha1.HostnamePolicy{Template: "{listener}.{namespace}." + gatewayDomain},
		Gateway:     &v1alpha1.ListenerGateway{ParentRefs: []v1alpha1.GatewayParentRef{{Name: "shared", Namespace: "gateway-system", SectionName: "tls"}}},
		Certificate: &v1alpha1.ListenerCertificate{IssuerRef: v1alpha1.ListenerCertificateIssuer{Kind: v1alpha1.IssuerKindClusterIssuer, Name: listenerCA}},
	}))
	ns := namespace(t, ctx, "e2e-gw")
	labelNamespace(t, ctx, ns, "gateway-access", "allowed")

	const replicas = 3
	if err := k8s.client.Create(ctx, brokerStatefulSet(ns, class, replicas)); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	pods := podsReady(t, ctx, ns, "broker", replicas, 2*podTimeout)
	hosts := map[string]string{}
	for name := range pods {
		files := tree(t, ctx, ns, name)
		host, port := files["default-address/address"], files["default-address/ports/tls"]
		want := fmt.Sprintf("listener-%s.%s.%s", name, ns, gatewayDomain)
		if host != want || port != gatewayPort {
			t.Fatalf("%s reads %s:%s from its volume, want %s:%s (the Gateway's port)", name, host, port, want, gatewayPort)
		}
		hosts[name] = host
	}
	for name, host := range hosts {
		answersTLS(t, ctx, roots, host, name)
		l := listener(t, ctx, ns, name)
		logRouteAccepted(t, ctx, ns, l)
	}

	// A replica deleted comes back under the same name, and is reached.
	if err := k8s.client.Delete(ctx, pods["broker-1"]); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, 2*podTimeout, "broker-1 recreated and Ready", func(ctx context.Context) (bool, string) {
		var p corev1.Pod
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "broker-1"}, &p); err != nil {
			return false, err.Error()
		}
		return p.UID != pods["broker-1"].UID && isReady(&p), podState(&p)
	})
	if got := tree(t, ctx, ns, "broker-1")["default-address/address"]; got != hosts["broker-1"] {
		t.Errorf("the recreated broker-1 reads %s, want %s", got, hosts["broker-1"])
	}
	answersTLS(t, ctx, roots, hosts["broker-1"], "broker-1")

	// A namespace the Gateway does not admit: not Ready, with the reason.
	other := namespace(t, ctx, "e2e-gw-denied")
	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "broker-0"}, Spec: v1alpha1.ListenerSpec{
		ClassName: &[]string{class}[0], Ports: []v1alpha1.ListenerPort{{Name: "tls", Port: 9093, Protocol: corev1.ProtocolTCP}}}}
	if err := k8s.client.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, time.Minute, "the Listener of a namespace the Gateway does not admit says so", func(ctx context.Context) (bool, string) {
		if err := k8s.client.Get(ctx, client.ObjectKeyFromObject(l), l); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonRouteNotAccepted &&
			strings.Contains(c.Message, "NotAllowedByListeners") && strings.Contains(c.Message, "admit this namespace"), fmt.Sprintf("Ready %+v", c)
	})
	if len(l.Status.IngressAddresses) != 0 {
		t.Errorf("a Listener whose route is refused publishes %v", l.Status.IngressAddresses)
	}
}

// brokerStatefulSet is a Kafka-like StatefulSet of a gateway class: each
// replica serves HTTPS on its port "tls" with the certificate of its own
// Listener (listener-<pod>: the Secret listener-<pod>-listener-tls,
// projected at /tls/listener-<pod>; optional, since cert-manager writes it
// after the Listener has its name).
func brokerStatefulSet(ns, class string, replicas int32) *appsv1.StatefulSet {
	sts := demoStatefulSet(ns, "broker", class, replicas)
	sts.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	spec := &sts.Spec.Template.Spec
	var sources []corev1.VolumeProjection
	for i := range replicas {
		secret := fmt.Sprintf("listener-broker-%d-listener-tls", i)
		sources = append(sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Optional: &[]bool{true}[0],
			Items: []corev1.KeyToPath{{Key: "tls.crt", Path: fmt.Sprintf("listener-broker-%d/tls.crt", i)}, {Key: "tls.key", Path: fmt.Sprintf("listener-broker-%d/tls.key", i)}},
		}})
	}
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}})
	c := &spec.Containers[0]
	c.Args = []string{"-listen", ":9093", "-tls-dir", "/tls/listener-$(POD_NAME)"}
	c.Ports = []corev1.ContainerPort{{Name: "tls", ContainerPort: 9093}}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "tls", MountPath: "/tls", ReadOnly: true})
	return sts
}

// answersTLS waits until a TLS connection to the Gateway's address with
// server name host verifies a certificate for host (issued by the
// cluster's cert-manager: the pod's own, passed through untouched) and an HTTP request on
// it is answered by pod.
func answersTLS(t *testing.T, ctx context.Context, roots *x509.CertPool, host, pod string) {
	t.Helper()
	servesTLS(t, ctx, roots, net.JoinHostPort(gatewayAddress, gatewayPort), host, pod)
}

// logRouteAccepted logs how long the Gateway's controller took from the
// route's creation to Accepted (the figure issue 39 asks for on real nodes).
func logRouteAccepted(t *testing.T, ctx context.Context, ns string, l *v1alpha1.Listener) {
	t.Helper()
	var rt gwv1.TLSRoute
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.RouteName(l.Name, l.Spec.Ports[0].Name)}, &rt); err != nil {
		t.Fatalf("the route of Listener %s: %v", l.Name, err)
	}
	for _, p := range rt.Status.Parents {
		if c := meta.FindStatusCondition(p.Conditions, string(gwv1.RouteConditionAccepted)); c != nil && c.Status == metav1.ConditionTrue {
			t.Logf("route %s: Accepted %s after it was created", rt.Name, c.LastTransitionTime.Sub(rt.CreationTimestamp.Time))
			return
		}
	}
	t.Errorf("route %s has no Accepted parent: %+v", rt.Name, rt.Status.Parents)
}

// labelNamespace sets a label on a namespace.
func labelNamespace(t *testing.T, ctx context.Context, ns, key, value string) {
	t.Helper()
	k8s.kubectlOK(t, ctx, "", "label", "namespace", ns, key+"="+value, "--overwrite")
}
