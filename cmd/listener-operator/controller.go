package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	goruntime "runtime"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/reconcile"
	"github.com/listener-operator/listener-operator/webhooks"
)

// controllerOptions are the flags of `listener-operator controller`.
type controllerOptions struct {
	metrics          metricsOptions
	probeAddr        string
	pprofAddr        string
	pprofHeapSamples bool
	leaderElect      bool
	leaderElectionNS string
	leaderElectionID string
	webhookHost      string
	webhookPort      int
	webhookCertDir   string
	gracefulShutdown time.Duration
	shutdownDelay    time.Duration
	apiQPS           float64
	apiBurst         int
	zap              zap.Options
	namespace        string // the operator's own namespace
	certs            certOptions
	reconcile        reconcile.Options // every controller's (the registry's)
}

func (o *controllerOptions) addFlags(fs *flag.FlagSet) {
	o.metrics.addFlags(fs)
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "", "Address of Go's /debug/pprof endpoints, for memory and CPU profiles (default: off); turns heap sampling on when GODEBUG=memprofilerate=0 turned it off (see --pprof-heap-samples).")
	fs.BoolVar(&o.pprofHeapSamples, "pprof-heap-samples", true, "With --pprof-bind-address, sample the heap for /debug/pprof/heap (its table costs 1.5 MB); false serves the endpoints without it: CPU and goroutine profiles, and a forced collection through /debug/pprof/heap?gc=1, at the memory of the operator as shipped.")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "Elect a leader so that only one replica reconciles; every replica serves webhooks.")
	fs.StringVar(&o.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader election Lease (default: the operator's namespace).")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", "listener-operator.listeners.stackable.tech", "Name of the leader election Lease.")
	fs.StringVar(&o.webhookHost, "webhook-host", "", "Address the admission webhook server listens on (default: every interface).")
	fs.IntVar(&o.webhookPort, "webhook-port", 9443, "Port the admission webhook server listens on.")
	fs.StringVar(&o.webhookCertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory with tls.crt and tls.key for the webhook server.")
	// client-go's default (5/10, 20/30 through controller-runtime) caps the
	// reconcilers at a few Listeners a second when hundreds of claims come
	// at once; the API server's priority and fairness protects it.
	fs.Float64Var(&o.apiQPS, "kube-api-qps", 100, "Requests per second the controller may send to the API server (sustained).")
	fs.IntVar(&o.apiBurst, "kube-api-burst", 200, "Requests the controller may send to the API server in a burst.")
	fs.DurationVar(&o.gracefulShutdown, "graceful-shutdown-timeout", 15*time.Second, "How long to wait for runnables to stop, once the shutdown delay is over.")
	fs.DurationVar(&o.shutdownDelay, "shutdown-delay", 10*time.Second, "How long a replica told to stop keeps serving webhooks (failing /readyz, closing each connection after its answer) before it stops, so that every node has stopped sending it new connections; shutdown delay plus graceful shutdown timeout must fit in the pod's terminationGracePeriodSeconds.")
	fs.StringVar(&o.namespace, "namespace", os.Getenv("POD_NAMESPACE"), "The operator's own namespace (env POD_NAMESPACE).")
	o.certs.addFlags(fs)
	o.reconcile.BindFlags(fs)
	o.zap.BindFlags(fs)
}

// complete fills in defaults that depend on other flags.
func (o *controllerOptions) complete() error {
	if o.leaderElectionNS == "" {
		o.leaderElectionNS = o.namespace
	}
	if o.shutdownDelay < 0 || o.gracefulShutdown < 0 {
		return fmt.Errorf("--shutdown-delay=%v --graceful-shutdown-timeout=%v: want neither negative", o.shutdownDelay, o.gracefulShutdown)
	}
	if o.apiQPS <= 0 || o.apiBurst < 1 {
		return fmt.Errorf("--kube-api-qps=%v --kube-api-burst=%d: want both positive", o.apiQPS, o.apiBurst)
	}
	if o.leaderElect && o.leaderElectionNS == "" {
		return fmt.Errorf("leader election needs a namespace: set --namespace (or POD_NAMESPACE) or --leader-election-namespace")
	}
	return o.certs.complete(o.webhookCertDir, o.namespace)
}

// startup is what every long-running subcommand does first: set up
// logging, and find the scheme and the cluster it talks to.
func startup(zo *zap.Options) (*runtime.Scheme, *rest.Config, error) {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(zo)))
	scheme, err := newScheme()
	if err != nil {
		return nil, nil, fmt.Errorf("build scheme: %w", err)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	return scheme, cfg, nil
}

// newScheme has every type the manager reads or writes, through a cache, a
// client or an event's reference: the API groups the subcommands use, not
// client-go's every group and version, which cost each process a scheme
// three times the size (BenchmarkSchemeHeap). TestSchemeCoversImports checks
// that every API package the binary imports is registered.
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme,                  // pods, claims, volumes, Services, nodes, namespaces, Secrets
		appsv1.AddToScheme,                  // StatefulSets, read live (which pod a claim's Listener selects by name)
		discoveryv1.AddToScheme,             // EndpointSlices
		storagev1.AddToScheme,               // StorageClasses
		admissionregistrationv1.AddToScheme, // the webhook configurations' CA bundles (certs)
		policyv1.AddToScheme,                // evictions (address-change restarts)
		eventsv1.AddToScheme,                // events
		coordinationv1.AddToScheme,          // leader election Leases
		authenticationv1.AddToScheme,        // TokenReviews (metrics)
		authorizationv1.AddToScheme,         // SubjectAccessReviews (metrics)
		v1alpha1.AddToScheme,
		cmv1.AddToScheme,   // Certificates (cert-manager mode)
		gwv1.Install,       // Gateways, TLSRoutes and TCPRoutes (gateway classes)
		gwv1alpha2.Install, // TCPRoutes where only v1alpha2 is served
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// defaultMemProfileRate is the Go runtime's default heap sampling rate
// (runtime.MemProfileRate): one sample per 512 KiB allocated.
const defaultMemProfileRate = 512 * 1024

// heapSampleRate is the heap sampling rate (runtime.MemProfileRate) the
// controller runs with, given the one GODEBUG set (current), whether the
// pprof endpoints are served and whether they are to sample the heap. The
// manifests turn sampling off (GODEBUG=memprofilerate=0): its table costs
// every replica 1.5 MB. A heap profile needs it back on, a forced
// collection or a CPU profile does not; a rate GODEBUG set is kept.
func heapSampleRate(current int, pprof, samples bool) int {
	if pprof && samples && current == 0 {
		return defaultMemProfileRate
	}
	return current
}

func controllerCommand() command {
	return optionsCommand("run the manager: reconcilers (leader only) and admission webhooks (every replica)", &controllerOptions{})
}

func (o *controllerOptions) run(ctx context.Context) error {
	scheme, cfg, err := startup(&o.zap)
	if err != nil {
		return err
	}
	log := ctrl.Log.WithName("setup")
	// What the caches hold is allocated from here on.
	goruntime.MemProfileRate = heapSampleRate(goruntime.MemProfileRate, o.pprofAddr != "", o.pprofHeapSamples)
	cfg.QPS, cfg.Burst = float32(o.apiQPS), o.apiBurst
	tracing, stopTracing, err := startTracing(ctx, cfg, "controller", log)
	if err != nil {
		return err
	}
	defer stopTracing()
	o.reconcile.Wrap = tracing.Reconciler
	if err := resolveClusterDomain(ctx, &o.reconcile, cfg, log); err != nil {
		return err
	}
	dr := &drain{delay: o.shutdownDelay}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         caches.Webhooks(),
		NewCache:                      caches.New, // read through copies only
		Metrics:                       o.metrics.serverOptions(nil),
		HealthProbeBindAddress:        o.probeAddr,
		PprofBindAddress:              o.pprofAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionNamespace:       o.leaderElectionNS,
		LeaderElectionID:              o.leaderElectionID,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &o.gracefulShutdown,
		WebhookServer: tracing.WebhookServer(drainingServer{d: dr, Server: webhook.NewServer(webhook.Options{
			Host:    o.webhookHost,
			Port:    o.webhookPort,
			CertDir: o.webhookCertDir,
			TLSOpts: o.certs.tlsOptions(),
		})}),
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	events, err := boundedEvents(mgr)
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	// What the claim webhook reads of namespaces (every replica).
	namespaces, err := caches.NewNamespaceDefaults(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return err
	}
	if err := mgr.Add(namespaces); err != nil {
		return fmt.Errorf("add the namespace watch: %w", err)
	}
	if err := addReadyChecks(mgr, dr, namespaces); err != nil {
		return err
	}

	// Components register here: reconcilers, webhooks, certificates.
	if err := o.certs.setup(mgr, o.reconcile.ClusterDomain, events.Recorder("listener-operator")); err != nil {
		return err
	}
	if err := webhooks.SetupWithManager(mgr, namespaces); err != nil {
		return fmt.Errorf("set up webhooks: %w", err)
	}
	// The reconcilers read from a cache of their own that only the leader
	// starts.
	leader, err := caches.ReconcilerView(mgr)
	if err != nil {
		return err
	}
	// Every controller and index the leader runs: the registry's.
	if err := reconcile.SetupWithManager(leader, o.reconcile, events.Recorder(v1alpha1.FieldManager)); err != nil {
		return fmt.Errorf("set up reconcilers: %w", err)
	}

	log.Info("starting manager", "leaderElection", o.leaderElect, "webhookPort", o.webhookPort)
	if err := mgr.Start(dr.context(ctx, log)); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}
