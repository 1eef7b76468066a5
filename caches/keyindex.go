package caches

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
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
	_, ok, err := x.indexer.GetByKey(storeKey(key))
	return err == nil && ok
}

// storeKey is key as an informer's store files it.
func storeKey(key types.NamespacedName) string {
	if key.Namespace == "" {
		return key.Name
	}
	return key.Namespace + "/" + key.Name
}

// ClaimFields fills c with what the pod webhook reads of the claim key,
// when the cache holds it (of an index of claims): its name, namespace,
// UID, annotations, storage class and volume name, copied (nothing in c is
// the cache's); c's other fields are left as they are. A whole copy (Get)
// cost each pod admission 10 allocations more per listener claim
// (BenchmarkPodWebhookServing).
func (x *KeyIndex) ClaimFields(key types.NamespacedName, c *corev1.PersistentVolumeClaim) bool {
	obj, ok, err := x.indexer.GetByKey(storeKey(key))
	if err != nil || !ok {
		return false
	}
	held, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return false
	}
	c.Name, c.Namespace, c.UID = held.Name, held.Namespace, held.UID
	c.Annotations = maps.Clone(held.Annotations)
	c.Spec.StorageClassName = nil
	if sc := held.Spec.StorageClassName; sc != nil {
		c.Spec.StorageClassName = new(string)
		*c.Spec.StorageClassName = *sc
	}
	c.Spec.VolumeName = held.Spec.VolumeName
	return true
}

// Has reports whether an object is filed under value.
func (x *KeyIndex) Has(value string) bool {
	keys, err := x.indexer.IndexKeys(x.name, value)
	return err == nil && len(keys) > 0
}
