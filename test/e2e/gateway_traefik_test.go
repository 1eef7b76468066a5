//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Issue 39, the data plane without the operator: Traefik from source on the
// cluster accepts a hand-made TLSRoute in an admitted namespace, and a
// client on the host reaches the pod behind it through the Gateway's one
// address by TLS server name, checking the pod's own certificate (the
// connection is passed through). Each section routes on its own port; a name
// no route holds reaches nothing. Logs how long Traefik took to accept the
// route on real nodes, and a burst of 20 routes.
func TestGatewayTraefikOnCluster(t *testing.T) {
	ctx := t.Context()
	gw := installGateway(t)
	ns := namespace(t, ctx, "e2e-gw")
	allowGatewayRoutes(t, ctx, ns)
	host := "broker-0." + ns + "." + gatewayDomain // unique per run: no clash with a namespace still terminating
	secret, roots := selfSignedTLS(t, ns, "broker-0-tls", host)
	labels := map[string]string{"app": "broker"}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "broker", Namespace: ns},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: labels,
			Ports: []corev1.ServicePort{{Name: "tls", Port: 9093, TargetPort: intstr.FromString("tls")}}},
	}
	for _, o := range []client.Object{secret, tlsDemoPod(ns, "broker-0", secret.Name, labels), svc} {
		if err := k8s.client.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}

	// The route goes in while the pod may still start, as an operator's
	// would: the Service's EndpointSlice exists (empty), so Traefik resolves
	// the backend before the pod is Ready (docs/gateway.md, case g).
	created := time.Now()
	if err := k8s.client.Create(ctx, tlsRoute(ns, "broker-0", gatewaySectionTLS, host, "broker", 9093)); err != nil {
		t.Fatalf("create TLSRoute: %v", err)
	}
	var toAccepted, toResolved time.Duration
	var last string
	for toAccepted == 0 || toResolved == 0 {
		if time.Since(created) > time.Minute {
			t.Fatalf("TLSRoute %s/broker-0 not Accepted and ResolvedRefs by Traefik within a minute: %s", ns, last)
		}
		accepted, resolved, msg := routeAttached(ctx, ns, "broker-0", gatewaySectionTLS)
		last = msg
		if accepted && toAccepted == 0 {
			toAccepted = time.Since(created)
		}
		if resolved && toResolved == 0 {
			toResolved = time.Since(created)
		}
		time.Sleep(100 * time.Millisecond) // the figure's resolution
	}
	t.Logf("TLSRoute %s/broker-0 Accepted=True %s and ResolvedRefs=True %s after its create (polled every 100 ms)",
		ns, toAccepted.Round(10*time.Millisecond), toResolved.Round(10*time.Millisecond))

	podsReady(t, ctx, ns, "broker", 1, podTimeout)
	answersThroughGateway(t, ctx, gw, gatewaySectionTLS, host, roots, "broker-0")
	t.Logf("https://%s via %s:%d answered by broker-0 %s after the route's create", host, gw.Address, gw.Ports[gatewaySectionTLS], time.Since(created).Round(10*time.Millisecond))

	podCert, err := parseLeaf(secret.Data[corev1.TLSCertKey])
	if err != nil {
		t.Fatal(err)
	}
	// The other section is another entry point: the route of section tls is
	// not there, until a route names that section.
	if reachesPod(ctx, gw, gatewaySectionAdmin, host, podCert) {
		t.Errorf("section %s (port %d) reached broker-0 for %s, whose only route is on section %s", gatewaySectionAdmin, gw.Ports[gatewaySectionAdmin], host, gatewaySectionTLS)
	}
	if err := k8s.client.Create(ctx, tlsRoute(ns, "broker-0-admin", gatewaySectionAdmin, host, "broker", 9093)); err != nil {
		t.Fatalf("create TLSRoute on section %s: %v", gatewaySectionAdmin, err)
	}
	eventually(t, ctx, time.Minute, "TLSRoute broker-0-admin Accepted and ResolvedRefs", func(ctx context.Context) (bool, string) {
		accepted, resolved, msg := routeAttached(ctx, ns, "broker-0-admin", gatewaySectionAdmin)
		return accepted && resolved, msg
	})
	answersThroughGateway(t, ctx, gw, gatewaySectionAdmin, host, roots, "broker-0")

	// A name inside the section's hostname that no route holds reaches
	// nothing (Traefik closes it or shows its own default certificate).
	other := "broker-9." + ns + "." + gatewayDomain
	if reachesPod(ctx, gw, gatewaySectionTLS, other, podCert) {
		t.Errorf("%s, which no route holds, reached broker-0 through the Gateway", other)
	}
	routeBurst(t, ctx, ns, 20)
}

// routeBurst creates n routes back to back, as the Listeners of a
// StatefulSet's replicas come, and logs how long Traefik took to accept and
// resolve them all (one route alone is accepted within one poll).
func routeBurst(t *testing.T, ctx context.Context, ns string, n int) {
	t.Helper()
	start := time.Now()
	for i := range n {
		name := fmt.Sprintf("burst-%d", i)
		if err := k8s.client.Create(ctx, tlsRoute(ns, name, gatewaySectionTLS, name+"."+ns+"."+gatewayDomain, "broker", 9093)); err != nil {
			t.Fatalf("create TLSRoute %s: %v", name, err)
		}
	}
	createdIn := time.Since(start)
	for done := 0; done < n; time.Sleep(100 * time.Millisecond) {
		if time.Since(start) > time.Minute {
			t.Fatalf("%d of %d routes of the burst Accepted and ResolvedRefs within a minute", done, n)
		}
		var routes gwv1.TLSRouteList
		if err := k8s.client.List(ctx, &routes, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		done = 0
		for i := range routes.Items {
			r := &routes.Items[i]
			if accepted, resolved := attached(parentConditions(r, gatewaySectionTLS), r.Generation); accepted && resolved && strings.HasPrefix(r.Name, "burst-") {
				done++
			}
		}
	}
	t.Logf("a burst of %d TLSRoutes (created in %s): all Accepted=True and ResolvedRefs=True %s after the first create (polled every 100 ms)",
		n, createdIn.Round(10*time.Millisecond), time.Since(start).Round(10*time.Millisecond))
}

// reachesPod says whether a TLS handshake with server name sni on a section
// of the Gateway ends at the pod whose certificate is podCert. It checks no
// name, so a pod reached under a name its certificate lacks still counts.
func reachesPod(ctx context.Context, gw gatewayInfo, section, sni string, podCert *x509.Certificate) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	d := tls.Dialer{Config: &tls.Config{ServerName: sni, InsecureSkipVerify: true}} //nolint:gosec // compared with podCert below
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(gw.Address, strconv.Itoa(int(gw.Ports[section]))))
	if err != nil {
		return false // closed by Traefik: not routed
	}
	defer conn.Close()
	peer := conn.(*tls.Conn).ConnectionState().PeerCertificates
	return len(peer) > 0 && peer[0].Equal(podCert)
}
