package csi

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FallbackReader reads through Cache and, when the cache does not have the
// object, from Live: an object created a moment ago (a pod just scheduled
// here, a Listener just created) may not have reached the cache yet, and
// being told "not found" then would fail a publish for nothing. A type the
// cache does not watch at all (the controller's Listeners) is read live.
type FallbackReader struct {
	Cache client.Reader
	Live  client.Reader
}

var _ client.Reader = FallbackReader{}

// Get reads from the cache, and live on NotFound or when the cache does
// not watch the type.
func (r FallbackReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := r.Cache.Get(ctx, key, obj, opts...)
	var notCached *cache.ErrResourceNotCached
	if apierrors.IsNotFound(err) || errors.As(err, &notCached) {
		return r.Live.Get(ctx, key, obj, opts...)
	}
	return err
}

// List reads from the cache only.
func (r FallbackReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.Cache.List(ctx, list, opts...)
}
