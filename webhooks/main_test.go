package webhooks

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

var (
	env *testenv.Env
	// testLookup reads through the running manager's cache, for calling
	// handlers directly.
	testLookup *lookup
	// webhookConfigs is the kustomize output that the API server got.
	webhookConfigs string
	// webhookServer is the manager's webhook server, on which benchmarks
	// register their floor handlers next to ours.
	webhookServer webhook.Server
)

// The classes every test can use; cluster-internal is the cluster default.
var fixtureClasses = []v1alpha1.ListenerClass{
	{ObjectMeta: metav1.ObjectMeta{Name: "cluster-internal", Annotations: map[string]string{v1alpha1.AnnotationDefaultClass: "true"}},
		Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}},
	{ObjectMeta: metav1.ObjectMeta{Name: "external-stable"},
		Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, PinnedNodePorts: ptr(true)}},
	{ObjectMeta: metav1.ObjectMeta{Name: "external-unstable"},
		Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort}},
}

// TestMain starts a control plane whose API server calls this package's
// handlers over TLS, through the configurations `kubectl kustomize
// config/webhook` renders, and a kube-controller-manager running the
// StatefulSet controller. Fuzzing starts none (see fuzzOnly).
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() || fuzzOnly() {
		os.Exit(m.Run())
	}
	code, err := run(m)
	if err != nil {
		fmt.Fprintf(os.Stderr, "webhooks tests: %v\n", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// fuzzOnly says whether this process only fuzzes, so needs no control
// plane: a fuzz worker (`go test -fuzz` starts one process per -parallel,
// each running TestMain; a control plane each would stall the fuzzer), or
// the fuzzing coordinator when -run selects no test. The fuzz targets read
// an in-memory fixture instead (fuzzLookup).
func fuzzOnly() bool {
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		return true
	}
	fz, run := flag.Lookup("test.fuzz"), flag.Lookup("test.run")
	return fz != nil && fz.Value.String() != "" && run != nil && run.Value.String() == "^$"
}

func run(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "webhooks-test-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	out, err := exec.Command(filepath.Join(testenv.BinDir(), "kubectl"), "kustomize", filepath.Join(testenv.RepoRoot(), "config", "webhook")).Output()
	if err != nil {
		return 0, fmt.Errorf("kubectl kustomize config/webhook: %w", err)
	}
	webhookConfigs = string(out)
	configs := filepath.Join(dir, "webhooks.yaml")
	if err := os.WriteFile(configs, out, 0o600); err != nil {
		return 0, err
	}
	e, err := testenv.Start(testenv.Options{
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{configs}, LocalServingHost: "127.0.0.1"},
		// Deletion and binding (TestNoWebhookServer) need the namespace,
		// garbage collector, claim protection and PV binder controllers.
		ControllerManager: []string{"statefulset", "deployment", "replicaset", "garbagecollector", "namespace", "pvc-protection", "persistentvolume-binder"},
	})
	if err != nil {
		return 0, fmt.Errorf("start control plane: %w", err)
	}
	defer func() { _ = e.Stop() }()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped, err := startManager(ctx, e)
	if err != nil {
		return 0, err
	}
	for i := range fixtureClasses {
		if err := e.Client.Create(ctx, fixtureClasses[i].DeepCopy()); err != nil {
			return 0, fmt.Errorf("create fixture ListenerClass: %w", err)
		}
	}
	env = e
	code := m.Run()
	cancel()
	<-stopped
	// No handler can write to a map that cached objects share: the
	// cache they read hands out copies only.
	if !caches.HandsOutCopies(testLookup.cache.(cache.Cache)) {
		fmt.Fprintf(os.Stderr, "webhooks tests: the handlers read cache %T, which hands out the objects it holds: make it with caches.New\n", testLookup.cache)
		code = 1
	}
	return code, nil
}

// startManager runs a manager with the webhooks on the address and
// certificates envtest generated, and waits until it serves.
func startManager(ctx context.Context, e *testenv.Env) (<-chan struct{}, error) {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(zapLevel())))
	wo := &e.Environment.WebhookInstallOptions
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:  e.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		// The cache policy the controller ships (trimmed claims and
		// volumes), read through copies only.
		Cache:    caches.Webhooks(),
		NewCache: caches.New,
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir,
		}),
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	// What the controller runs for the claim webhook's namespace defaults.
	namespaces, err := caches.NewNamespaceDefaults(e.Config, nil)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(namespaces); err != nil {
		return nil, err
	}
	l, err := setup(mgr, namespaces)
	if err != nil {
		return nil, err
	}
	mgr.GetWebhookServer().Register(pathTestSidecarInjector, &webhook.Admission{Handler: sidecarInjector{}})
	// The handlers' lookup with its indexes, without the memories and
	// bounds a test would share with the running webhooks.
	tl := *l
	tl.reads, tl.ordinary, tl.namespaces = nil, nil, nil
	testLookup = &tl
	webhookServer = mgr.GetWebhookServer()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		}
	}()
	addr := net.JoinHostPort(wo.LocalServingHost, strconv.Itoa(wo.LocalServingPort))
	deadline := time.Now().Add(time.Minute)
	for {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only checks that the server is up
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("webhook server on %s did not start: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("cache did not sync")
	}
	return stopped, nil
}

// zapLevel keeps the manager quiet unless -v is given.
func zapLevel() zapcore.Level {
	if testing.Verbose() {
		return zapcore.InfoLevel
	}
	return zapcore.ErrorLevel
}

// namespace creates a fresh namespace for one test.
func namespace(t testing.TB, annotations map[string]string) string {
	t.Helper()
	e := testenv.Require(t, env)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "wh-", Annotations: annotations}}
	if err := e.Client.Create(t.Context(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

// eventually retries check until it returns nil or a minute passes.
func eventually(t testing.TB, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
