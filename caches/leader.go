package caches

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// LeaderOnly returns a view of mgr for the reconcilers: the same manager
// (controllers and runnables added to it run in it; scheme, events, logger
// and API reader are its own), but with its own cache, built with opts, and
// a client that reads from it. That cache starts only once this replica is
// elected leader, so a replica that is not the leader serves webhooks from
// mgr's cache and opens no watch on the objects only the reconcilers read
// (Pods, Services, EndpointSlices, Nodes, PodListeners).
//
// Indexes registered through the view's field indexer go to the
// reconcilers' cache. On the leader, types both read (Listeners, claims)
// are held twice; they are few next to the pods of a cluster.
func LeaderOnly(mgr manager.Manager, opts cache.Options) (manager.Manager, error) {
	opts.Scheme = mgr.GetScheme()
	opts.Mapper = mgr.GetRESTMapper()
	opts.HTTPClient = mgr.GetHTTPClient()
	c, err := cache.New(mgr.GetConfig(), opts)
	if err != nil {
		return nil, fmt.Errorf("create the reconcilers' cache: %w", err)
	}
	cl, err := client.New(mgr.GetConfig(), client.Options{
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		HTTPClient: mgr.GetHTTPClient(),
		Cache:      &client.CacheOptions{Reader: c},
	})
	if err != nil {
		return nil, fmt.Errorf("create the reconcilers' client: %w", err)
	}
	if err := mgr.Add(leaderCache{c}); err != nil {
		return nil, fmt.Errorf("add the reconcilers' cache: %w", err)
	}
	return &leaderView{Manager: mgr, cache: c, client: cl}, nil
}

// leaderCache starts a cache when the replica is elected. It deliberately
// hides the cache's methods from the manager, which would otherwise start
// anything that looks like a cache before the election.
type leaderCache struct{ c cache.Cache }

func (l leaderCache) Start(ctx context.Context) error { return l.c.Start(ctx) }

// NeedLeaderElection reports that the cache starts on the leader only.
func (leaderCache) NeedLeaderElection() bool { return true }

// leaderView is a manager whose cache and client are the reconcilers'.
type leaderView struct {
	manager.Manager
	cache  cache.Cache
	client client.Client
}

func (v *leaderView) GetCache() cache.Cache                { return v.cache }
func (v *leaderView) GetClient() client.Client             { return v.client }
func (v *leaderView) GetFieldIndexer() client.FieldIndexer { return v.cache }
