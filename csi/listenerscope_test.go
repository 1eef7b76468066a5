package csi

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// apiCounter counts the requests a client sends to the API server, by
// "<verb> <resource>" (verb: get, list or watch).
type apiCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *apiCounter) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			c.count(req)
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (c *apiCounter) count(req *http.Request) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	resource := parts[len(parts)-1]
	verb := strings.ToLower(req.Method)
	switch {
	case req.URL.Query().Get("watch") == "true":
		verb = "watch"
	case req.Method == http.MethodGet && len(parts) >= 2 && namedRead(parts[len(parts)-2]):
		// A GET of one object: .../<resource>/<name>.
		resource = parts[len(parts)-2]
	case req.Method == http.MethodGet:
		verb = "list"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[verb+" "+resource]++
}

// namedRead reports whether resource is one the driver reads one object of.
func namedRead(resource string) bool {
	switch resource {
	case "listeners", "listenerclasses", "pods", "nodes", "persistentvolumes", "persistentvolumeclaims":
		return true
	}
	return false
}

// listenerCalls are the requests about Listeners since the last call.
func (c *apiCounter) listenerCalls() map[string]int {
	return c.take(func(k string) bool { return strings.HasSuffix(k, " listeners") })
}

// reads are the GETs and LISTs (not watches) since the last call.
func (c *apiCounter) reads() map[string]int {
	return c.take(func(k string) bool { return strings.HasPrefix(k, "get ") || strings.HasPrefix(k, "list ") })
}

// take returns the counts whose "verb resource" key keeps, and starts
// counting afresh.
func (c *apiCounter) take(keep func(string) bool) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.n {
		if keep(k) {
			out[k] = v
		}
	}
	c.n = nil
	return out
}

// nodePlugin is a node-only driver wired as `listener-operator csi
// --mode=node` wires it: a cache of its node's Pods, its Node and the
// ListenerClasses, Listeners through a ListenerScope.
type nodePlugin struct {
	node   csi.NodeClient
	scope  *ListenerScope
	calls  *apiCounter
	socket string
	cache  cache.Cache // the cache under the scope
}

func startNodePlugin(t *testing.T, nodeName string, opts ListenerScopeOptions) *nodePlugin {
	t.Helper()
	return startScoped(t, nodeName, opts, false, false, nil)
}

// startScoped is startNodePlugin, also serving the controller service if
// controller; the server reads through wrap(scope) if wrap is set.
func startScoped(t *testing.T, nodeName string, opts ListenerScopeOptions, controller, seal bool, wrap func(*ListenerScope) client.Reader) *nodePlugin {
	t.Helper()
	e := testenv.Require(t, env)
	calls := &apiCounter{}
	cfg := calls.wrap(e.Config)
	ctx, cancel := context.WithCancel(context.Background())
	c, err := NewCache(ctx, cfg, e.Scheme, CacheOptions{NodeName: nodeName})
	if err != nil {
		t.Fatal(err)
	}
	cacheDone := make(chan error, 1)
	go func() { cacheDone <- c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	live, err := client.NewWithWatch(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	opts.Base = FallbackReader{Cache: c, Live: live}
	opts.Client = live
	opts.Log = testr.New(t)
	scope, err := NewListenerScope(opts)
	if err != nil {
		t.Fatal(err)
	}
	scopeDone := make(chan error, 1)
	go func() { scopeDone <- scope.Start(ctx) }()
	var reader client.Reader = scope
	if wrap != nil {
		reader = wrap(scope)
	}
	srv, err := NewServer(Options{Node: true, Controller: controller, NodeName: nodeName, Reader: reader, Live: live, Log: testr.New(t), SealVolumes: seal})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	lis, err := Listen("unix://" + filepath.Join(dir, "csi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "csi.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		cancel()
		for what, ch := range map[string]chan error{"Serve": done, "cache": cacheDone, "scope": scopeDone} {
			if err := <-ch; err != nil {
				t.Errorf("%s: %v", what, err)
			}
		}
		os.RemoveAll(dir)
	})
	calls.listenerCalls() // what the start cost is not a publish's
	return &nodePlugin{node: csi.NewNodeClient(conn), scope: scope, calls: calls, socket: filepath.Join(dir, "csi.sock"), cache: c}
}

func (p *nodePlugin) publish(t *testing.T, f *fixture, listener, target string) error {
	t.Helper()
	_, err := p.node.NodePublishVolume(t.Context(), &csi.NodePublishVolumeRequest{
		VolumeId: "pvc-" + listener, TargetPath: target, VolumeCapability: mountCap(), VolumeContext: f.volumeContext(listener, listener),
	})
	return err
}

func (p *nodePlugin) unpublish(t *testing.T, listener, target string) {
	t.Helper()
	if _, err := p.node.NodeUnpublishVolume(t.Context(), &csi.NodeUnpublishVolumeRequest{VolumeId: "pvc-" + listener, TargetPath: target}); err != nil {
		t.Fatalf("unpublish %s: %v", target, err)
	}
}

func hostStatus(host string) v1alpha1.ListenerStatus {
	return v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: host, AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 8080}},
	}}
}

