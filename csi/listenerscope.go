package csi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// ListenerScopeOptions configure a ListenerScope.
type ListenerScopeOptions struct {
	// Base reads everything but Listeners (the node's cache of its Pods,
	// its Node and the ListenerClasses, in a FallbackReader).
	Base client.Reader
	// Client lists and watches single Listeners, and reads them live when
	// no watch can be had.
	Client client.WithWatch
	// MaxWatches bounds the Listeners watched at once (default 1024; a
	// node runs at most a few hundred pods). Beyond it a publish reads its
	// Listener live: one GET per publish, nothing kept.
	MaxWatches int
	// Idle is how long a watch that no published volume uses is kept after
	// its last read (default 5m: longer than kubelet's retry backoff, so a
	// publish waiting for its Listener to become ready keeps its watch).
	Idle time.Duration
	// SyncTimeout bounds the wait for a new watch's first list (default
	// 15s); past it the read falls back to a live GET, which reports why.
	SyncTimeout time.Duration
	Log         logr.Logger
}

// ListenerScope is the node plugin's reader: Listeners are read through one
// watch per Listener that a volume on this node publishes (a field-selected
// list and watch of that one object), started by the first publish and
// stopped when the last volume using it is unpublished; every other type
// is read from Base. A node plugin so holds, and is sent, only the
// Listeners its own pods use, however many the cluster has, and a
// republish of an unchanged volume reads nothing from the API server.
//
// It is told which volume uses which Listener (it is a VolumeBinder): a
// successful NodePublishVolume binds its target path to the Listener the
// volume names, NodeUnpublishVolume unbinds it. After a restart the map is
// empty until kubelet republishes every mounted volume (it does, at start
// and then periodically), which starts the watches again. Start runs a
// sweep for what is left over: targets whose directory is gone (an
// unpublish this process never saw) and watches no volume uses.
type ListenerScope struct {
	opts    ListenerScopeOptions
	started chan struct{}
	root    context.Context // set by Start, before started is closed

	mu      sync.Mutex
	watches map[client.ObjectKey]*listenerWatch
	targets map[string]client.ObjectKey

	events   atomic.Uint64
	overflow atomic.Uint64
}

// listenerWatch is the store and reflector of one Listener.
type listenerWatch struct {
	store    toolscache.Store
	synced   func() bool
	stop     context.CancelFunc
	refs     int
	lastRead time.Time
}

var (
	_ client.Reader = (*ListenerScope)(nil)
	_ VolumeBinder  = (*ListenerScope)(nil)
)

// NewListenerScope checks opts; call Start before the first read.
func NewListenerScope(opts ListenerScopeOptions) (*ListenerScope, error) {
	if opts.Base == nil || opts.Client == nil {
		return nil, errors.New("a base reader and a client that can watch Listeners are required")
	}
	if opts.MaxWatches <= 0 {
		opts.MaxWatches = 1024
	}
	if opts.Idle <= 0 {
		opts.Idle = 5 * time.Minute
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = 15 * time.Second
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	return &ListenerScope{
		opts:    opts,
		started: make(chan struct{}),
		watches: map[client.ObjectKey]*listenerWatch{},
		targets: map[string]client.ObjectKey{},
	}, nil
}

// Start lets reads start watches and sweeps leftovers until ctx ends, then
// stops every watch.
func (s *ListenerScope) Start(ctx context.Context) error {
	s.root = ctx
	close(s.started)
	t := time.NewTicker(max(s.opts.Idle/2, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			for key, w := range s.watches {
				w.stop()
				delete(s.watches, key)
			}
			s.mu.Unlock()
			return nil
		case <-t.C:
			s.Sweep()
		}
	}
}

// Watches is the number of Listeners watched now.
func (s *ListenerScope) Watches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watches)
}

// Events is the number of Listener watch events received so far (the
// first list of each watch counts one per object).
func (s *ListenerScope) Events() uint64 { return s.events.Load() }

// Overflows is the number of live reads made because MaxWatches Listeners
// were watched already.
func (s *ListenerScope) Overflows() uint64 { return s.overflow.Load() }

