//go:build metallb

// Package metallb holds the smoke test of the load balancer the
// LoadBalancer tests use (issue 51): MetalLB's controller, built from the
// module proxy by hack/metallb/build.sh, run out of cluster against an
// envtest kube-apiserver with MetalLB's CRDs. It records which address the
// controller gives a LoadBalancer Service in the cases the operator has to
// tell apart: its load-balancer class or another, an IP shared between
// Services of one sharing key (metallb.io/allow-shared-ip), a port clash
// within a key, an address and a pool asked for (metallb.io/loadBalancerIPs,
// metallb.io/address-pool), an exhausted pool. Announcing (the speaker, L2) needs nodes and a network:
// that is make e2e's.
//
// Run it with `make metallb-smoke` (not part of `make test`): it needs
// bin/tools/metallb-controller and bin/metallb-crds (`make metallb-tools`).
// The table it prints is also written to bin/metallb-smoke.txt, the
// controller's log to bin/metallb-smoke-controller.log.
package metallb

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

const (
	ns      = "smoke"
	lbClass = "listeners.test/metallb"
	// pool is 8 addresses from TEST-NET-1; tiny is one more, given only to
	// the Services that name it (metallb.io/address-pool).
	pool = "192.0.2.240/29"
	tiny = "192.0.2.248/32"
)

// A Service of the test: the case it stands for, its class, sharing key,
// port, traffic policy, the address and the pool it asks for.
type svc struct {
	name, what, class, key, ask, pool string
	port                              int32
	local                             bool
}

// The order matters: each is created after the one before has an address
// or was found to wait, so which address goes where is deterministic.
var services = []svc{
	{name: "plain", what: "(a) the class MetalLB serves", class: lbClass, port: 9092},
	{name: "other-class", what: "(b) another load-balancer class", class: "example.test/other", port: 9092},
	{name: "shared-0", what: "(c) sharing key k, port 9092", class: lbClass, key: "k", port: 9092},
	{name: "shared-1", what: "(d) sharing key k, port 9093: (c)'s IP", class: lbClass, key: "k", port: 9093},
	{name: "shared-clash", what: "(e) sharing key k, port 9092 again", class: lbClass, key: "k", port: 9092},
	{name: "shared-local", what: "(f) sharing key k, port 9094, externalTrafficPolicy Local", class: lbClass, key: "k", port: 9094, local: true},
	{name: "asked", what: "(g) asks for 192.0.2.247 (metallb.io/loadBalancerIPs)", class: lbClass, ask: "192.0.2.247", port: 9092},
	{name: "tiny-0", what: "(h) asks for pool tiny (metallb.io/address-pool)", class: lbClass, pool: "tiny", port: 9092},
	{name: "full", what: "(i) asks for pool tiny, whose one address (h) has", class: lbClass, pool: "tiny", port: 9092},
}

