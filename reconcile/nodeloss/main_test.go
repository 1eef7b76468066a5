package nodeloss

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile"
)

// env is the control plane the package's tests share: kube-apiserver, and
// kube-controller-manager's StatefulSet controller, garbage collector and
// PVC protection, with one manager running the operator's reconcilers and
// this package's controller as the operator's restricted identity.
var env *testenv.Env

// testHandoverTimeout is short so that the orphan test does not wait long.
const testHandoverTimeout = 3 * time.Second

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	e, err := testenv.Start(testenv.Options{ControllerManager: []string{"garbagecollector", "pvc-protection", "statefulset"}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "start control plane: %v\n", err)
		return 1
	}
	env = e
	defer func() {
		if err := e.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop control plane: %v\n", err)
		}
	}()
	if os.Getenv("NODELOSS_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	cfg, err := e.UserWithClusterRole(context.Background(), "listener-operator-under-test", filepath.Join(testenv.RepoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "operator identity: %v\n", err)
		return 1
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, Cache: caches.Webhooks()})
	if err != nil {
		fmt.Fprintf(os.Stderr, "create manager: %v\n", err)
		return 1
	}
	// As the controller runs them: on the reconcilers' own cache.
	leader, err := caches.ReconcilerView(mgr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "reconcilers' cache: %v\n", err)
		return 1
	}
	ro := reconcile.DefaultOptions()
	ro.Preset = reconcile.PresetNone
	// Pods here are created without the pod webhook: the relabel scan
	// labels them.
	ro.PodRelabelInterval = time.Second
	if err := reconcile.SetupWithManager(leader, ro); err != nil {
		fmt.Fprintf(os.Stderr, "set up reconcilers: %v\n", err)
		return 1
	}
	opts := DefaultOptions()
	opts.HandoverTimeout = testHandoverTimeout
	if err := SetupWithManager(leader, opts); err != nil {
		fmt.Fprintf(os.Stderr, "set up node-loss controller: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if !leader.GetCache().WaitForCacheSync(ctx) {
		cancel()
		fmt.Fprintf(os.Stderr, "manager cache did not sync: %v\n", <-done)
		return 1
	}
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
