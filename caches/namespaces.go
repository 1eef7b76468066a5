package caches

import (
	"context"
	"fmt"
	"hash/maphash"
	"net/http"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// NamespaceDefaults watches the cluster's namespaces and keeps of them only
// what the claim webhook asks: which namespaces name a default ListenerClass
// (v1alpha1.AnnotationDefaultClass), and whether a namespace has been seen at
// all. An informer would hold an object per namespace (some 500 bytes even
// trimmed to its identity, 3.7 KB with kubectl's last-applied copy), and a
// cluster has thousands of namespaces that are not a listener's: this holds
// the class of the few that name one and an 8-byte hash of every name. The
// watch is metadata-only, so namespaces' specs and statuses never reach the
// operator.
//
// It is a manager.Runnable that runs on every replica (the webhooks do).
type NamespaceDefaults struct {
	lw   cache.ListerWatcher
	seed maphash.Seed

	mu      sync.RWMutex
	classes map[string]string   // namespace → the default class it names
	seen    map[uint64]struct{} // hash (seed) of every namespace's name
	synced  chan struct{}       // closed once the first list is held
	once    sync.Once
}

// NewNamespaceDefaults watches namespaces through cfg (metadata only), on
// httpClient (nil: one of its own).
func NewNamespaceDefaults(cfg *rest.Config, httpClient *http.Client) (*NamespaceDefaults, error) {
	lw, err := metadataListWatch(cfg, httpClient, corev1.SchemeGroupVersion.WithResource("namespaces"))
	if err != nil {
		return nil, err
	}
	return newNamespaceDefaults(lw), nil
}

func newNamespaceDefaults(lw cache.ListerWatcher) *NamespaceDefaults {
	return &NamespaceDefaults{lw: lw, seed: maphash.MakeSeed(), classes: map[string]string{},
		seen: map[uint64]struct{}{}, synced: make(chan struct{})}
}

// Start watches namespaces until ctx ends (list, then watch, relisting when
// the watch expires, as an informer does).
func (d *NamespaceDefaults) Start(ctx context.Context) error {
	r := cache.NewReflectorWithOptions(d.lw, &metav1.PartialObjectMetadata{}, namespaceStore{d}, cache.ReflectorOptions{Name: "namespace default classes"})
	r.RunWithContext(ctx)
	return nil
}

// NeedLeaderElection reports that every replica watches namespaces: every
// replica admits claims.
func (*NamespaceDefaults) NeedLeaderElection() bool { return false }

// WaitForSync waits until the first list of namespaces is held, or ctx ends
// (false).
func (d *NamespaceDefaults) WaitForSync(ctx context.Context) bool {
	select {
	case <-d.synced:
		return true
	case <-ctx.Done():
		return false
	}
}

// DefaultClass is the default ListenerClass namespace names ("" if none),
// and whether namespace has been seen: a namespace created a moment ago
// may not have been, and only a read of it can tell what it names. It
// waits for the first list, as a cache read does.
func (d *NamespaceDefaults) DefaultClass(ctx context.Context, namespace string) (class string, seen bool, err error) {
	if !d.WaitForSync(ctx) {
		return "", false, fmt.Errorf("namespaces not listed yet: %w", ctx.Err())
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	_, seen = d.seen[maphash.String(d.seed, namespace)]
	return d.classes[namespace], seen, nil
}

// set records a namespace (or forgets it: gone).
func (d *NamespaceDefaults) set(obj any, gone bool) error {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, gone = t.Obj, true
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return fmt.Errorf("namespace watch sent %T", obj)
	}
	name, h := m.GetName(), maphash.String(d.seed, m.GetName())
	class := m.GetAnnotations()[v1alpha1.AnnotationDefaultClass]
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case gone:
		delete(d.seen, h)
		delete(d.classes, name)
	case class == "":
		d.seen[h] = struct{}{}
		delete(d.classes, name)
	default:
		d.seen[h] = struct{}{}
		d.classes[name] = class
	}
	return nil
}

// namespaceStore is what the reflector writes to: it keeps nothing of an
// object but what NamespaceDefaults holds.
type namespaceStore struct{ d *NamespaceDefaults }

func (s namespaceStore) Add(obj any) error    { return s.d.set(obj, false) }
func (s namespaceStore) Update(obj any) error { return s.d.set(obj, false) }
func (s namespaceStore) Delete(obj any) error { return s.d.set(obj, true) }
func (s namespaceStore) Resync() error        { return nil }

// Replace holds list instead of what was held (a list or relist).
func (s namespaceStore) Replace(list []any, _ string) error {
	// Built apart and swapped in whole: questions meanwhile get the old answers.
	fresh := &NamespaceDefaults{seed: s.d.seed, classes: map[string]string{}, seen: map[uint64]struct{}{}}
	for _, obj := range list {
		if err := fresh.set(obj, false); err != nil {
			return err
		}
	}
	s.d.mu.Lock()
	s.d.classes, s.d.seen = fresh.classes, fresh.seen
	s.d.mu.Unlock()
	s.d.once.Do(func() { close(s.d.synced) })
	return nil
}

var _ cache.ReflectorStore = namespaceStore{}