func TestMetalLBControllerAssigns(t *testing.T) {
	env := testenv.Require(t, env)
	root := testenv.RepoRoot()
	controller := filepath.Join(root, "bin", "tools", "metallb-controller")
	crds := filepath.Join(root, "bin", "metallb-crds")
	for _, p := range []string{controller, crds} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: run `make metallb-tools` (hack/metallb/build.sh): %v", p, err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{crds}, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("install MetalLB's CRDs: %v", err)
	}
	c := env.Client
	for _, n := range []string{"metallb-system", ns} {
		testenv.Create(t, ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	ipPool := func(name, addresses string, auto bool) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "metallb.io/v1beta1", "kind": "IPAddressPool",
			"metadata": map[string]any{"name": name, "namespace": "metallb-system"},
			"spec":     map[string]any{"addresses": []any{addresses}, "autoAssign": auto},
		}}
	}
	// The controller reads its own pod (owner of the ConfigurationState it
	// writes): out of cluster, a pod object that never runs stands for it.
	self := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "controller", Namespace: "metallb-system"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "controller", Image: "metallb-controller"}}}}
	testenv.Create(t, ctx, c, ipPool("smoke", pool, true), ipPool("tiny", tiny, false), self)
	startController(t, env, controller, self.Name)

	var table strings.Builder
	fmt.Fprintf(&table, "MetalLB controller (hack/metallb/versions), --lb-class=%s, pools smoke %s and tiny %s (not auto-assigned)\n\n| Service | ingress MetalLB writes | event |\n|---|---|---|\n", lbClass, pool, tiny)
	got := map[string]string{}
	for _, s := range services {
		testenv.Create(t, ctx, c, service(s))
		ip, event := settle(t, ctx, c, s.name)
		got[s.name] = ip
		fmt.Fprintf(&table, "| %s %s | %s | %s |\n", s.name, s.what, or(ip, "none"), or(event, "–"))
	}
	t.Log("\n" + table.String())
	if err := os.WriteFile(filepath.Join(root, "bin", "metallb-smoke.txt"), []byte(table.String()), 0o644); err != nil {
		t.Error(err)
	}

	inPool := func(ip string) bool { _, n, _ := net.ParseCIDR(pool); return n.Contains(net.ParseIP(ip)) }
	for _, check := range []struct {
		what string
		ok   bool
	}{
		{"(a) gets an address of the pool", inPool(got["plain"])},
		{"(b) is left alone", got["other-class"] == ""},
		{"(c) and (d) share one address", got["shared-0"] != "" && got["shared-0"] == got["shared-1"]},
		{"(e) does not get (c)'s address", got["shared-clash"] != got["shared-0"]},
		{"(f) does not get (c)'s address", got["shared-local"] != got["shared-0"]},
		{"(g) gets the address it asks for", got["asked"] == "192.0.2.247"},
		{"(h) gets the pool's address", got["tiny-0"] == "192.0.2.248"},
		{"(i) gets none", got["full"] == ""},
	} {
		if !check.ok {
			t.Errorf("%s: got %v", check.what, got)
		}
	}
}

func service(s svc) *corev1.Service {
	out := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: ns, Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To(s.class),
			AllocateLoadBalancerNodePorts: ptr.To(false), Selector: map[string]string{"app": s.name},
			Ports: []corev1.ServicePort{{Name: "tcp", Port: s.port, TargetPort: intstr.FromInt32(9092), Protocol: corev1.ProtocolTCP}}},
	}
	if s.key != "" {
		out.Annotations["metallb.io/allow-shared-ip"] = s.key
	}
	if s.ask != "" {
		out.Annotations["metallb.io/loadBalancerIPs"] = s.ask
	}
	if s.pool != "" {
		out.Annotations["metallb.io/address-pool"] = s.pool
	}
	if s.local {
		out.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}
	return out
}

// settle waits until Service name has an ingress address or MetalLB
// recorded an event about it, then gives MetalLB two seconds more to
// change its mind, and returns the address and the last event.
func settle(t *testing.T, ctx context.Context, c client.Client, name string) (ip, event string) {
	t.Helper()
	read := func() {
		s := &corev1.Service{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			t.Fatal(err)
		}
		ip = ""
		if len(s.Status.LoadBalancer.Ingress) > 0 {
			ip = s.Status.LoadBalancer.Ingress[0].IP
		}
		events := &eventsv1.EventList{}
		if err := c.List(ctx, events, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		event = ""
		for _, e := range events.Items {
			if e.Regarding.Name == name {
				event = e.Reason + ": " + e.Note
			}
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for read(); ip == "" && event == "" && time.Now().Before(deadline); read() {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	read()
	return ip, event
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// startController runs MetalLB's controller out of cluster (webhooks off,
// no metrics) for the Services of lbClass, and stops it when the test ends.
func startController(t *testing.T, env *testenv.Env, bin, pod string) {
	t.Helper()
	logPath := filepath.Join(testenv.RepoRoot(), "bin", "metallb-smoke-controller.log")
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p, err := env.StartProcess(logPath, bin, "--namespace=metallb-system", "--webhook-mode=disabled", "--disable-cert-rotation",
		"--port=0", fmt.Sprintf("--health-probe-port=%d", port), "--lb-class="+lbClass, "--pod-name="+pod, "--log-level=debug")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	if exited, err := p.ExitedWithin(2 * time.Second); exited {
		t.Fatalf("MetalLB's controller exited at once: %v (log: %s)", err, logPath)
	}
}
