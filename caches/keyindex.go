package caches

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KeyIndex is an index of the objects a cache holds of one kind that
// answers with their keys only (namespace/name, or the name of a
// cluster-scoped object), never the objects: a question such as "is this
// class one without a gateway" costs no copy of the object, and the one
// asking cannot reach what the cache holds. It reads the informer's store
// as Get does, so it is as current as a read.
type KeyIndex struct {
	indexer toolscache.Indexer
	name    string
}

// NewKeyIndex files the objects of obj's kind that c holds under the values
// values gives for them (from a copy, as every index function of the
// package's caches gets), in an index called name ("": none, for Holds
// alone). c is a cache made by New (or the reconcilers' view of one).
func NewKeyIndex(ctx context.Context, c cache.Informers, obj client.Object, name string, values func(client.Object) []string) (*KeyIndex, error) {
	inf, err := c.GetInformer(ctx, obj)
	if err != nil {
		return nil, fmt.Errorf("informer of %T: %w", obj, err)
	}
	ci, ok := inf.(copyingInformer)
	if !ok {
		return nil, fmt.Errorf("index %s: the informer of %T is %T, not one of a cache made by caches.New", name, obj, inf)
	}
	store, ok := ci.i.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, fmt.Errorf("index %s: the informer of %T (%T) has no store to index", name, obj, ci.i)
	}
	if name != "" {
		err = ci.AddIndexers(toolscache.Indexers{name: func(o any) ([]string, error) {
			if co, ok := o.(client.Object); ok {
				return values(co), nil
			}
			return nil, nil
		}})
		if err != nil {
			return nil, fmt.Errorf("index %T by %s: %w", obj, name, err)
		}
	}
	return &KeyIndex{indexer: store.GetIndexer(), name: name}, nil
}

// Holds reports whether the cache holds the object key (a read of it
// would find it), without making the NotFound error a read that does not
// costs.
func (x *KeyIndex) Holds(key types.NamespacedName) bool {
	k := key.Name
	if key.Namespace != "" {
		k = key.Namespace + "/" + key.Name
	}
	_, ok, err := x.indexer.GetByKey(k)
	return err == nil && ok
}

// Has reports whether an object is filed under value.
func (x *KeyIndex) Has(value string) bool {
	keys, err := x.indexer.IndexKeys(x.name, value)
	return err == nil && len(keys) > 0
}