// Get reads a Listener from its watch (starting it on first use), anything
// else from Base.
func (s *ListenerScope) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	l, ok := obj.(*v1alpha1.Listener)
	if !ok {
		return s.opts.Base.Get(ctx, key, obj, opts...)
	}
	w, err := s.watch(ctx, key)
	if err != nil {
		return err
	}
	if w == nil {
		return s.opts.Client.Get(ctx, key, obj, opts...)
	}
	item, exists, err := w.store.GetByKey(toolscache.ObjectName{Namespace: key.Namespace, Name: key.Name}.String())
	if err == nil && exists {
		if cached, ok := item.(*v1alpha1.Listener); ok {
			cached.DeepCopyInto(l)
			return nil
		}
	}
	// Not there (yet): a Listener created a moment ago may not have
	// reached the watch; being told "not found" then would fail a publish
	// for nothing.
	return s.opts.Client.Get(ctx, key, obj, opts...)
}

// List reads from Base; Listeners are read one at a time.
func (s *ListenerScope) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*v1alpha1.ListenerList); ok {
		return errors.New("the node plugin reads Listeners one at a time: it does not list them")
	}
	return s.opts.Base.List(ctx, list, opts...)
}

// watch returns the synced watch of key, starting it if needed; nil (and
// no error) when the Listener is to be read live: too many watches, or
// the watch did not sync in time.
func (s *ListenerScope) watch(ctx context.Context, key client.ObjectKey) (*listenerWatch, error) {
	select {
	case <-s.started:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the Listener watches to start: %w", ctx.Err())
	}
	if s.root.Err() != nil {
		// Shutting down: a new watch would never sync.
		return nil, nil
	}
	s.mu.Lock()
	w := s.watches[key]
	if w == nil {
		if len(s.watches) >= s.opts.MaxWatches {
			s.mu.Unlock()
			if s.overflow.Add(1) == 1 {
				s.opts.Log.Info("watching the most Listeners allowed: reading further ones live on every publish", "maxWatches", s.opts.MaxWatches)
			}
			return nil, nil
		}
		w = s.startWatch(key)
		s.watches[key] = w
	}
	w.lastRead = time.Now()
	s.mu.Unlock()

	if w.synced() {
		return w, nil
	}
	syncCtx, cancel := context.WithTimeout(ctx, s.opts.SyncTimeout)
	defer cancel()
	err := wait.PollUntilContextCancel(syncCtx, 5*time.Millisecond, true, func(context.Context) (bool, error) { return w.synced(), nil })
	if err == nil {
		return w, nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("wait for the watch of listener %s: %w", key, ctx.Err())
	}
	// The list fails (RBAC, an API server in trouble): drop the watch
	// unless another volume uses it, and let a live read say what is wrong.
	s.mu.Lock()
	if s.watches[key] == w && w.refs == 0 {
		w.stop()
		delete(s.watches, key)
	}
	s.mu.Unlock()
	return nil, nil
}

// startWatch starts the reflector of the one Listener key; s.mu is held.
func (s *ListenerScope) startWatch(key client.ObjectKey) *listenerWatch {
	selector := fields.OneTermEqualSelector("metadata.name", key.Name)
	c := s.opts.Client
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list := &v1alpha1.ListenerList{}
			err := c.List(ctx, list, &client.ListOptions{Namespace: key.Namespace, FieldSelector: selector, Raw: &o})
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, &v1alpha1.ListenerList{}, &client.ListOptions{Namespace: key.Namespace, FieldSelector: selector, Raw: &o})
		},
	}
	// A bare reflector into a store: no event queue and no handler
	// goroutine, as nothing but Get reads it.
	store := &countingStore{Store: toolscache.NewStore(toolscache.MetaNamespaceKeyFunc), events: &s.events}
	r := toolscache.NewReflectorWithOptions(lw, &v1alpha1.Listener{}, store, toolscache.ReflectorOptions{Name: "listener " + key.String()})
	ctx, stop := context.WithCancel(s.root)
	go r.RunWithContext(ctx)
	s.opts.Log.V(1).Info("watching listener", "listener", key)
	// The reflector records the resource version only once the first list
	// is in the store.
	synced := func() bool { return r.LastSyncResourceVersion() != "" }
	return &listenerWatch{store: store, synced: synced, stop: stop}
}

