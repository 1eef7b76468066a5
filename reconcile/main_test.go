package reconcile

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// env is the control plane every test of the package shares, with one
// manager running the controllers against it (tests use their own
// namespaces).
var env *testenv.Env

// testOptions are the controllers' options in tests: a cluster domain that
// is not the default, to see it is used.
func testOptions() Options {
	o := DefaultOptions()
	o.ClusterDomain = "example.test"
	o.CreatePollInterval = 100 * time.Millisecond
	o.CreateWaitDuration = 5 * time.Second
	return o
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(runWithManager(m))
}

// runWithManager starts the control plane (with kube-controller-manager's
// garbage collector and PVC protection, so deleting a claim cascades as in a
// cluster) and the manager, runs the tests and stops both.
func runWithManager(m *testing.M) int {
	e, err := testenv.Start(testenv.Options{
		ControllerManager: []string{"garbagecollector", "pvc-protection"},
		// Room for the benchmark's thousands of Services.
		APIServerFlags: []string{"--service-cluster-ip-range=10.0.0.0/16"},
	})
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
	if os.Getenv("RECONCILE_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	}
	cfg := rest.CopyConfig(e.Config)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  e.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "create manager: %v\n", err)
		return 1
	}
	if err := SetupWithManager(mgr, testOptions()); err != nil {
		fmt.Fprintf(os.Stderr, "set up controllers: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
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
