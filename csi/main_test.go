package csi

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/volumes"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

var env *testenv.Env

// TestMain starts the test API server. The node plugin's caches trim pods
// (caches.TrimPod) and compact the rest (caches.Compact): those transforms
// share no maps between objects, so there is nothing for a publish to
// corrupt (caches.TestNothingReachesACachedObject).
func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

// driver is a running Server with clients connected to it over its socket.
type driver struct {
	identity   csi.IdentityClient
	controller csi.ControllerClient
	node       csi.NodeClient
	socket     string
	metrics    *prometheus.Registry
	cache      cache.Cache
	server     *Server
}

// startDriver serves both services on a fresh Unix socket until the test
// ends, reading through the same kind of cache as the binary does.
// opts.Live defaults to the test environment's client.
func startDriver(t testing.TB, opts Options) *driver {
	t.Helper()
	e := testenv.Require(t, env)
	if opts.NodeName == "" {
		opts.NodeName = "node-unused"
	}
	ctx, cancel := context.WithCancel(context.Background())
	c, err := NewCache(ctx, e.Config, e.Scheme, CacheOptions{NodeName: opts.NodeName})
	if err != nil {
		t.Fatal(err)
	}
	cacheDone := make(chan error, 1)
	go func() { cacheDone <- c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	if opts.Live == nil {
		opts.Live = e.Client
	}
	opts.Reader = FallbackReader{Cache: c, Live: opts.Live}
	opts.Controller, opts.Node = true, true
	switch tb := t.(type) {
	case *testing.B:
		opts.Log = logr.Discard() // a line per call would measure the terminal
	case *testing.T:
		if opts.Log.GetSink() == nil {
			opts.Log = testr.New(tb)
		}
	}
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	opts.Metrics = m
	srv, err := NewServer(opts)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	// Socket paths are limited to ~100 bytes: keep them out of t.TempDir().
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "csi.sock")
	lis, err := Listen("unix://" + socket)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if err := <-cacheDone; err != nil {
			t.Errorf("cache: %v", err)
		}
		os.RemoveAll(dir)
	})
	return &driver{
		identity:   csi.NewIdentityClient(conn),
		controller: csi.NewControllerClient(conn),
		node:       csi.NewNodeClient(conn),
		socket:     socket,
		metrics:    reg,
		cache:      c,
		server:     srv,
	}
}

func uniq(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// fixture is a namespace with a node, a pod on it and listener classes of
// every kind, all with names unique to the test.
type fixture struct {
	t         testing.TB
	c         client.Client
	ns        string
	node      string
	pod       string
	cache     cache.Cache // the driver's, once started: writes wait for it
	clusterIP string      // ClusterIP class
	nodePort  string      // NodePort class, not pinned
	pinned    string      // NodePort class, pinned
	lb        string      // LoadBalancer class
	claimUIDs map[string]types.UID
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	e := testenv.Require(t, env)
	ctx := context.Background()
	f := &fixture{t: t, c: e.Client, ns: uniq("ns"), node: uniq("node"), pod: "pod-0",
		clusterIP: uniq("cluster-internal"), nodePort: uniq("external-unstable"), pinned: uniq("external-stable"), lb: uniq("lb"),
		claimUIDs: map[string]types.UID{}}
	f.create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: f.node}}
	f.create(ctx, node)
	node.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "10.1.2.3"},
		{Type: corev1.NodeHostName, Address: f.node + ".nodes.example"},
	}
	if err := f.c.Status().Update(ctx, node); err != nil {
		t.Fatalf("node status: %v", err)
	}
	f.create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: f.pod},
		Spec:       corev1.PodSpec{NodeName: f.node, Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	})
	for name, spec := range map[string]v1alpha1.ListenerClassSpec{
		f.clusterIP: {ServiceType: v1alpha1.ServiceTypeClusterIP},
		f.nodePort:  {ServiceType: v1alpha1.ServiceTypeNodePort},
		f.pinned:    {ServiceType: v1alpha1.ServiceTypeNodePort, PinnedNodePorts: ptr.To(true)},
		f.lb:        {ServiceType: v1alpha1.ServiceTypeLoadBalancer},
	} {
		f.create(ctx, &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec})
	}
	return f
}

// startDriver starts a driver whose cache the fixture's later writes wait
// for, so that a test sees the driver act on what it just wrote.
func (f *fixture) startDriver(opts Options) *driver {
	d := startDriver(f.t, opts)
	f.cache = d.cache
	return d
}

