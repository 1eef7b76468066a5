package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
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
	metricsAddr    string
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
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus metrics endpoint; \"0\" disables it.")
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
	if node && o.dropCapabilities {
		var keep []uintptr
		if o.sealVolumes {
			keep = append(keep, nodecaps.SysAdmin)
		}
		if err := nodecaps.KeepOnly(keep...); err != nil {
			return fmt.Errorf("drop capabilities (--drop-capabilities=false keeps them): %w", err)
		}
	}
	cacheOpts := csi.CacheOptions{Controller: !node}
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
	m, err := csi.NewMetrics(metrics.Registry)
	if err != nil {
		return err
	}
	var reader client.Reader = csi.FallbackReader{Cache: cache, Live: live}
	var scope *csi.ListenerScope
	if node {
		// The node plugin watches only the Listeners its volumes publish.
		watcher, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
		if err != nil {
			return fmt.Errorf("create watch client: %w", err)
		}
		scope, err = csi.NewListenerScope(csi.ListenerScopeOptions{
			Base: reader, Client: watcher, MaxWatches: o.maxListenerWatches, Log: log.WithName("listeners"),
		})
		if err != nil {
			return err
		}
		if err := scope.RegisterMetrics(metrics.Registry); err != nil {
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
	})
	if err != nil {
		return err
	}
	health := newCSIHealth(o.endpoint)
	metricsSrv, err := newMetricsServer(o.metricsAddr, cfg, health)
	if err != nil {
		return err
	}

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return cache.Start(ctx) })
	if scope != nil {
		g.Go(func() error { return scope.Start(ctx) })
	}
	if metricsSrv != nil {
		g.Go(func() error { return metricsSrv.Start(ctx) })
	}
	g.Go(func() error {
		syncCtx, cancel := context.WithTimeout(ctx, o.cacheSyncLimit)
		defer cancel()
		if !cache.WaitForCacheSync(syncCtx) {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("caches did not sync within %s: can the service account list ListenerClasses, (controller) Listeners and PersistentVolumes, (node) its Pods and Node?", o.cacheSyncLimit)
		}
		// Only now open the socket: the registrar and kubelet see a driver
		// that can answer.
		if err := csi.CheckNoOtherPlugin(ctx, o.endpoint); err != nil {
			return err // e.g. the Stackable node plugin still runs here (docs/migration.md)
		}
		lis, err := csi.Listen(o.endpoint)
		if err != nil {
			return err
		}
		log.Info("serving CSI", "mode", o.mode, "endpoint", o.endpoint, "node", o.nodeName, "version", version.String())
		health.Serving()
		// Only with a synced cache: an empty pod list would make every
		// sealed volume look stale.
		g.Go(func() error { return srv.RunStaleMountSweeper(ctx) })
		return srv.Serve(ctx, lis)
	})
	return g.Wait()
}

// newMetricsServer serves controller-runtime's registry (the driver's
// metrics and client-go's) and /healthz (the liveness probe) over plain
// HTTP; nil when addr is "0".
func newMetricsServer(addr string, cfg *rest.Config, health http.Handler) (metricsserver.Server, error) {
	if addr == "0" || addr == "" {
		return nil, nil
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("metrics server client: %w", err)
	}
	s, err := metricsserver.NewServer(metricsserver.Options{BindAddress: addr, FilterProvider: uncompressedMetrics, ExtraHandlers: map[string]http.Handler{"/healthz": health}}, cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("create metrics server on %s: %w", addr, err)
	}
	return s, nil
}
