package testenv

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// OperatorUser is the user the operator's manager runs as in tests, bound to
// the ClusterRole of config/rbac/role.yaml.
const OperatorUser = "listener-operator-under-test"

// ManagerOptions describe the manager a test package runs its controllers
// in, against the package's shared control plane.
type ManagerOptions struct {
	// LogVariable names an environment variable: when it is set the
	// controllers log to stderr, otherwise their logs are discarded.
	LogVariable string
	// Prepare, if set, runs once the control plane is up and before the
	// manager is created (to install other CRDs, for example).
	Prepare func(e *Env) error
	// Cache is the manager's cache.
	Cache cache.Options
	// Controller configures the manager's controllers (a test that runs a
	// controller in a second manager of the same process, as a new leader,
	// sets SkipNameValidation).
	Controller config.Controller
	// Setup registers the controllers with mgr and returns the manager
	// whose cache must have synced before the tests run (mgr itself, or a
	// view of it with a cache of its own).
	Setup func(mgr manager.Manager) (manager.Manager, error)
}

// MainWithManager is Main with a manager: it starts an environment with
// opts, stores it in *env, starts a manager running as the operator's
// restricted identity (OperatorUser) with mo's controllers, waits for its
// cache, runs the package's tests and stops the manager and the control
// plane before exiting. A manager that fails fails the run. Under -short it
// starts nothing, as Main.
func MainWithManager(m *testing.M, env **Env, opts Options, mo ManagerOptions) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(runWithManager(m, env, opts, mo))
}

func runWithManager(m *testing.M, env **Env, opts Options, mo ManagerOptions) int {
	e, err := Start(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "start control plane: %v\n", err)
		return 1
	}
	*env = e
	defer func() {
		if err := e.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop control plane: %v\n", err)
		}
	}()
	if mo.Prepare != nil {
		if err := mo.Prepare(e); err != nil {
			fmt.Fprintf(os.Stderr, "prepare the control plane: %v\n", err)
			return 1
		}
	}
	if mo.LogVariable != "" && os.Getenv(mo.LogVariable) != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	cfg, err := e.UserWithClusterRole(context.Background(), OperatorUser, filepath.Join(RepoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "operator identity: %v\n", err)
		return 1
	}
	stop, err := e.StartManager(cfg, mo)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return 1
	}
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// StartManager creates a manager that reaches the control plane with cfg,
// lets mo.Setup register its controllers, starts it and waits until the
// cache Setup returned has synced. stop stops the manager and returns its
// error. mo.LogVariable and mo.Prepare are not used here.
func (e *Env) StartManager(cfg *rest.Config, mo ManagerOptions) (stop func() error, err error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     e.Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      mo.Cache,
		Controller: mo.Controller,
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	synced := manager.Manager(mgr)
	if mo.Setup != nil {
		if synced, err = mo.Setup(mgr); err != nil {
			return nil, fmt.Errorf("set up controllers: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if !synced.GetCache().WaitForCacheSync(ctx) {
		cancel()
		return nil, fmt.Errorf("manager cache did not sync: %v", <-done)
	}
	return func() error {
		cancel()
		return <-done
	}, nil
}