func (f *fixture) create(ctx context.Context, obj client.Object) {
	f.t.Helper()
	if err := f.c.Create(ctx, obj); err != nil {
		f.t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
	f.t.Cleanup(func() { _ = f.c.Delete(context.Background(), obj) })
	f.await(obj)
}

// await waits until the driver's cache holds obj at its current
// resourceVersion, for ListenerClasses, the one type it watches
// cluster-wide: everything else is read live (or, on a node, through its
// own watches).
func (f *fixture) await(obj client.Object) {
	f.t.Helper()
	if _, ok := obj.(*v1alpha1.ListenerClass); !ok {
		return
	}
	if f.cache == nil {
		return
	}
	key, want := client.ObjectKeyFromObject(obj), obj.GetResourceVersion()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		got := obj.DeepCopyObject().(client.Object)
		if err := f.cache.Get(ctx, key, got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return got.GetResourceVersion() == want, nil
	})
	if err != nil {
		f.t.Fatalf("the driver's cache never saw %T %s at resourceVersion %s: %v", obj, key, want, err)
	}
}

// claim creates a listener claim with the given annotations.
func (f *fixture) claim(name string, annotations map[string]string) *corev1.PersistentVolumeClaim {
	f.t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, Annotations: annotations},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName: ptr.To(v1alpha1.StorageClassName),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}},
		},
	}
	f.create(context.Background(), pvc)
	f.claimUIDs[name] = pvc.UID
	return pvc
}

// listener creates a Listener of class with the given status, as the
// reconciler makes it for a claim of the same name (created unless the
// test made it): controlled by that claim.
func (f *fixture) listener(name, class string, st v1alpha1.ListenerStatus) *v1alpha1.Listener {
	f.t.Helper()
	if _, ok := f.claimUIDs[name]; !ok {
		f.claim(name, map[string]string{v1alpha1.AnnotationListenerClass: class})
	}
	l := &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: name, UID: f.claimUIDs[name], Controller: ptr.To(true),
		}}},
		Spec: v1alpha1.ListenerSpec{
			ClassName: ptr.To(class),
			Ports:     []v1alpha1.ListenerPort{{Name: "http", Port: 8080}},
		},
	}
	f.create(context.Background(), l)
	f.setStatus(l, st)
	return l
}

// setStatus plays the reconciler: it publishes a Listener's status.
func (f *fixture) setStatus(l *v1alpha1.Listener, st v1alpha1.ListenerStatus) {
	f.t.Helper()
	ctx := context.Background()
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(l), l); err != nil {
		f.t.Fatal(err)
	}
	l.Status = st
	if l.Status.Conditions == nil {
		// Current: the reconciler looked at this generation.
		l.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReady,
			ObservedGeneration: l.Generation, LastTransitionTime: metav1.Now()}}
	}
	if err := f.c.Status().Update(ctx, l); err != nil {
		f.t.Fatalf("update status of listener %s: %v", l.Name, err)
	}
	f.await(l)
}

// volumeContext is what kubelet passes to NodePublishVolume for a volume
// that CreateVolume made for claim, mounted by the fixture's pod.
func (f *fixture) volumeContext(claim, listener string) map[string]string {
	return map[string]string{
		volumes.ContextClaimNamespace: f.ns,
		volumes.ContextClaimName:      claim,
		volumes.ContextListenerName:   listener,
		volumes.ContextClaimUID:       cmp.Or(string(f.claimUIDs[claim]), "uid-of-a-claim-the-test-did-not-make"),
		volumes.ContextPerClaim:       strconv.FormatBool(claim == listener),
		v1alpha1.ContextPodName:       f.pod,
		v1alpha1.ContextPodNamespace:  f.ns,
	}
}

func mountCap() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
	}
}

func blockCap() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}

// wantCode fails unless err is a gRPC status with code want whose message
// contains every one of msgs.
func wantCode(t testing.TB, err error, want codes.Code, msgs ...string) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok {
		t.Fatalf("error %v is not a gRPC status", err)
	}
	if st.Code() != want {
		t.Fatalf("code = %s (%q), want %s", st.Code(), st.Message(), want)
	}
	for _, m := range msgs {
		if !strings.Contains(st.Message(), m) {
			t.Errorf("message %q does not mention %q", st.Message(), m)
		}
	}
}
