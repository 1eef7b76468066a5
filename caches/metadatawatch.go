package caches

import (
	"context"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// metadataListWatch lists and watches the metadata of resource through cfg,
// on httpClient (nil: one of its own): what a reflector into a store of
// our own reads when only a few fields of each object are kept
// (NamespaceDefaults, PodListenersHashes).
func metadataListWatch(cfg *rest.Config, httpClient *http.Client, resource schema.GroupVersionResource) (cache.ListerWatcher, error) {
	if httpClient == nil {
		var err error
		if httpClient, err = rest.HTTPClientFor(cfg); err != nil {
			return nil, fmt.Errorf("create HTTP client: %w", err)
		}
	}
	mc, err := metadata.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("create metadata client: %w", err)
	}
	res := mc.Resource(resource)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return res.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, opts)
		},
	}, nil
}
