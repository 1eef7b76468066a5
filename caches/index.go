package caches

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Scope says how an index is queried, and so under which keys an object's
// values are filed.
type Scope int

const (
	// InNamespace indexes are queried with client.InNamespace: the
	// object's namespace is part of the key.
	InNamespace Scope = iota
	// AllNamespaces indexes are queried without a namespace, and are what
	// every index of a cluster-scoped kind is.
	AllNamespaces
)

// Index is one field index of a cached kind: objects of Object's kind are
// found by the values Values returns, with client.MatchingFields{Field: v}.
type Index struct {
	Object client.Object
	Field  string
	Scope  Scope
	Values client.IndexerFunc
}

// AddIndexes registers indexes on the informers of their kinds. Lookups go
// through controller-runtime's cache as for client.FieldIndexer.IndexField,
// but each value of an object is filed once, in the scope it is queried in:
// IndexField files every value of a namespaced object twice (under its
// namespace and under all namespaces), and a value of one object alone (the
// Service of a Listener, the pods of a claim) costs the index a set of its
// own, some 340 bytes a filing (BenchmarkIndexCost). A query in the other
// scope finds nothing, so every index says which one its callers use.
func AddIndexes(ctx context.Context, informers cache.Informers, indexes ...Index) error {
	for _, ix := range indexes {
		inf, err := informers.GetInformer(ctx, ix.Object)
		if err != nil {
			return fmt.Errorf("informer for %T: %w", ix.Object, err)
		}
		if err := inf.AddIndexers(toolscache.Indexers{fieldIndexName(ix.Field): ix.indexFunc()}); err != nil {
			return fmt.Errorf("index %T by %s: %w", ix.Object, ix.Field, err)
		}
	}
	return nil
}

func (ix Index) indexFunc() toolscache.IndexFunc {
	return func(raw any) ([]string, error) {
		obj, ok := raw.(client.Object)
		if !ok {
			return nil, nil
		}
		vals := ix.Values(obj)
		if len(vals) == 0 {
			return nil, nil
		}
		ns := ""
		if ix.Scope == InNamespace {
			ns = obj.GetNamespace()
		}
		keys := make([]string, len(vals))
		for i, v := range vals {
			keys[i] = indexKey(ns, v)
		}
		return keys, nil
	}
}

// fieldIndexName and indexKey name an index and its keys as
// controller-runtime's cache reader looks them up for
// client.MatchingFields (its internal FieldIndexName and
// KeyToNamespacedKey); TestAddIndexes checks that its List finds them.
func fieldIndexName(field string) string { return "field:" + field }

func indexKey(namespace, value string) string {
	if namespace == "" {
		namespace = "__all_namespaces"
	}
	return namespace + "/" + value
}
