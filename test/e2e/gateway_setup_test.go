//go:build e2e

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The real gateway of the gateway-class tests (issue 39): Traefik built from
// source (make gateway-tools) running on the cluster, and one shared Gateway
// (testdata/gateway/traefik.yaml). Tests call installGateway and build on
// what it returns; they never delete the Gateway for good (other tests share
// it).
const (
	gatewayNamespace  = "gateway-system"
	gatewayName       = "shared"
	gatewayClassName  = "traefik"
	gatewayController = "traefik.io/gateway-controller"
	// Sections of the Gateway (its listeners), both TLS Passthrough on
	// *.gw.e2e.test; their ports are in gatewayInfo.Ports.
	gatewaySectionTLS   = "tls"
	gatewaySectionAdmin = "admin"
	// gatewayDomain is the sections' hostname without its "*.": every route
	// hostname ends in "."+gatewayDomain.
	gatewayDomain = "gw.e2e.test"
	// The sections admit routes only from namespaces with this label.
	gatewayAccessLabel   = "gateway-access"
	gatewayAccessAllowed = "allowed"
)

// gatewayInfo is what a test needs to reach the shared Gateway.
type gatewayInfo struct {
	Namespace, Name string
	// Address is the Gateway's status.addresses[0].value, which Traefik
	// writes: listener-node-1's address (10.88.0.1), where Traefik listens
	// on the host network.
	Address string
	// Ports is the port of each section by name ("tls": 18443, "admin": 18444):
	// the port clients dial, and the port a Listener of a gateway class
	// publishes for that section.
	Ports map[string]int32
}

// Where the tests find what `make gateway-tools` builds, the manifests, and
// the pin the cluster's Traefik image is tagged with.
var (
	// The Experimental channel, as make cluster-up installs it: Traefik reads
	// TCPRoute only as v1alpha2, which only its TCPRoute CRD serves; and the
	// Standard bundle's safe-upgrades policy refuses Experimental CRDs over
	// Standard ones, so the Standard bundle is never applied here.
	gatewayCRDDir   = filepath.Join(repoRoot, "bin", "gateway-crds", "experimental")
	gatewayManifest = filepath.Join("testdata", "gateway", "traefik.yaml")
	gatewayVersions = filepath.Join(repoRoot, "hack", "gateway", "versions")
)

// gatewayMu serialises installGateway: tests that run in parallel share one
// install.
var gatewayMu sync.Mutex

// installGateway makes sure the Gateway API CRDs, Traefik and the shared
// Gateway are installed, and waits until the Gateway is Programmed with an
// address. Every call applies all of it again (server-side apply: nothing
// changes when nothing was changed), so a test that deleted or edited the
// Gateway, or removed the CRDs, leaves it restored for the next one. It is
// never uninstalled: the cluster goes with make e2e's teardown.
func installGateway(t *testing.T) gatewayInfo {
	t.Helper()
	ctx := t.Context()
	gatewayMu.Lock()
	defer gatewayMu.Unlock()
	if _, err := os.Stat(gatewayCRDDir); err != nil {
		t.Fatalf("no Gateway API CRDs at %s (%v): run make gateway-tools (make e2e does)", gatewayCRDDir, err)
	}
	checkTraefikImage(t)
	start := time.Now()
	// Server-side: the CRDs are too large for the last-applied annotation.
	apply := func(path string) {
		t.Helper()
		k8s.kubectlOK(t, ctx, "", "apply", "--server-side", "--force-conflicts", "--field-manager", "e2e-gateway", "-f", path)
	}
	apply(gatewayCRDDir)
	k8s.kubectlOK(t, ctx, "", "wait", "--for", "condition=Established", "--timeout", "60s",
		"crd/gatewayclasses.gateway.networking.k8s.io", "crd/gateways.gateway.networking.k8s.io",
		"crd/tlsroutes.gateway.networking.k8s.io", "crd/tcproutes.gateway.networking.k8s.io")
	apply(gatewayManifest)
	traefikReady(t, ctx)

	var info gatewayInfo
	eventually(t, ctx, 2*time.Minute, "Gateway "+gatewayNamespace+"/"+gatewayName+" Programmed with an address", func(ctx context.Context) (bool, string) {
		var class gwv1.GatewayClass
		if err := k8s.client.Get(ctx, client.ObjectKey{Name: gatewayClassName}, &class); err != nil {
			return false, err.Error()
		}
		if c := meta.FindStatusCondition(class.Status.Conditions, string(gwv1.GatewayClassConditionStatusAccepted)); c == nil || c.Status != metav1.ConditionTrue {
			return false, fmt.Sprintf("GatewayClass %s: Accepted %+v", gatewayClassName, c)
		}
		var gw gwv1.Gateway
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: gatewayNamespace, Name: gatewayName}, &gw); err != nil {
			return false, err.Error()
		}
		if c := meta.FindStatusCondition(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed)); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != gw.Generation {
			return false, fmt.Sprintf("Programmed %+v (generation %d)", c, gw.Generation)
		}
		if len(gw.Status.Addresses) == 0 {
			return false, "no status.addresses"
		}
		info = gatewayInfo{Namespace: gatewayNamespace, Name: gatewayName, Address: gw.Status.Addresses[0].Value, Ports: map[string]int32{}}
		for _, l := range gw.Spec.Listeners {
			info.Ports[string(l.Name)] = int32(l.Port)
		}
		return true, ""
	})
	t.Logf("gateway %s/%s at %s, sections %v (installed or checked in %s)", info.Namespace, info.Name, info.Address, info.Ports, time.Since(start).Round(100*time.Millisecond))
	return info
}

