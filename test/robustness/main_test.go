package robustness

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile"
	"github.com/listener-operator/listener-operator/webhooks"
)

var (
	env *testenv.Env
	// cluster is what the histories act through.
	cluster *Cluster
)

// TestMain starts the control plane (an audit log of the operator's
// writes; kube-controller-manager's clusterrole-aggregation, so that the
// built-in edit role has the Listener rights of config/rbac, and its
// garbage collector and namespace controllers), the operator's webhooks
// and reconcilers in this process, as its restricted identity, and kwok
// (its log in bin/robustness-kwok.log) for the histories' nodes and pods.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	code, err := run(m)
	if err != nil {
		fmt.Fprintf(os.Stderr, "robustness: %v\n", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "robustness-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	audit, auditFlags, err := testenv.NewAuditLog(dir, testenv.AuditPolicy(testenv.OperatorUser))
	if err != nil {
		return 0, err
	}
	configs, err := webhookConfigs(dir)
	if err != nil {
		return 0, err
	}
	// statefulset, ephemeral-volume (a pod's ephemeral claim) and
	// persistentvolume-binder (claims bound to the volumes the operator
	// provisions) for the pods of pods.go; with Traefik, endpointslice
	// (Traefik resolves a route's backend Service by its EndpointSlices).
	controllers := []string{"clusterrole-aggregation", "garbagecollector", "namespace", "statefulset", "ephemeral-volume", "persistentvolume-binder"}
	if *withGateway {
		controllers = append(controllers, "endpointslice")
	}
	e, err := testenv.Start(testenv.Options{
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{configs}, LocalServingHost: "127.0.0.1"},
		ControllerManager:     controllers,
		APIServerFlags:        auditFlags,
	})
	if err != nil {
		return 0, fmt.Errorf("start control plane: %w", err)
	}
	defer func() { _ = e.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if out, err := e.Kubectl(ctx, nil, "apply", "-f", filepath.Join(testenv.RepoRoot(), "config", "rbac", "aggregate_roles.yaml")); err != nil {
		return 0, fmt.Errorf("aggregated roles: %v: %s", err, out)
	}
	var gateway *GatewayEnv
	if *withGateway {
		var stopTraefik func()
		if gateway, stopTraefik, err = startTraefik(ctx, e); err != nil {
			return 0, err
		}
		defer stopTraefik()
	}
	op, err := newOperator(ctx, e)
	if err != nil {
		return 0, err
	}
	if err := op.start(ctx); err != nil {
		return 0, err
	}
	defer op.stop()
	if err := waitForEditRole(ctx, e.Client); err != nil {
		return 0, err
	}
	kwok, err := kwokPath(*kwokBin)
	if err != nil {
		return 0, err
	}
	kwokProc, err := startKwok(e, kwok, filepath.Join(testenv.RepoRoot(), "bin", "robustness-kwok.log"))
	if err != nil {
		return 0, err
	}
	defer kwokProc.Stop()
	kubelet, stopKubelet, err := startKubelet(ctx, e)
	if err != nil {
		return 0, err
	}
	defer stopKubelet()
	env, cluster = e, newCluster(e, audit)
	cluster.Kubelet = kubelet
	cluster.Gateway = gateway
	cluster.Faults = &Faults{Restart: op.restart}
	if err := cluster.Faults.KeepWebhooks(ctx, e.Client); err != nil {
		return 0, err
	}
	cluster.Timing = &Timing{}
	code := m.Run()
	fmt.Printf("ROBUSTNESS: time by phase: %s\n", cluster.Timing)
	return code, nil
}

// operator is the operator's manager running in this process, which a
// history may restart (RestartOperator): stopped, and a new one started
// as the same identity.
type operator struct {
	e   *testenv.Env
	cfg *rest.Config
	// parent is the context every manager runs under; cancel and stopped
	// are the running one's.
	parent  context.Context
	cancel  context.CancelFunc
	stopped <-chan struct{}
}

// newOperator makes the operator's restricted identity.
func newOperator(ctx context.Context, e *testenv.Env) (*operator, error) {
	cfg, err := e.UserWithClusterRole(ctx, testenv.OperatorUser, filepath.Join(testenv.RepoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		return nil, fmt.Errorf("operator identity: %w", err)
	}
	return &operator{e: e, cfg: cfg}, nil
}

// start starts a manager under parent and waits until it serves.
func (o *operator) start(parent context.Context) error {
	ctx, cancel := context.WithCancel(parent)
	stopped, err := startOperator(ctx, o.e, o.cfg)
	if err != nil {
		cancel()
		return err
	}
	o.parent, o.cancel, o.stopped = parent, cancel, stopped
	return nil
}

// stop stops the running manager and waits until it has.
func (o *operator) stop() {
	if o.cancel == nil {
		return
	}
	o.cancel()
	<-o.stopped
	o.cancel = nil
}

// restart stops the manager and starts a new one (under the context of
// the first, not ctx: the operator outlives the history that restarts it).
func (o *operator) restart(ctx context.Context) error {
	o.stop()
	if err := ctx.Err(); err != nil {
		return err
	}
	return o.start(o.parent)
}

// newCluster makes the clients of the administrator and the tenants.
func newCluster(e *testenv.Env, audit *testenv.AuditLog) *Cluster {
	c := &Cluster{Admin: e.Client, Audit: audit, Window: 500 * time.Millisecond, Bound: 30 * time.Second, Quiet: 500 * time.Millisecond}
	users := NewWorld(0).Users
	for t := range c.Tenants {
		c.Warnings[t] = &Warnings{}
		cfg := rest.CopyConfig(e.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: users[t], Groups: []string{"system:authenticated"}}
		cfg.WarningHandler = c.Warnings[t]
		tc, err := client.New(cfg, client.Options{Scheme: e.Scheme})
		if err != nil {
			panic(err) // only a bad scheme or config fails here
		}
		c.Tenants[t] = tc
	}
	return c
}

// webhookConfigs renders config/webhook (as the operator ships it) into
// dir, for envtest to point at this process.
func webhookConfigs(dir string) (string, error) {
	out, err := exec.Command(filepath.Join(testenv.BinDir(), "kubectl"), "kustomize", filepath.Join(testenv.RepoRoot(), "config", "webhook")).Output()
	if err != nil {
		return "", fmt.Errorf("kubectl kustomize config/webhook: %w", err)
	}
	path := filepath.Join(dir, "webhooks.yaml")
	return path, os.WriteFile(path, out, 0o600)
}

// startOperator runs the manager as cmd/ wires it (webhooks on every
// replica, the registry's reconcilers on the leader's cache), as the
// operator's restricted identity, and waits until it serves.
func startOperator(ctx context.Context, e *testenv.Env, cfg *rest.Config) (<-chan struct{}, error) {
	if os.Getenv("ROBUSTNESS_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	wo := &e.Environment.WebhookInstallOptions
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: caches.Webhooks(), NewCache: caches.New,
		// A restart registers the same controllers again in this process.
		Controller:    ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
		WebhookServer: webhook.NewServer(webhook.Options{Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir}),
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	namespaces, err := caches.NewNamespaceDefaults(mgr.GetConfig(), nil)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(namespaces); err != nil {
		return nil, err
	}
	if err := webhooks.SetupWithManager(mgr, namespaces); err != nil {
		return nil, err
	}
	leader, err := caches.ReconcilerView(mgr)
	if err != nil {
		return nil, err
	}
	if err := reconcile.SetupWithManager(leader, operatorOptions(), leader.GetEventRecorder(v1alpha1.FieldManager)); err != nil {
		return nil, err
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		}
	}()
	if err := waitToServe(net.JoinHostPort(wo.LocalServingHost, strconv.Itoa(wo.LocalServingPort))); err != nil {
		return nil, err
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) || !leader.GetCache().WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the operator's caches did not sync")
	}
	return stopped, nil
}

// operatorOptions are the shipped defaults, but: no presets (each history
// makes its own classes), the Gateway API only with Traefik
// (-robustness.gateway), and a
// short wait for a new Service's allocations (a LoadBalancer never gets
// one here), so that the operator settles within seconds.
func operatorOptions() reconcile.Options {
	o := reconcile.DefaultOptions()
	o.ClusterDomain = "example.test"
	o.Preset = reconcile.PresetNone
	o.GatewayAPI = *withGateway
	o.CreatePollInterval = 100 * time.Millisecond
	o.CreateWaitDuration = 500 * time.Millisecond
	return o
}

// waitToServe waits until the webhook server accepts TLS connections.
func waitToServe(addr string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only checks that the server is up
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("webhook server on %s did not start: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitForEditRole waits until clusterrole-aggregation gave edit the
// right to create Listeners.
func waitForEditRole(ctx context.Context, c client.Client) error {
	deadline := time.Now().Add(time.Minute)
	for {
		var role rbacv1.ClusterRole
		if err := c.Get(ctx, client.ObjectKey{Name: "edit"}, &role); err == nil {
			for _, r := range role.Rules {
				if slices.Contains(r.Resources, "listeners") && slices.Contains(r.Verbs, "create") {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the edit ClusterRole has no Listener rights after a minute: is clusterrole-aggregation running?")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