func wantCalls(t *testing.T, what string, got map[string]int, want map[string]int) {
	t.Helper()
	if n := want["watch listeners"]; n > 0 && !serverStreamsLists(t) {
		// An API server without streaming lists (WatchList is off by
		// default before 1.34: make test-compat) refuses the watch that
		// asks for initial events; client-go then lists and watches.
		want = maps.Clone(want)
		want["list listeners"], want["watch listeners"] = n, 2*n
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: Listener API calls = %v, want %v", what, got, want)
	}
}

var watchListEnabled = regexp.MustCompile(`(?m)^kubernetes_feature_enabled\{name="WatchList",stage="[A-Z]*"\} 1$`)

// serverStreamsLists reports whether the test API server serves watches with
// initial events (its WatchList feature gate, from its /metrics).
func serverStreamsLists(t *testing.T) bool {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("API server metrics: %v", err)
	}
	return watchListEnabled.Match(raw)
}

// TestListenerScope follows one node plugin through the life of a pod's
// volumes: what it watches, what each publish costs, what it is sent.
func TestListenerScope(t *testing.T) {
	f := newFixture(t)
	used := f.listener("used", f.clusterIP, hostStatus("used-1.example.com"))
	other := f.listener("other", f.clusterIP, hostStatus("other-1.example.com"))
	p := startNodePlugin(t, f.node, ListenerScopeOptions{})
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")

	// A first publish watches that one Listener, nothing else: one watch
	// request, whose initial events (a streaming list) bring the object.
	if err := p.publish(t, f, "used", first); err != nil {
		t.Fatalf("first publish: %v", err)
	}
	wantCalls(t, "first publish", p.calls.listenerCalls(), map[string]int{"watch listeners": 1})
	if got := readFile(t, filepath.Join(first, "default-address/address")); got != "used-1.example.com" {
		t.Errorf("default-address/address = %q", got)
	}
	if n := p.scope.Watches(); n != 1 {
		t.Errorf("watching %d Listeners after one publish, want 1", n)
	}
	reg := prometheus.NewRegistry()
	if err := p.scope.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if got := gathered(t, reg, "listener_operator_csi_listener_watches"); got != 1 {
		t.Errorf("listener_operator_csi_listener_watches = %v, want 1", got)
	}

	// kubelet's republish and a second pod's volume of the same Listener
	// are served from the watch: no API call.
	for i, target := range []string{first, second, first} {
		if err := p.publish(t, f, "used", target); err != nil {
			t.Fatalf("publish #%d: %v", i+2, err)
		}
	}
	wantCalls(t, "republish", p.calls.listenerCalls(), map[string]int{})
	if n := p.scope.Watches(); n != 1 {
		t.Errorf("watching %d Listeners after publishing one Listener three times, want 1", n)
	}

	// Status writes of a Listener no volume here uses are not sent here.
	events := p.scope.Events()
	for i := range 3 {
		f.setStatus(other, hostStatus(fmt.Sprintf("other-%d.example.com", i+2)))
	}
	// One write of the used one is, and the next republish shows it.
	f.setStatus(used, hostStatus("used-2.example.com"))
	testenv.Eventually(t, 10*time.Second, "the republish shows the new address", func() error {
		if err := p.publish(t, f, "used", first); err != nil {
			return err
		}
		if got := readFile(t, filepath.Join(first, "default-address/address")); got != "used-2.example.com" {
			return fmt.Errorf("default-address/address = %q", got)
		}
		return nil
	})
	if got := p.scope.Events() - events; got != 1 {
		t.Errorf("watch events after 3 status writes of another Listener and 1 of the used one = %d, want 1", got)
	}
	wantCalls(t, "republish after a status change", p.calls.listenerCalls(), map[string]int{})

	// The watch ends with the last volume using it.
	p.unpublish(t, "used", second)
	if n := p.scope.Watches(); n != 1 {
		t.Errorf("watching %d Listeners while one volume still uses it, want 1", n)
	}
	p.unpublish(t, "used", first)
	if n := p.scope.Watches(); n != 0 {
		t.Errorf("watching %d Listeners after the last volume was unpublished, want 0", n)
	}
	if got := gathered(t, reg, "listener_operator_csi_listener_watches"); got != 0 {
		t.Errorf("listener_operator_csi_listener_watches = %v after the last unpublish, want 0", got)
	}
	if got := gathered(t, reg, "listener_operator_csi_listener_watch_events_total"); got != float64(p.scope.Events()) || got < 2 {
		t.Errorf("listener_operator_csi_listener_watch_events_total = %v, want %d (at least the first list and one write)", got, p.scope.Events())
	}
}