// countingStore counts what the reflector writes: one per object of a
// (re)list, one per watch event.
type countingStore struct {
	toolscache.Store
	events *atomic.Uint64
}

func (c *countingStore) Add(obj any) error    { c.events.Add(1); return c.Store.Add(obj) }
func (c *countingStore) Update(obj any) error { c.events.Add(1); return c.Store.Update(obj) }
func (c *countingStore) Delete(obj any) error { c.events.Add(1); return c.Store.Delete(obj) }
func (c *countingStore) Replace(list []any, rv string) error {
	c.events.Add(uint64(len(list)))
	return c.Store.Replace(list, rv)
}

// Bind notes that target publishes listener: its watch is kept until
// target is unbound (or swept, once gone).
func (s *ListenerScope) Bind(target string, listener client.ObjectKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.targets[target]; ok {
		if old == listener {
			return
		}
		s.releaseLocked(old)
	}
	w := s.watches[listener]
	if w == nil {
		// Read live (too many watches): nothing to hold.
		return
	}
	s.targets[target] = listener
	w.refs++
}

// Unbind forgets target, stopping its Listener's watch if it was the last
// volume using it.
func (s *ListenerScope) Unbind(target string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.targets[target]; ok {
		delete(s.targets, target)
		s.releaseLocked(old)
	}
}

// releaseLocked drops one reference to key's watch; s.mu is held.
func (s *ListenerScope) releaseLocked(key client.ObjectKey) {
	w := s.watches[key]
	if w == nil {
		return
	}
	if w.refs--; w.refs <= 0 {
		w.stop()
		delete(s.watches, key)
		s.opts.Log.V(1).Info("stopped watching listener", "listener", key)
	}
}

// Sweep forgets targets whose directory is gone (an unpublish this
// process did not see, such as one before a restart) and stops watches
// that no volume uses and nothing read for Idle. Start runs it every
// Idle/2 (at most once a second).
func (s *ListenerScope) Sweep() {
	s.mu.Lock()
	targets := make([]string, 0, len(s.targets))
	for t := range s.targets {
		targets = append(targets, t)
	}
	s.mu.Unlock()
	// Stat outside the lock: target paths are kubelet's, under its pods
	// directory, never a user's.
	for _, t := range targets {
		if _, err := os.Lstat(t); errors.Is(err, fs.ErrNotExist) {
			s.Unbind(t)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, w := range s.watches {
		if w.refs <= 0 && time.Since(w.lastRead) >= s.opts.Idle {
			w.stop()
			delete(s.watches, key)
		}
	}
}

// VolumeBinder is told which Listener each published volume uses, by the
// node service (NewServer hands it the reader if the reader is one): a
// successful NodePublishVolume binds its target path to the Listener its
// volume names, a successful NodeUnpublishVolume unbinds it.
type VolumeBinder interface {
	Bind(target string, listener client.ObjectKey)
	Unbind(target string)
}

// RegisterMetrics publishes the scope's figures: the Listeners watched now,
// the watch events received and the live reads past MaxWatches.
func (s *ListenerScope) RegisterMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "listener_operator_csi_listener_watches",
			Help: "Listeners the node plugin watches now: one per Listener a volume on this node publishes.",
		}, func() float64 { return float64(s.Watches()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "listener_operator_csi_listener_watch_events_total",
			Help: "Listener watch events the node plugin received.",
		}, func() float64 { return float64(s.Events()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "listener_operator_csi_listener_live_reads_total",
			Help: "Listeners read live because --max-listener-watches Listeners were watched already.",
		}, func() float64 { return float64(s.Overflows()) }),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register Listener watch metrics: %w", err)
		}
	}
	return nil
}
