//go:build gateway

// Package gateway holds the smoke test of the gateway that e2e uses for
// gateway classes (issue 39): Traefik, built from source by
// hack/gateway/build-traefik.sh, run out of cluster against an envtest
// kube-apiserver with the Gateway API CRDs of the version it is built
// against. It records what Traefik writes into the status of a
// GatewayClass, a Gateway and TLSRoutes in the cases the operator has to
// tell apart, and proves a passthrough connection by SNI reaches the
// backend with its own certificate.
//
// Run it with `make gateway-smoke` (not part of `make test`): it needs
// bin/tools/traefik and bin/gateway-crds (`make gateway-tools`). The table
// it prints is also written to bin/gateway-smoke.txt; Traefik's log to
// bin/gateway-smoke-traefik.log.
package gateway

import (
	"bufio"
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

// The names Traefik and the test share.
const (
	controllerName = "traefik.io/gateway-controller"
	gatewayNS      = "gateway-system"
	allowedNS      = "kafka"  // labeled so the Gateway admits its routes
	deniedNS       = "tenant" // not labeled
	admitLabel     = "gateway-access"
	domain         = "gw.test" // the listener's hostname is *.gw.test
)

var (
	gatewayClassGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}
	gatewayGVR      = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	tlsRouteGVR     = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "tlsroutes"}
)

// A route of the test: the case it stands for and where it points (the
// Gateway's listener tls unless section says otherwise).
type route struct {
	ns, name, hostname, gateway, service, what string
	section                                    string
}

var routes = []route{
	{allowedNS, "accepted", "broker-0." + domain, "shared", "broker-0", "(a) accepted: admitted namespace, Service with a ready endpoint", ""},
	{deniedNS, "not-admitted", "tenant-0." + domain, "shared", "broker-0", "(b) namespace the listener's allowedRoutes does not admit", ""},
	{allowedNS, "no-backend", "broker-9." + domain, "shared", "missing", "(c) backend Service does not exist", ""},
	{allowedNS, "no-gateway", "broker-1." + domain, "absent", "broker-0", "(d) parentRef names a Gateway that does not exist", ""},
	{allowedNS, "other-hostname", "broker-0.elsewhere.test", "shared", "broker-0", "(e) hostname outside the listener's *." + domain, ""},
	{allowedNS, "no-endpointslice", "broker-2." + domain, "shared", "no-slice", "(f) backend Service without any EndpointSlice", ""},
	{allowedNS, "no-ready-endpoint", "broker-3." + domain, "shared", "not-ready", "(g) backend Service whose EndpointSlice has no ready endpoint", ""},
	{allowedNS, "same-hostname", "broker-0." + domain, "shared", "broker-0", "(h) the same hostname as (a), made later", ""},
	{allowedNS, "no-section", "broker-4." + domain, "shared", "broker-0", "(i) sectionName names no listener of the Gateway", "nope"},
}

