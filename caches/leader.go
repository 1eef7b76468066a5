package caches

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
)

// LeaderOnly returns a view of mgr for the reconcilers: the same manager
// (controllers and runnables added to it run in it; scheme, events, logger
// and API reader are its own), but with a cache and a client of their own.
// Objects of the shared types are read from, watched in and indexed by
// mgr's cache, which every replica starts for the webhooks: the leader holds
// them once. Every other type lives in a cache built with opts that starts
// only once this replica is elected leader, so a replica that is not the
// leader serves webhooks and opens no watch on the objects only the
// reconcilers read (Pods, Services, Nodes; the pod controller's metadata
// watch of PodListeners starts with the controllers, on the leader too).
func LeaderOnly(mgr manager.Manager, opts cache.Options, shared ...client.Object) (manager.Manager, error) {
	opts.Scheme = mgr.GetScheme()
	opts.Mapper = mgr.GetRESTMapper()
	opts.HTTPClient = mgr.GetHTTPClient()
	own, err := New(mgr.GetConfig(), opts)
	if err != nil {
		return nil, fmt.Errorf("create the reconcilers' cache: %w", err)
	}
	r := &router{scheme: mgr.GetScheme(), own: own, shared: ReadOnly(mgr.GetCache()), kinds: map[schema.GroupVersionKind]bool{}}
	for _, obj := range shared {
		gvk, err := apiutil.GVKForObject(obj, r.scheme)
		if err != nil {
			return nil, fmt.Errorf("shared cache type %T: %w", obj, err)
		}
		r.kinds[gvk] = true
	}
	cl, err := client.New(mgr.GetConfig(), client.Options{
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		HTTPClient: mgr.GetHTTPClient(),
		Cache:      &client.CacheOptions{Reader: r},
	})
	if err != nil {
		return nil, fmt.Errorf("create the reconcilers' client: %w", err)
	}
	if err := mgr.Add(leaderCache{own}); err != nil {
		return nil, fmt.Errorf("add the reconcilers' cache: %w", err)
	}
	return &leaderView{mgr: mgr, cache: r, client: cl}, nil
}

// leaderCache starts a cache when the replica is elected. It deliberately
// hides the cache's methods from the manager, which would otherwise start
// anything that looks like a cache before the election.
type leaderCache struct{ c cache.Cache }

func (l leaderCache) Start(ctx context.Context) error { return l.c.Start(ctx) }

// NeedLeaderElection reports that the cache starts on the leader only.
func (leaderCache) NeedLeaderElection() bool { return true }

// leaderView is a manager whose cache and client are the reconcilers'.
// Every method is spelled out (none is inherited from mgr by embedding):
// a method a new controller-runtime adds to manager.Manager does not
// compile until it is decided here whether it reads mgr's cache or the
// view's.
type leaderView struct {
	mgr    manager.Manager
	cache  cache.Cache
	client client.Client
}

var _ manager.Manager = (*leaderView)(nil)

// The view's own: reads, watches and indexes go through the router.

func (v *leaderView) GetCache() cache.Cache                { return v.cache }
func (v *leaderView) GetClient() client.Client             { return v.client }
func (v *leaderView) GetFieldIndexer() client.FieldIndexer { return v.cache }

// mgr's: what runs, and what is not read from a cache.

func (v *leaderView) Add(r manager.Runnable) error     { return v.mgr.Add(r) }
func (v *leaderView) Elected() <-chan struct{}         { return v.mgr.Elected() }
func (v *leaderView) Start(ctx context.Context) error  { return v.mgr.Start(ctx) }
func (v *leaderView) GetHTTPClient() *http.Client      { return v.mgr.GetHTTPClient() }
func (v *leaderView) GetConfig() *rest.Config          { return v.mgr.GetConfig() }
func (v *leaderView) GetScheme() *runtime.Scheme       { return v.mgr.GetScheme() }
func (v *leaderView) GetRESTMapper() meta.RESTMapper   { return v.mgr.GetRESTMapper() }
func (v *leaderView) GetAPIReader() client.Reader      { return v.mgr.GetAPIReader() }
func (v *leaderView) GetWebhookServer() webhook.Server { return v.mgr.GetWebhookServer() }
func (v *leaderView) GetLogger() logr.Logger           { return v.mgr.GetLogger() }

