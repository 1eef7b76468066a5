package caches

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The one read path. The caches hold maps and strings that many objects
// share (intern.go), and objects trimmed to what is read (kept.go): a write
// through anything that reaches a cached object would change it for every
// reader, and for every object sharing its maps. So nothing outside this
// package reaches one: a cache made by New (or wrapped by ReadOnly) hands
// out copies on every path, whatever the caller asks for:
//
//   - Get and List copy (client.UnsafeDisableDeepCopy is ignored);
//   - event handlers (controllers' predicates and map functions among them)
//     get copies of the objects of each event;
//   - index functions (IndexField, an informer's AddIndexers) get copies.
//
// The copies cost garbage, never memory that stays: index values are
// strings, which a deep copy shares with the cached object.

// New is a cache.NewCacheFunc (manager.Options.NewCache): controller-
// runtime's cache made with opts, read only through copies (ReadOnly).
func New(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	opts.DefaultUnsafeDisableDeepCopy = nil
	for obj, by := range opts.ByObject {
		by.UnsafeDisableDeepCopy = nil
		opts.ByObject[obj] = by
	}
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return ReadOnly(c), nil
}

// ReadOnly is c read only through copies; a cache it made already is
// returned as it is.
func ReadOnly(c cache.Cache) cache.Cache {
	if r, ok := c.(*readOnly); ok {
		return r
	}
	return &readOnly{c: c}
}

// readOnly is a cache whose every path hands out copies.
type readOnly struct{ c cache.Cache }

var _ cache.Cache = (*readOnly)(nil)

// Get implements client.Reader: always a copy.
func (r *readOnly) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if len(opts) > 0 {
		opts = withoutSharing(opts)
	}
	return r.c.Get(ctx, key, obj, opts...)
}

// List implements client.Reader: always copies.
func (r *readOnly) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if len(opts) > 0 {
		opts = withoutSharing(opts)
	}
	return r.c.List(ctx, list, opts...)
}

// withoutSharing is opts without client.UnsafeDisableDeepCopy.
func withoutSharing[O any](opts []O) []O {
	out := make([]O, 0, len(opts))
	for _, o := range opts {
		if _, unsafe := any(o).(client.UnsafeDisableDeepCopyOption); !unsafe {
			out = append(out, o)
		}
	}
	return out
}

// GetInformer implements cache.Informers: its handlers and indexers get
// copies.
func (r *readOnly) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := r.c.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	return copyingInformer{i}, nil
}

// GetInformerForKind implements cache.Informers, as GetInformer.
func (r *readOnly) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := r.c.GetInformerForKind(ctx, gvk, opts...)
	if err != nil {
		return nil, err
	}
	return copyingInformer{i}, nil
}

// RemoveInformer implements cache.Informers.
func (r *readOnly) RemoveInformer(ctx context.Context, obj client.Object) error {
	return r.c.RemoveInformer(ctx, obj)
}

// IndexField implements client.FieldIndexer: extract gets copies.
func (r *readOnly) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	return r.c.IndexField(ctx, obj, field, func(o client.Object) []string {
		return extract(copyObject(o).(client.Object))
	})
}

// Start implements cache.Informers.
func (r *readOnly) Start(ctx context.Context) error { return r.c.Start(ctx) }

// WaitForCacheSync implements cache.Informers.
func (r *readOnly) WaitForCacheSync(ctx context.Context) bool { return r.c.WaitForCacheSync(ctx) }

// copyingInformer is an informer whose handlers and indexers get copies.
type copyingInformer struct{ i cache.Informer }

var _ cache.Informer = copyingInformer{}

func (c copyingInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return c.i.AddEventHandler(copyingHandler{h})
}

func (c copyingInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return c.i.AddEventHandlerWithResyncPeriod(copyingHandler{h}, resync)
}

func (c copyingInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return c.i.AddEventHandlerWithOptions(copyingHandler{h}, opts)
}

func (c copyingInformer) RemoveEventHandler(r toolscache.ResourceEventHandlerRegistration) error {
	return c.i.RemoveEventHandler(r)
}

func (c copyingInformer) AddIndexers(indexers toolscache.Indexers) error {
	out := make(toolscache.Indexers, len(indexers))
	for name, f := range indexers {
		out[name] = func(obj any) ([]string, error) { return f(copyObject(obj)) }
	}
	return c.i.AddIndexers(out)
}

func (c copyingInformer) HasSynced() bool { return c.i.HasSynced() }

func (c copyingInformer) HasSyncedChecker() toolscache.DoneChecker { return c.i.HasSyncedChecker() }

func (c copyingInformer) IsStopped() bool { return c.i.IsStopped() }

// copyingHandler hands a handler copies of the objects of each event.
type copyingHandler struct {
	h toolscache.ResourceEventHandler
}

func (c copyingHandler) OnAdd(obj any, initial bool) { c.h.OnAdd(copyObject(obj), initial) }

func (c copyingHandler) OnUpdate(old, obj any) { c.h.OnUpdate(copyObject(old), copyObject(obj)) }

func (c copyingHandler) OnDelete(obj any) { c.h.OnDelete(copyObject(obj)) }

// copyObject is a deep copy of a cached object (of the object a deletion
// whose final state is unknown carries); anything else passes as it is.
func copyObject(obj any) any {
	switch o := obj.(type) {
	case runtime.Object:
		return o.DeepCopyObject()
	case toolscache.DeletedFinalStateUnknown:
		o.Obj = copyObject(o.Obj)
		return o
	default:
		return obj
	}
}

// HandsOutCopies reports whether c hands out copies on every path: a
// cache made by New or ReadOnly, or the reconcilers' view of both
// (LeaderOnly). The test suites check it of the caches they run on.
func HandsOutCopies(c cache.Cache) bool {
	switch c := c.(type) {
	case *readOnly:
		return true
	case *router:
		return HandsOutCopies(c.own) && HandsOutCopies(c.shared)
	default:
		return false
	}
}