func TestTraefikTLSRoutePassthrough(t *testing.T) {
	env := testenv.Require(t, env)
	root := testenv.RepoRoot()
	traefik := filepath.Join(root, "bin", "tools", "traefik")
	crds := filepath.Join(root, "bin", "gateway-crds", "standard")
	for _, p := range []string{traefik, crds} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: run `make gateway-tools` (hack/gateway/build-traefik.sh): %v", p, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dyn := dynamic.NewForConfigOrDie(env.Config)

	// Server-side: the CRDs are too large for kubectl's last-applied annotation.
	if out, err := env.Kubectl(ctx, nil, "apply", "--server-side", "-f", crds); err != nil {
		t.Fatalf("install the Gateway API CRDs from %s: %v\n%s", crds, err, out)
	}
	if out, err := env.Kubectl(ctx, nil, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/gatewayclasses.gateway.networking.k8s.io", "crd/gateways.gateway.networking.k8s.io", "crd/tlsroutes.gateway.networking.k8s.io"); err != nil {
		t.Fatalf("wait for the CRDs: %v\n%s", err, out)
	}

	backendPort := serveBackend(t, "broker-0."+domain)
	gatewayPort, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	apply(t, ctx, env, manifests(gatewayPort, backendPort))
	startTraefik(t, env, traefik, gatewayPort)

	var table strings.Builder
	fmt.Fprintf(&table, "Traefik %s, Gateway listener tls: TLS Passthrough on 127.0.0.1:%d, hostname *.%s, allowedRoutes from Selector %s=allowed\n\n", traefikVersion(t, traefik), gatewayPort, domain, admitLabel)
	fmt.Fprintf(&table, "| object | status Traefik writes |\n|---|---|\n")

	gc := waitFor(t, ctx, dyn, gatewayClassGVR, "", "traefik", func(o obj) bool { return hasCondition(o.Status.Conditions, "Accepted", "True") })
	fmt.Fprintf(&table, "| GatewayClass traefik | %s |\n", conditions(gc.Status.Conditions))
	gw := waitFor(t, ctx, dyn, gatewayGVR, gatewayNS, "shared", func(o obj) bool { return hasCondition(o.Status.Conditions, "Programmed", "True") })

	// Every route but (d) gets a parent status: wait for all of them, then
	// give Traefik time to write (d)'s too, should it.
	byName := map[string]obj{}
	for _, r := range routes {
		if r.gateway == "absent" {
			continue
		}
		byName[r.name] = waitFor(t, ctx, dyn, tlsRouteGVR, r.ns, r.name, func(o obj) bool {
			return len(o.Status.Parents) > 0 && len(o.Status.Parents[0].Conditions) >= 2
		})
	}
	// Attached routes are counted once all routes are loaded: read the
	// Gateway again once (a) is Accepted.
	waitFor(t, ctx, dyn, tlsRouteGVR, allowedNS, "accepted", func(o obj) bool {
		return hasCondition(o.Status.Parents[0].Conditions, "Accepted", "True")
	})
	time.Sleep(5 * time.Second)
	gw = get(t, ctx, dyn, gatewayGVR, gatewayNS, "shared")
	fmt.Fprintf(&table, "| Gateway shared | addresses %s; %s |\n", addresses(gw), conditions(gw.Status.Conditions))
	for _, l := range gw.Status.Listeners {
		fmt.Fprintf(&table, "| Gateway shared, listener %s | attachedRoutes %d, supportedKinds %s; %s |\n", l.Name, l.AttachedRoutes, kinds(l.SupportedKinds), conditions(l.Conditions))
	}
	for _, r := range routes {
		o := get(t, ctx, dyn, tlsRouteGVR, r.ns, r.name)
		byName[r.name] = o
		fmt.Fprintf(&table, "| TLSRoute %s/%s %s | %s |\n", r.ns, r.name, r.what, parents(o))
	}

	// The data plane: the accepted route's name reaches the backend, whose
	// own certificate the client verifies (passthrough: Traefik does not
	// terminate); the other names are refused.
	answer, err := dialSNI(gatewayPort, "broker-0."+domain)
	if err != nil || answer != "broker-0."+domain {
		t.Errorf("SNI broker-0.%s through the Gateway: answer %q, error %v; want the backend's name", domain, answer, err)
	}
	fmt.Fprintf(&table, "\nSNI broker-0.%s through 127.0.0.1:%d: answer %q, error %v\n", domain, gatewayPort, answer, err)
	for _, name := range []string{"tenant-0." + domain, "broker-9." + domain, "broker-1." + domain, "broker-3." + domain, "unknown." + domain} {
		answer, err := dialSNI(gatewayPort, name)
		if err == nil {
			t.Errorf("SNI %s through the Gateway: answer %q; want the connection refused", name, answer)
		}
		fmt.Fprintf(&table, "SNI %s: answer %q, error %v\n", name, answer, err)
	}

	// What the accepted route keeps when its Gateway goes away.
	if err := dyn.Resource(gatewayGVR).Namespace(gatewayNS).Delete(ctx, "shared", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete the Gateway: %v", err)
	}
	time.Sleep(10 * time.Second)
	after := get(t, ctx, dyn, tlsRouteGVR, allowedNS, "accepted")
	fmt.Fprintf(&table, "\nAfter the Gateway is deleted (10 s): TLSRoute %s/accepted: %s\n", allowedNS, parents(after))
	answer, err = dialSNI(gatewayPort, "broker-0."+domain)
	fmt.Fprintf(&table, "SNI broker-0.%s after the Gateway is deleted: answer %q, error %v\n", domain, answer, err)

	t.Log("\n" + table.String())
	if err := os.WriteFile(filepath.Join(root, "bin", "gateway-smoke.txt"), []byte(table.String()), 0o644); err != nil {
		t.Error(err)
	}

	// The cases the operator tells apart must look as recorded.
	want := map[string][]string{
		"accepted":          {"Accepted=True/Accepted", "ResolvedRefs=True/ResolvedRefs"},
		"not-admitted":      {"Accepted=False/NotAllowedByListeners", "ResolvedRefs=True/ResolvedRefs"},
		"no-backend":        {"Accepted=True/Accepted", "ResolvedRefs=False/BackendNotFound"},
		"other-hostname":    {"Accepted=False/NoMatchingListenerHostname", "ResolvedRefs=True/ResolvedRefs"},
		"no-endpointslice":  {"Accepted=True/Accepted", "ResolvedRefs=False/BackendNotFound"},
		"no-ready-endpoint": {"Accepted=True/Accepted", "ResolvedRefs=True/ResolvedRefs"},
		// Traefik has no reason for a hostname another route already has.
		"same-hostname": {"Accepted=True/Accepted", "ResolvedRefs=True/ResolvedRefs"},
		"no-section":    {"Accepted=False/NoMatchingParent", "ResolvedRefs=True/ResolvedRefs"},
	}
	for name, w := range want {
		o := byName[name]
		if len(o.Status.Parents) != 1 {
			t.Errorf("TLSRoute %s: %d parent statuses, want 1", name, len(o.Status.Parents))
			continue
		}
		if got := short(o.Status.Parents[0].Conditions); !slices.Equal(got, w) {
			t.Errorf("TLSRoute %s: conditions %v, want %v", name, got, w)
		}
	}
	if n := len(byName["no-gateway"].Status.Parents); n != 0 {
		t.Errorf("TLSRoute no-gateway: %d parent statuses, want none (Traefik writes none for a Gateway it does not have)", n)
	}
}

