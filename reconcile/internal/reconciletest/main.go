// Package reconciletest is the harness of the reconcile packages' tests:
// one control plane per test binary with one manager running every
// controller against it (Main), the count of their reconciles, and the
// helpers that make and wait for objects. It is not a test file so that
// every controller package's tests share it rather than copy it; nothing
// outside tests imports it.
package reconciletest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/options"
)

// Env is the control plane every test of the package shares, with one
// manager running the controllers against it (tests use their own
// namespaces).
var Env *testenv.Env

// OperatorConfig is the restricted identity the manager runs as.
var OperatorConfig *rest.Config

// LeaderClient reads from the reconcilers' cache (as the controllers do).
var LeaderClient client.Client

// Reconciles counts the manager's reconciles, by controller and object,
// and keeps what the last one returned.
var Reconciles ReconcileCounts

// ReconcileCounts counts reconciles (Options wraps every controller's
// reconciler in it).
type ReconcileCounts struct {
	mu sync.Mutex
	n  map[string]*keyReconciles
	// controllers are the names of the controllers wrapped, in order.
	controllers []string
}

// keyReconciles is what one controller did with one object.
type keyReconciles struct {
	started, finished int
	last              crreconcile.Result
	lastErr           error
}

func (c *ReconcileCounts) wrap(controller string, r crreconcile.Reconciler) crreconcile.Reconciler {
	c.mu.Lock()
	c.controllers = append(c.controllers, controller)
	c.mu.Unlock()
	return crreconcile.Func(func(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
		if ownLeaders(req) {
			return crreconcile.Result{}, nil // StartLeader's
		}
		k := c.key(controller, req.NamespacedName)
		c.mu.Lock()
		k.started++
		c.mu.Unlock()
		res, err := r.Reconcile(ctx, req)
		c.mu.Lock()
		k.finished++
		k.last, k.lastErr = res, err
		c.mu.Unlock()
		return res, err
	})
}

func (c *ReconcileCounts) key(controller string, key types.NamespacedName) *keyReconciles {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]*keyReconciles{}
	}
	name := controller + "/" + key.String()
	if c.n[name] == nil {
		c.n[name] = &keyReconciles{}
	}
	return c.n[name]
}

// Controllers are the names of the controllers set up with Options, in the
// order they were set up.
func (c *ReconcileCounts) Controllers() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.controllers)
}

// Count is how many times controller reconciled key so far.
func (c *ReconcileCounts) Count(controller string, key types.NamespacedName) int {
	k := c.key(controller, key)
	c.mu.Lock()
	defer c.mu.Unlock()
	return k.started
}

// Idle returns nil when controller has no reconcile of key running and its
// last one scheduled nothing (no requeue, no error to retry), so it will
// not reconcile key again without an event; else what it still does.
func (c *ReconcileCounts) Idle(controller string, key types.NamespacedName) error {
	k := c.key(controller, key)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case k.finished < k.started:
		return fmt.Errorf("a reconcile of %s is running", key)
	case k.lastErr != nil:
		return fmt.Errorf("the last reconcile of %s failed and is retried: %v", key, k.lastErr)
	case !k.last.IsZero():
		return fmt.Errorf("the last reconcile of %s asked to be requeued: %+v", key, k.last)
	}
	return nil
}

// Quiet returns nil when controller has reconciled key more than after
// times and has no reconcile of it running (what the last one scheduled
// may still come), and the count; else what it still does.
func (c *ReconcileCounts) Quiet(controller string, key types.NamespacedName, after int) (int, error) {
	k := c.key(controller, key)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case k.started <= after:
		return k.started, fmt.Errorf("no reconcile of %s after the %dth", key, after)
	case k.finished < k.started:
		return k.started, fmt.Errorf("a reconcile of %s is running", key)
	}
	return k.started, nil
}

