package reconcile

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// env is the control plane every test of the package shares, with one
// manager running the controllers against it (tests use their own
// namespaces).
var env *testenv.Env

// operatorConfig is the restricted identity the manager runs as.
var operatorConfig *rest.Config

// leaderClient reads from the reconcilers' cache (as the controllers do).
var leaderClient client.Client

// reconciles counts the manager's reconciles, by controller and object,
// and keeps what the last one returned.
var reconciles reconcileCounts

type reconcileCounts struct {
	mu sync.Mutex
	n  map[string]*keyReconciles
}

// keyReconciles is what one controller did with one object.
type keyReconciles struct {
	started, finished int
	last              crreconcile.Result
	lastErr           error
}

func (c *reconcileCounts) wrap(controller string, r crreconcile.Reconciler) crreconcile.Reconciler {
	return crreconcile.Func(func(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
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

func (c *reconcileCounts) key(controller string, key types.NamespacedName) *keyReconciles {
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

// count is how many times controller reconciled key so far.
func (c *reconcileCounts) count(controller string, key types.NamespacedName) int {
	k := c.key(controller, key)
	c.mu.Lock()
	defer c.mu.Unlock()
	return k.started
}

// idle returns nil when controller has no reconcile of key running and its
// last one scheduled nothing (no requeue, no error to retry), so it will
// not reconcile key again without an event; else what it still does.
func (c *reconcileCounts) idle(controller string, key types.NamespacedName) error {
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

// testOptions are the controllers' options in tests: a cluster domain that
// is not the default, to see it is used; every reconcile counted.
func testOptions() Options {
	o := DefaultOptions()
	o.Wrap = reconciles.wrap
	o.ClusterDomain = "example.test"
	o.CreatePollInterval = 100 * time.Millisecond
	o.CreateWaitDuration = 5 * time.Second
	// The tests create pods without the pod webhook: the relabel scan
	// labels them, as it does pods admitted while the webhook is down.
	o.PodRelabelInterval = time.Second
	return o
}

// TestMain starts the control plane (with kube-controller-manager's
// garbage collector and PVC protection, so deleting a claim cascades as in a
// cluster) and the manager, runs the tests and stops both.
func TestMain(m *testing.M) {
	sharedMapsChanged = caches.AuditSharedMaps()
	testenv.MainWithManager(m, &env, testenv.Options{
		ControllerManager: []string{"garbagecollector", "pvc-protection"},
		// Room for the benchmark's thousands of Services.
		APIServerFlags: []string{"--service-cluster-ip-range=10.0.0.0/16"},
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
			operatorConfig = mgr.GetConfig()
			leader, err := caches.ReconcilerView(mgr)
			if err != nil {
				return nil, fmt.Errorf("reconcilers' cache: %w", err)
			}
			leaderClient = leader.GetClient()
			return leader, SetupWithManager(leader, testOptions())
		},
	})
}

// sharedMapsChanged checks that nothing wrote to a map that cached objects
// share (caches.AuditSharedMaps, on from the start).
var sharedMapsChanged func() error

// TestSharedMapsUnchanged: no reconciler wrote to a map that cached
// objects share. The package's only parallel test, it runs after all the
// others (while the manager still runs).
func TestSharedMapsUnchanged(t *testing.T) {
	t.Parallel()
	if err := sharedMapsChanged(); err != nil {
		t.Fatal(err)
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

// TestOperatorIdentityIsRestricted makes sure the RBAC check above is not
// vacuous: the manager's identity may not do what its role does not grant.
func TestOperatorIdentityIsRestricted(t *testing.T) {
	e := testenv.Require(t, env)
	c, err := client.New(operatorConfig, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var secrets corev1.SecretList
	if err := c.List(t.Context(), &secrets); !apierrors.IsForbidden(err) {
		t.Errorf("listing secrets as the operator: err %v, want Forbidden", err)
	}
	if err := c.Delete(t.Context(), &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "cluster-internal"}}); !apierrors.IsForbidden(err) {
		t.Errorf("deleting a ListenerClass as the operator: err %v, want Forbidden", err)
	}
}