// checkTraefikImage fails early when the manifest's image is not the one
// hack/cluster packs: the pod would only say ErrImageNeverPull.
func checkTraefikImage(t *testing.T) {
	t.Helper()
	pins, err := os.ReadFile(gatewayVersions)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^TRAEFIK_VERSION=(\S+)$`).FindSubmatch(pins)
	if m == nil {
		t.Fatalf("%s has no TRAEFIK_VERSION", gatewayVersions)
	}
	manifest, err := os.ReadFile(gatewayManifest)
	if err != nil {
		t.Fatal(err)
	}
	if want := "image: localhost/traefik:" + string(m[1]); !strings.Contains(string(manifest), want) {
		t.Fatalf("%s does not say %q, the image hack/cluster packs from the pin in %s", gatewayManifest, want, gatewayVersions)
	}
}

// traefikReady waits for Traefik's Deployment to have its one pod Ready,
// and says why not (e.g. ErrImageNeverPull: the cluster came up before
// bin/tools/traefik existed).
func traefikReady(t *testing.T, ctx context.Context) {
	t.Helper()
	eventually(t, ctx, 2*time.Minute, "Traefik ready in "+gatewayNamespace, func(ctx context.Context) (bool, string) {
		var d appsv1.Deployment
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: gatewayNamespace, Name: "traefik"}, &d); err != nil {
			return false, err.Error()
		}
		var pods corev1.PodList
		if err := k8s.client.List(ctx, &pods, client.InNamespace(gatewayNamespace), client.MatchingLabels{"app": "traefik"}); err != nil {
			return false, err.Error()
		}
		var states []string
		for i := range pods.Items {
			p := &pods.Items[i]
			states = append(states, p.Name+"="+podState(p))
			if podState(p) == "ErrImageNeverPull" {
				states = append(states, "(no Traefik image on the node: make gateway-tools, then bring the cluster up again, or hack/cluster/cluster.sh images && hack/cluster/cluster.sh deploy)")
			}
		}
		done := d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == 1 && d.Status.ReadyReplicas == 1 && d.Status.Replicas == 1
		return done, fmt.Sprintf("deployment %d/%d ready; pods %v", d.Status.ReadyReplicas, d.Status.Replicas, states)
	})
}

// allowGatewayRoutes labels namespace ns so the shared Gateway admits its
// routes.
func allowGatewayRoutes(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+gatewayAccessLabel+`":"`+gatewayAccessAllowed+`"}}}`))
	if err := k8s.client.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, patch); err != nil {
		t.Fatalf("label namespace %s %s=%s: %v", ns, gatewayAccessLabel, gatewayAccessAllowed, err)
	}
}

// routeParentConditions reads the conditions Traefik wrote on TLSRoute
// ns/name for the shared Gateway's section; nil when it wrote none.
func routeParentConditions(ctx context.Context, ns, name, section string) ([]metav1.Condition, int64, error) {
	var route gwv1.TLSRoute
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &route); err != nil {
		return nil, 0, err
	}
	return parentConditions(&route, section), route.Generation, nil
}

// parentConditions is the route's status.parents[] entry that Traefik
// (its controllerName) wrote for the shared Gateway's section.
func parentConditions(route *gwv1.TLSRoute, section string) []metav1.Condition {
	return sectionConditions(route.Status.Parents, section)
}

// sectionConditions is the entry of a route's status.parents that Traefik
// (its controllerName) wrote for the shared Gateway's section.
func sectionConditions(parents []gwv1.RouteParentStatus, section string) []metav1.Condition {
	for _, p := range parents {
		ref := p.ParentRef
		if string(p.ControllerName) == gatewayController && string(ref.Name) == gatewayName &&
			ref.Namespace != nil && string(*ref.Namespace) == gatewayNamespace && ref.SectionName != nil && string(*ref.SectionName) == section {
			return p.Conditions
		}
	}
	return nil
}