func (v *leaderView) GetControllerOptions() config.Controller { return v.mgr.GetControllerOptions() }

func (v *leaderView) GetConverterRegistry() conversion.Registry {
	return v.mgr.GetConverterRegistry()
}

func (v *leaderView) GetEventRecorderFor(name string) record.EventRecorder {
	return v.mgr.GetEventRecorderFor(name) //nolint:staticcheck // the manager's, whichever API a caller uses
}

func (v *leaderView) GetEventRecorder(name string) events.EventRecorder {
	return v.mgr.GetEventRecorder(name)
}

func (v *leaderView) AddMetricsServerExtraHandler(path string, h http.Handler) error {
	return v.mgr.AddMetricsServerExtraHandler(path, h)
}

func (v *leaderView) AddHealthzCheck(name string, check healthz.Checker) error {
	return v.mgr.AddHealthzCheck(name, check)
}

func (v *leaderView) AddReadyzCheck(name string, check healthz.Checker) error {
	return v.mgr.AddReadyzCheck(name, check)
}

// router is a cache that sends each request to the shared cache or to its
// own by the object's kind.
type router struct {
	scheme      *runtime.Scheme
	own, shared cache.Cache
	kinds       map[schema.GroupVersionKind]bool // served by shared
}

var _ cache.Cache = (*router)(nil)

func (r *router) byKind(gvk schema.GroupVersionKind) cache.Cache {
	if r.kinds[gvk] {
		return r.shared
	}
	return r.own
}

func (r *router) byObject(obj runtime.Object) (cache.Cache, error) {
	gvk, err := apiutil.GVKForObject(obj, r.scheme)
	if err != nil {
		return nil, err
	}
	if _, isList := obj.(client.ObjectList); isList {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	return r.byKind(gvk), nil
}

// Get implements client.Reader.
func (r *router) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c, err := r.byObject(obj)
	if err != nil {
		return err
	}
	return c.Get(ctx, key, obj, opts...)
}

// List implements client.Reader.
func (r *router) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c, err := r.byObject(list)
	if err != nil {
		return err
	}
	return c.List(ctx, list, opts...)
}

// GetInformer implements cache.Informers.
func (r *router) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	c, err := r.byObject(obj)
	if err != nil {
		return nil, err
	}
	return c.GetInformer(ctx, obj, opts...)
}

// GetInformerForKind implements cache.Informers.
func (r *router) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	return r.byKind(gvk).GetInformerForKind(ctx, gvk, opts...)
}

// RemoveInformer implements cache.Informers.
func (r *router) RemoveInformer(ctx context.Context, obj client.Object) error {
	c, err := r.byObject(obj)
	if err != nil {
		return err
	}
	return c.RemoveInformer(ctx, obj)
}

// IndexField implements client.FieldIndexer: the index goes to the cache
// that holds the type.
func (r *router) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	c, err := r.byObject(obj)
	if err != nil {
		return err
	}
	return c.IndexField(ctx, obj, field, extract)
}

// Start starts the reconcilers' own cache; the shared one is the manager's
// to start.
func (r *router) Start(ctx context.Context) error { return r.own.Start(ctx) }

// WaitForCacheSync waits for both caches.
func (r *router) WaitForCacheSync(ctx context.Context) bool {
	return r.shared.WaitForCacheSync(ctx) && r.own.WaitForCacheSync(ctx)
}

// IndexVolumeNode indexes PersistentVolumes by the nodes they are pinned to
// (addresses.PinnedNodes). The listener reconciler and the pinned-node-loss
// controller both look volumes up by node; one index serves them
// (registered with every other index of the reconcilers by
// reconcile/internal/lookup).
const IndexVolumeNode = "pv.pinnedNode"

// ReconcilerView is the view of mgr the reconcilers run on, as the
// controller ships it: LeaderOnly with the Reconcilers options, reading the
// Shared types from mgr's cache (which must use the Webhooks options). The
// reconcilers' registry (reconcile.SetupWithManager) adds their indexes.
func ReconcilerView(mgr manager.Manager) (manager.Manager, error) {
	return LeaderOnly(mgr, Reconcilers(), Shared()...)
}
