package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/listener-operator/listener-operator/csi"
	"github.com/listener-operator/listener-operator/csi/nodecaps"
	"github.com/listener-operator/listener-operator/internal/version"
)

// csiOptions are the flags of `listener-operator csi`.
type csiOptions struct {
	mode           string
	endpoint       string
	nodeName       string
	metrics        metricsOptions
	probeAddr      string
	cacheSyncLimit time.Duration
	// maxListenerWatches bounds the node plugin's per-Listener watches.
	maxListenerWatches int
	// sealVolumes mounts each published volume as a capped tmpfs.
	sealVolumes bool
	// dropCapabilities keeps only what the node plugin needs.
	dropCapabilities bool
	zap              zap.Options
}

func (o *csiOptions) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.mode, "mode", "", "Which CSI services to serve: controller (next to csi-provisioner) or node (next to node-driver-registrar, one per node).")
	fs.StringVar(&o.endpoint, "csi-endpoint", "unix:///csi/csi.sock", "Unix socket to serve CSI on (created with mode 0600; a stale socket is replaced).")
	fs.StringVar(&o.nodeName, "node-name", os.Getenv("KUBERNETES_NODE_NAME"), "Name of this node (env KUBERNETES_NODE_NAME); required with --mode=node.")
	o.metrics.addFlags(fs)
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address of /healthz (the liveness probe: CSI Probe over the driver's socket), plain HTTP; \"0\" disables it.")
	fs.DurationVar(&o.cacheSyncLimit, "cache-sync-timeout", 2*time.Minute, "How long to wait for the first list of watched objects before giving up.")
	fs.IntVar(&o.maxListenerWatches, "max-listener-watches", 1024, "Node: the most Listeners watched at once (one watch per Listener a volume on this node publishes); beyond it each publish reads its Listener live.")
	fs.BoolVar(&o.sealVolumes, "seal-volumes", true, "Node: mount every published volume as its own tmpfs (1 MiB, 1000 entries, noexec,nosuid,nodev), so a pod cannot fill the node's disk through it; needs CAP_SYS_ADMIN and Bidirectional mount propagation. false writes plain directories on the node's disk.")
	fs.BoolVar(&o.dropCapabilities, "drop-capabilities", true, "Node: at start, drop every capability but CAP_SYS_ADMIN (with --seal-volumes; none without) and set no_new_privs. The DaemonSet must be privileged for Bidirectional mount propagation, which grants every capability: this takes them back.")
	o.zap.BindFlags(fs)
}

// complete checks the flags against each other.
func (o *csiOptions) complete() error {
	switch o.mode {
	case "controller":
	case "node":
		if o.nodeName == "" {
			return fmt.Errorf("--mode=node needs --node-name (or KUBERNETES_NODE_NAME, from the downward API spec.nodeName)")
		}
	case "":
		return fmt.Errorf("--mode is required: controller or node")
	default:
		return fmt.Errorf("--mode=%q: want controller or node", o.mode)
	}
	if o.endpoint == "" {
		return fmt.Errorf("--csi-endpoint is required")
	}
	if o.maxListenerWatches < 1 {
		return fmt.Errorf("--max-listener-watches=%d: want at least 1 (a node runs up to a few hundred pods; the default is 1024)", o.maxListenerWatches)
	}
	return nil
}

func csiCommand() command {
	return optionsCommand("run the CSI driver: --mode=controller (provisioning) or --mode=node (publishing addresses into pods)", &csiOptions{})
}

func (o *csiOptions) run(ctx context.Context) error {
	scheme, cfg, err := startup(&o.zap)
	if err != nil {
		return err
	}
	log := ctrl.Log.WithName("csi")
	node := o.mode == "node"
	tracing, stopTracing, err := startTracing(ctx, cfg, "csi-"+o.mode, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	if err := o.dropCaps(); err != nil {
		return err
	}
	var cacheOpts csi.CacheOptions
	if node {
		cacheOpts.NodeName = o.nodeName
	}
	cache, err := csi.NewCache(ctx, cfg, scheme, cacheOpts)
	if err != nil {
		return err
	}
	live, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	// The run's own metrics: a second run in one process (the tests)
	// registers none twice.
	reg := prometheus.NewRegistry()
	m, err := csi.NewMetrics(reg)
	if err != nil {
		return err
	}
	var reader client.Reader = csi.FallbackReader{Cache: cache, Live: live}
	var scope *csi.ListenerScope
	if node {
		if scope, err = o.listenerScope(cfg, scheme, reader, reg, log); err != nil {
			return err
		}
		reader = scope
	}
	srv, err := csi.NewServer(csi.Options{
		Controller:  !node,
		Node:        node,
		NodeName:    o.nodeName,
		SealVolumes: node && o.sealVolumes,
		Version:     version.Version,
		Reader:      reader,
		Live:        live,
		Log:         log,
		Metrics:     m,
		Tracing:     tracing.UnaryServerInterceptor(),
	})
	if err != nil {
		return err
	}
	health := newCSIHealth(o.endpoint)
	metricsSrv, err := newMetricsServer(o.metrics, cfg, reg)
	if err != nil {
		return err
	}
	healthSrv := newHealthServer(o.probeAddr, health)

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return cache.Start(ctx) })
	if scope != nil {
		g.Go(func() error { return scope.Start(ctx) })
	}
	if metricsSrv != nil {
		g.Go(func() error { return metricsSrv.Start(ctx) })
	}
	if healthSrv != nil {
		g.Go(func() error { return healthSrv.serve(ctx) })
	}
	g.Go(func() error { return o.serveWhenSynced(ctx, g, cache, srv, health, log) })
	return g.Wait()
}