// Options are the controllers' options in tests: a cluster domain that
// is not the default, to see it is used; every reconcile counted.
func Options() options.Options {
	o := options.Default()
	o.Wrap = Reconciles.wrap
	o.ClusterDomain = "example.test"
	o.CreatePollInterval = 100 * time.Millisecond
	o.CreateWaitDuration = 5 * time.Second
	// The tests create pods without the pod webhook: the relabel scan
	// labels them, as it does pods admitted while the webhook is down.
	o.PodRelabelInterval = time.Second
	// Node loss and the provisioner have suites of their own.
	o.NodeLoss.Enabled, o.Provision.Enabled = false, false
	return o
}

// SetupFunc registers controllers with the manager, given their options
// and the event recorder: reconcile.SetupWithManager or a closure over
// reconcile.SetupOnly (a controller package's tests pass it from a
// TestMain of package <name>_test, which may import the registry).
type SetupFunc func(mgr manager.Manager, opts options.Options, recorder events.EventRecorder) error

// Main starts the control plane (with kube-controller-manager's
// garbage collector and PVC protection, so deleting a claim cascades as in a
// cluster) and a manager whose controllers setup registers (with Options),
// runs the tests and stops both. Call it from TestMain.
func Main(m *testing.M, setup SetupFunc) {
	mainSetup = setup
	audit, err := auditFlags()
	if err != nil {
		fmt.Fprintf(os.Stderr, "reconciletest: audit log: %v\n", err)
		os.Exit(1)
	}
	testenv.MainWithManager(m, &Env, testenv.Options{
		ControllerManager: []string{"garbagecollector", "pvc-protection"},
		// Room for the benchmark's thousands of Services; both families,
		// for dual-stack classes (TestDualStackNodePort).
		// The audit log counts the operator's writes (audit.go).
		APIServerFlags: append([]string{"--service-cluster-ip-range=10.0.0.0/16,fd00:10::/112"}, audit...),
		// As on OpenShift: the owner references the controllers write
		// (blockOwnerDeletion) need the finalizers RBAC of the owners.
		OwnerReferencesPermissionEnforcement: true,
	}, testenv.ManagerOptions{
		LogVariable: "RECONCILE_TEST_LOG",
		// cert-manager's CRDs (from the module its API types come from),
		// for the certificate controller, which finds them at its first
		// reconcile.
		Prepare: installCertManagerCRDs,
		// What the controller ships: the reconcilers read from a cache of
		// their own, of trimmed pods with the listener-volume label.
		Cache: caches.Webhooks(),
		Setup: func(mgr manager.Manager) (manager.Manager, error) {
			OperatorConfig = mgr.GetConfig()
			leader, err := caches.ReconcilerView(mgr)
			if err != nil {
				return nil, fmt.Errorf("reconcilers' cache: %w", err)
			}
			LeaderClient = leader.GetClient()
			leaderCache = leader.GetCache()
			return leader, setup(leader, Options(), leader.GetEventRecorder(v1alpha1.FieldManager))
		},
	})
}

// mainSetup is the setup Main was given (StartLeader runs it again).
var mainSetup SetupFunc

// leaderCache is the cache the reconcilers read.
var leaderCache cache.Cache

// SharedMapsUnchanged fails t when a reconciler could write to a map that
// cached objects share: when the cache they read does not hand out copies
// on every path (reads, event handlers, index functions;
// caches.HandsOutCopies). Call it from a parallel test, which runs after
// all the others (while the manager still runs).
func SharedMapsUnchanged(t *testing.T) {
	t.Helper()
	if !caches.HandsOutCopies(leaderCache) {
		t.Fatalf("the reconcilers read cache %T, which hands out the objects it holds: read through caches.LeaderOnly", leaderCache)
	}
}

// installCertManagerCRDs installs cert-manager's Certificate and issuer
// CRDs and registers its types with the environment's scheme.
func installCertManagerCRDs(e *testenv.Env) error {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/cert-manager/cert-manager").Output()
	if err != nil {
		return fmt.Errorf("locate the cert-manager module: %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "deploy", "crds")
	var paths []string
	for _, f := range []string{"cert-manager.io_certificates.yaml", "cert-manager.io_issuers.yaml", "cert-manager.io_clusterissuers.yaml"} {
		paths = append(paths, filepath.Join(dir, f))
	}
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}); err != nil {
		return err
	}
	return cmv1.AddToScheme(e.Scheme)
}