// manifests are the objects of the test, in the order they are applied.
func manifests(gatewayPort, backendPort int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `
apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: v1
kind: Namespace
metadata: {name: %[2]s, labels: {%[4]s: allowed}}
---
apiVersion: v1
kind: Namespace
metadata: {name: %[3]s}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: traefik}
spec: {controllerName: %[5]s}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: shared, namespace: %[1]s}
spec:
  gatewayClassName: traefik
  listeners:
  - name: tls
    protocol: TLS
    port: %[6]d
    hostname: "*.%[7]s"
    tls: {mode: Passthrough}
    allowedRoutes:
      kinds: [{kind: TLSRoute}]
      namespaces:
        from: Selector
        selector: {matchLabels: {%[4]s: allowed}}
`, gatewayNS, allowedNS, deniedNS, admitLabel, controllerName, gatewayPort, domain)
	// The backend runs in the test process, on 127.0.0.1: a Service without a
	// selector and an EndpointSlice, in both route namespaces. The API server
	// refuses loopback IPs in an IPv4 slice, so the slice is of type FQDN
	// with the address "127.0.0.1" (a valid domain name): Traefik reads the
	// addresses of any slice of the Service (kubernetes.io/service-name)
	// without looking at its type, and dials that.
	for _, ns := range []string{allowedNS, deniedNS} {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Service
metadata: {name: broker-0, namespace: %[1]s}
spec:
  ports: [{name: kafka-tls, port: 9093, targetPort: %[2]d}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: broker-0-test
  namespace: %[1]s
  labels: {kubernetes.io/service-name: broker-0}
addressType: FQDN
endpoints: [{addresses: ["127.0.0.1"], conditions: {ready: true}}]
ports: [{name: kafka-tls, port: %[2]d, protocol: TCP}]
`, ns, backendPort)
	}
	// Services whose pods are not there: one without any EndpointSlice (as in
	// envtest, which runs no EndpointSlice controller), one whose slice has
	// no ready endpoint (a real cluster's Service before its pods are Ready).
	fmt.Fprintf(&b, `---
apiVersion: v1
kind: Service
metadata: {name: no-slice, namespace: %[1]s}
spec:
  ports: [{name: kafka-tls, port: 9093}]
---
apiVersion: v1
kind: Service
metadata: {name: not-ready, namespace: %[1]s}
spec:
  ports: [{name: kafka-tls, port: 9093}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: not-ready-test
  namespace: %[1]s
  labels: {kubernetes.io/service-name: not-ready}
addressType: IPv4
endpoints: [{addresses: [10.0.0.99], conditions: {ready: false}}]
ports: [{name: kafka-tls, port: 9093, protocol: TCP}]
`, allowedNS)
	for _, r := range routes {
		fmt.Fprintf(&b, `---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: %s, namespace: %s}
spec:
  parentRefs: [{name: %s, namespace: %s, sectionName: %s}]
  hostnames: [%q]
  rules: [{backendRefs: [{name: %s, port: 9093}]}]
`, r.name, r.ns, r.gateway, gatewayNS, cmp.Or(r.section, "tls"), r.hostname, r.service)
	}
	return b.String()
}

func apply(t *testing.T, ctx context.Context, env *testenv.Env, yaml string) {
	t.Helper()
	if out, err := env.Kubectl(ctx, []byte(yaml), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

// startTraefik runs Traefik out of cluster with the Gateway provider only,
// one entry point on 127.0.0.1 whose port is the Gateway listener's (Traefik
// maps a listener to the entry point of its port), and stops it when the
// test ends.
func startTraefik(t *testing.T, env *testenv.Env, bin string, port int) {
	t.Helper()
	logPath := filepath.Join(testenv.RepoRoot(), "bin", "gateway-smoke-traefik.log")
	p, err := env.StartProcess(logPath, bin,
		fmt.Sprintf("--entrypoints.tls.address=127.0.0.1:%d", port),
		"--providers.kubernetesgateway=true",
		// Gateway status.addresses: Traefik writes what it is told.
		"--providers.kubernetesgateway.statusaddress.ip=127.0.0.1",
		"--global.checknewversion=false",
		"--global.sendanonymoususage=false",
		"--log.level=DEBUG",
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		t.Logf("Traefik stopped; its log: %s", logPath)
	})
	if exited, err := p.ExitedWithin(time.Second); exited {
		t.Fatalf("Traefik exited at once: %v (log: %s)", err, logPath)
	}
}

func traefikVersion(t *testing.T, bin string) string {
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "Version:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return strings.TrimSpace(string(out))
}

// serveBackend serves TLS on 127.0.0.1 with a self-signed certificate for
// name and answers every connection with name.
func serveBackend(t *testing.T, name string) int {
	t.Helper()
	cert := selfSigned(t, name)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				_, _ = fmt.Fprintln(c, name)
			}()
		}
	}()
	backendRoots.AddCert(cert.Leaf)
	return l.Addr().(*net.TCPAddr).Port
}

// backendRoots trusts the backend's certificate only: a connection that
// verifies reached the backend, not Traefik's default certificate.
var backendRoots = x509.NewCertPool()

func selfSigned(t *testing.T, name string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		DNSNames:              []string{name},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// dialSNI connects to the Gateway with server name sni, verifies the
// backend's certificate and returns the first line it says.
func dialSNI(port int, sni string) (string, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{ServerName: sni, RootCAs: backendRoots})
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// obj is the part of a GatewayClass, Gateway or TLSRoute the test reads.
type obj struct {
	Status struct {
		Conditions []metav1.Condition `json:"conditions"`
		Addresses  []struct {
			Type  string `json:"type"`
			Value string `json:"value"`
		} `json:"addresses"`
		Listeners []struct {
			Name           string `json:"name"`
			AttachedRoutes int    `json:"attachedRoutes"`
			SupportedKinds []struct {
				Kind string `json:"kind"`
			} `json:"supportedKinds"`
			Conditions []metav1.Condition `json:"conditions"`
		} `json:"listeners"`
		Parents []struct {
			ParentRef struct {
				Name        string `json:"name"`
				Namespace   string `json:"namespace"`
				SectionName string `json:"sectionName"`
			} `json:"parentRef"`
			ControllerName string             `json:"controllerName"`
			Conditions     []metav1.Condition `json:"conditions"`
		} `json:"parents"`
	} `json:"status"`
}

func get(t *testing.T, ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, name string) obj {
	t.Helper()
	o, err := getErr(ctx, dyn, gvr, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func getErr(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, name string) (obj, error) {
	var o obj
	u, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return o, fmt.Errorf("get %s %s/%s: %w", gvr.Resource, ns, name, err)
	}
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return o, err
	}
	return o, json.Unmarshal(raw, &o)
}

// waitFor waits up to two minutes (Traefik starts slowly on a loaded
// machine) for ok and returns the object.
func waitFor(t *testing.T, ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, name string, ok func(obj) bool) obj {
	t.Helper()
	var o obj
	testenv.Eventually(t, 2*time.Minute, fmt.Sprintf("%s %s/%s", gvr.Resource, ns, name), func() error {
		var err error
		if o, err = getErr(ctx, dyn, gvr, ns, name); err != nil {
			return err
		}
		if !ok(o) {
			return fmt.Errorf("status %+v", o.Status)
		}
		return nil
	})
	return o
}

func hasCondition(cs []metav1.Condition, typ, status string) bool {
	for _, c := range cs {
		if c.Type == typ && string(c.Status) == status {
			return true
		}
	}
	return false
}

func short(cs []metav1.Condition) []string {
	var s []string
	for _, c := range cs {
		s = append(s, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	return s
}

func conditions(cs []metav1.Condition) string {
	if len(cs) == 0 {
		return "no conditions"
	}
	var s []string
	for _, c := range cs {
		m := ""
		if c.Message != "" && c.Message != c.Reason {
			m = fmt.Sprintf(" (%q)", c.Message)
		}
		s = append(s, fmt.Sprintf("%s=%s/%s%s", c.Type, c.Status, c.Reason, m))
	}
	return strings.Join(s, ", ")
}

func addresses(o obj) string {
	if len(o.Status.Addresses) == 0 {
		return "none"
	}
	var s []string
	for _, a := range o.Status.Addresses {
		s = append(s, a.Type+" "+a.Value)
	}
	return strings.Join(s, ", ")
}

func kinds(ks []struct {
	Kind string `json:"kind"`
}) string {
	var s []string
	for _, k := range ks {
		s = append(s, k.Kind)
	}
	return "[" + strings.Join(s, " ") + "]"
}

func parents(o obj) string {
	if len(o.Status.Parents) == 0 {
		return "no status.parents"
	}
	var s []string
	for _, p := range o.Status.Parents {
		s = append(s, fmt.Sprintf("parent %s/%s#%s (%s): %s", p.ParentRef.Namespace, p.ParentRef.Name, p.ParentRef.SectionName, p.ControllerName, conditions(p.Conditions)))
	}
	return strings.Join(s, "; ")
}