// attached says whether the conditions hold Accepted and ResolvedRefs True
// for the route's generation: Accepted alone also appears for a backend
// that does not exist (docs/gateway.md).
func attached(conds []metav1.Condition, generation int64) (accepted, resolved bool) {
	is := func(typ string) bool {
		c := meta.FindStatusCondition(conds, typ)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == generation
	}
	return is(string(gwv1.RouteConditionAccepted)), is(string(gwv1.RouteConditionResolvedRefs))
}

// routeAttached says whether Traefik reports TLSRoute ns/name Accepted and
// ResolvedRefs for the section (see attached), and what it reports.
func routeAttached(ctx context.Context, ns, name, section string) (accepted, resolved bool, msg string) {
	conds, gen, err := routeParentConditions(ctx, ns, name, section)
	if err != nil {
		return false, false, err.Error()
	}
	accepted, resolved = attached(conds, gen)
	return accepted, resolved, fmt.Sprintf("conditions for section %s: %+v", section, conds)
}

// gatewayGet sends GET https://<sni>:<port>/ to the Gateway's address on a
// section's port, with sni as the TLS server name, trusting only roots: a
// passthrough route hands the connection to the backend, whose own
// certificate the client checks. It returns the trimmed body.
func gatewayGet(ctx context.Context, gw gatewayInfo, section, sni string, roots *x509.CertPool) (string, error) {
	port, ok := gw.Ports[section]
	if !ok {
		return "", fmt.Errorf("the Gateway has no section %q (it has %v)", section, gw.Ports)
	}
	target := net.JoinHostPort(gw.Address, strconv.Itoa(int(port)))
	c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{RootCAs: roots, ServerName: sni, MinVersion: tls.VersionTLS12},
		// The name is not in any DNS: every connection goes to the Gateway.
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, target)
		},
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort(sni, strconv.Itoa(int(port)))+"/", nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return strings.TrimSpace(string(body)), err
}

// answersThroughGateway waits until the Gateway's section, dialled with
// server name sni, answers with pod's greeting.
func answersThroughGateway(t *testing.T, ctx context.Context, gw gatewayInfo, section, sni string, roots *x509.CertPool, pod string) {
	t.Helper()
	eventually(t, ctx, time.Minute, fmt.Sprintf("https://%s via %s:%d answered by %s", sni, gw.Address, gw.Ports[section], pod), func(ctx context.Context) (bool, string) {
		body, err := gatewayGet(ctx, gw, section, sni, roots)
		if err != nil {
			return false, err.Error()
		}
		return body == "hello from "+pod, "answered " + body
	})
}

// selfSignedTLS makes a key pair for names (self-signed) as a Secret of
// type kubernetes.io/tls, and a pool that trusts only it.
func selfSignedTLS(t *testing.T, ns, secret string, names ...string) (*corev1.Secret, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: ns},
		Type:       corev1.SecretTypeTLS,
		Data: map[string][]byte{
			corev1.TLSCertKey:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		},
	}, roots
}

// tlsDemoPod is the demo server serving HTTPS on 8443 with the key pair of
// Secret secret (tls.crt and tls.key), mounted at /tls; it answers with its
// pod name.
func tlsDemoPod(ns, name, secret string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Volumes:                       []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}},
			Containers: []corev1.Container{{
				Name: "hello", Image: demoImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Args: []string{"-listen", ":8443", "-tls-dir", "/tls"},
				Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Ports:          []corev1.ContainerPort{{Name: "tls", ContainerPort: 8443}},
				VolumeMounts:   []corev1.VolumeMount{{Name: "tls", MountPath: "/tls", ReadOnly: true}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8443)}}, PeriodSeconds: 1},
			}},
		},
	}
}

// tlsRoute is a TLSRoute of hostname to Service backend:port, attached to
// one section of the shared Gateway.
func tlsRoute(ns, name, section, hostname, backend string, port int32) *gwv1.TLSRoute {
	return &gwv1.TLSRoute{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gwv1.TLSRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{
				Name: gatewayName, Namespace: ptr.To(gwv1.Namespace(gatewayNamespace)), SectionName: ptr.To(gwv1.SectionName(section)),
			}}},
			Hostnames: []gwv1.Hostname{gwv1.Hostname(hostname)},
			Rules: []gwv1.TLSRouteRule{{BackendRefs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{
				Name: gwv1.ObjectName(backend), Port: ptr.To(gwv1.PortNumber(port)),
			}}}}},
		},
	}
}