// gathered is the value of the unlabelled metric name in reg.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name || len(f.GetMetric()) != 1 {
			continue
		}
		m := f.GetMetric()[0]
		if m.GetGauge() != nil {
			return m.GetGauge().GetValue()
		}
		return m.GetCounter().GetValue()
	}
	t.Fatalf("metric %s not gathered", name)
	return 0
}

// TestListenerScopeRecreatedListener: a Listener deleted and made again
// under the same name is published with its new addresses.
func TestListenerScopeRecreatedListener(t *testing.T) {
	f := newFixture(t)
	l := f.listener("web", f.clusterIP, hostStatus("old.example.com"))
	p := startNodePlugin(t, f.node, ListenerScopeOptions{})
	target := filepath.Join(t.TempDir(), "mount")
	if err := p.publish(t, f, "web", target); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Delete(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the deleted Listener is not published", func() error {
		err := p.publish(t, f, "web", target)
		if st, _ := status.FromError(err); st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "not found") {
			return fmt.Errorf("republish of a deleted Listener: %v, want Unavailable: ... not found", err)
		}
		return nil
	})
	f.listener("web", f.clusterIP, hostStatus("new.example.com"))
	testenv.Eventually(t, 10*time.Second, "the recreated Listener is published", func() error {
		if err := p.publish(t, f, "web", target); err != nil {
			return err
		}
		if got := readFile(t, filepath.Join(target, "default-address/address")); got != "new.example.com" {
			return fmt.Errorf("default-address/address = %q", got)
		}
		return nil
	})
	if n := p.scope.Watches(); n != 1 {
		t.Errorf("watching %d Listeners, want 1", n)
	}
}

// TestListenerScopeLimits: past MaxWatches a publish reads its Listener
// live (one GET each time), and the sweep drops what a restart or a missed
// unpublish left behind.
func TestListenerScopeLimits(t *testing.T) {
	f := newFixture(t)
	f.listener("a", f.clusterIP, hostStatus("a.example.com"))
	f.listener("b", f.clusterIP, hostStatus("b.example.com"))
	p := startNodePlugin(t, f.node, ListenerScopeOptions{MaxWatches: 1})
	dir := t.TempDir()
	if err := p.publish(t, f, "a", filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	p.calls.listenerCalls()
	for range 2 {
		if err := p.publish(t, f, "b", filepath.Join(dir, "b")); err != nil {
			t.Fatal(err)
		}
	}
	wantCalls(t, "two publishes past the limit", p.calls.listenerCalls(), map[string]int{"get listeners": 2})
	if got := readFile(t, filepath.Join(dir, "b", "default-address/address")); got != "b.example.com" {
		t.Errorf("default-address/address = %q", got)
	}
	if n, o := p.scope.Watches(), p.scope.Overflows(); n != 1 || o != 2 {
		t.Errorf("watches = %d, overflows = %d; want 1 and 2", n, o)
	}

	// kubelet removed the volume while the plugin was not looking.
	if err := os.RemoveAll(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	p.scope.Sweep()
	if n := p.scope.Watches(); n != 0 {
		t.Errorf("watching %d Listeners after the sweep found their volume gone, want 0", n)
	}
}

// TestListenerScopeIdleWatch: a watch started by a publish that failed
// (the Listener not ready yet, kubelet retries) is kept for the retry and
// swept once nothing reads it for Idle.
func TestListenerScopeIdleWatch(t *testing.T) {
	f := newFixture(t)
	l := f.listener("slow", f.clusterIP, v1alpha1.ListenerStatus{})
	p := startNodePlugin(t, f.node, ListenerScopeOptions{Idle: time.Hour})
	target := filepath.Join(t.TempDir(), "mount")
	err := p.publish(t, f, "slow", target)
	wantCode(t, err, codes.Unavailable)
	p.calls.listenerCalls()
	f.setStatus(l, hostStatus("slow.example.com"))
	testenv.Eventually(t, 10*time.Second, "the retry publishes", func() error { return p.publish(t, f, "slow", target) })
	wantCalls(t, "retries after a failed first publish", p.calls.listenerCalls(), map[string]int{})

	idle := startNodePlugin(t, f.node, ListenerScopeOptions{Idle: time.Nanosecond})
	wantCode(t, idle.publish(t, f, "missing", filepath.Join(t.TempDir(), "m")), codes.Unavailable, "not found")
	idle.scope.Sweep()
	if n := idle.scope.Watches(); n != 0 {
		t.Errorf("watching %d Listeners no volume uses after Idle, want 0", n)
	}
}

// wantNoListenerUsers fails if the scope still counts a volume as using a
// Listener (after every volume was unpublished).
func wantNoListenerUsers(t *testing.T, s *ListenerScope) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.targets) != 0 {
		t.Errorf("after every volume was unpublished the node plugin still counts volumes as using Listeners: %v", s.targets)
	}
	for key, w := range s.watches {
		if w.refs != 0 {
			t.Errorf("watch of %s has %d users after every volume was unpublished", key, w.refs)
		}
	}
}