// dropCaps drops the node plugin's capabilities but the one sealing
// volumes needs (--drop-capabilities).
func (o *csiOptions) dropCaps() error {
	if o.mode != "node" || !o.dropCapabilities {
		return nil
	}
	var keep []uintptr
	if o.sealVolumes {
		keep = append(keep, nodecaps.SysAdmin)
	}
	if err := nodecaps.KeepOnly(keep...); err != nil {
		return fmt.Errorf("drop capabilities (--drop-capabilities=false keeps them): %w", err)
	}
	return nil
}

// listenerScope is the node plugin's reader of Listeners: it watches only
// the Listeners its volumes publish.
func (o *csiOptions) listenerScope(cfg *rest.Config, scheme *runtime.Scheme, base client.Reader, reg prometheus.Registerer, log logr.Logger) (*csi.ListenerScope, error) {
	watcher, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("create watch client: %w", err)
	}
	scope, err := csi.NewListenerScope(csi.ListenerScopeOptions{
		Base: base, Client: watcher, MaxWatches: o.maxListenerWatches, Log: log.WithName("listeners"),
	})
	if err != nil {
		return nil, err
	}
	return scope, scope.RegisterMetrics(reg)
}

// serveWhenSynced opens the CSI socket once the caches have synced, so that
// the registrar and kubelet see a driver that can answer, and serves it.
func (o *csiOptions) serveWhenSynced(ctx context.Context, g *errgroup.Group, cache csiCache, srv *csi.Server, health *csiHealth, log logr.Logger) error {
	syncCtx, cancel := context.WithTimeout(ctx, o.cacheSyncLimit)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx) {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("caches did not sync within %s: can the service account list ListenerClasses, (controller) Listeners and PersistentVolumes, (node) its Pods and Node?", o.cacheSyncLimit)
	}
	if err := csi.CheckNoOtherPlugin(ctx, o.endpoint); err != nil {
		return err // e.g. the Stackable node plugin still runs here (docs/migration.md)
	}
	lis, err := csi.Listen(o.endpoint)
	if err != nil {
		return err
	}
	log.Info("serving CSI", "mode", o.mode, "endpoint", o.endpoint, "node", o.nodeName, "version", version.String())
	health.Serving()
	// Only with a synced cache: an empty pod list would make every sealed
	// volume look stale.
	g.Go(func() error { return srv.RunStaleMountSweeper(ctx) })
	return srv.Serve(ctx, lis)
}

// csiCache is what serveWhenSynced needs of the driver's cache.
type csiCache interface {
	WaitForCacheSync(ctx context.Context) bool
}

// newMetricsServer serves controller-runtime's registry (client-go's
// metrics) and run (the driver's, nil: none) as the flags say (HTTPS with
// authentication and authorisation by default); nil when the address is
// "0".
func newMetricsServer(m metricsOptions, cfg *rest.Config, run prometheus.Gatherer) (metricsserver.Server, error) {
	if m.addr == "0" || m.addr == "" {
		return nil, nil
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("metrics server client: %w", err)
	}
	s, err := metricsserver.NewServer(m.serverOptions(run), cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("create metrics server on %s: %w", m.addr, err)
	}
	return s, nil
}

// healthServer serves /healthz on a port of its own, in plain HTTP: the
// kubelet's liveness probe carries no credentials, so it cannot sit behind
// the metrics server's authentication.
type healthServer struct {
	addr string
	srv  *http.Server
}

// newHealthServer serves h at /healthz on addr; nil when addr is "0".
func newHealthServer(addr string, h http.Handler) *healthServer {
	if addr == "0" || addr == "" {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/healthz", h)
	return &healthServer{addr: addr, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
}

// serve listens until ctx ends.
func (s *healthServer) serve(ctx context.Context) error {
	lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("health probe server on %s: %w", s.addr, err)
	}
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(shutdownCtx)
	}()
	if err := s.srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("health probe server on %s: %w", s.addr, err)
	}
	return nil
}
