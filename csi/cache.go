package csi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
)

// CacheOptions say what a process serves, and so what it must watch.
type CacheOptions struct {
	// NodeName scopes the node plugin's watches of Pods and Nodes to this
	// node; empty watches no Pods or Nodes.
	NodeName string
}

// NewCache builds the informer cache the driver reads through:
// ListenerClasses (few, cluster-wide admin policy) and, for a node, only its
// own Node and the Pods scheduled to it (trimmed). Nothing that grows with the
// cluster's listeners is watched here: the controller reads a claim, a
// shared Listener or a volume live when csi-provisioner asks (rarely: the
// operator provisions listener volumes itself, see reconcile/provision),
// and a node plugin reads Listeners through a ListenerScope, which watches
// only the ones its volumes publish. Reading a type it does not watch
// fails rather than quietly starting a cluster-wide watch (FallbackReader
// reads such a type live). Start it (and wait for it to sync) before
// serving.
func NewCache(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, opts CacheOptions) (cache.Cache, error) {
	byObject := map[client.Object]cache.ByObject{}
	if opts.NodeName != "" {
		// A node runs pods that are not a listener's, up to its pod
		// limit: of each the plugin keeps what the reconcilers keep
		// (caches.TrimPod), which holds what it reads (the node name,
		// the UID, a listener pod's container ports) and drops images,
		// env, probes and status.
		byObject[&corev1.Pod{}] = cache.ByObject{Field: fields.OneTermEqualSelector("spec.nodeName", opts.NodeName), Transform: caches.TrimPod}
		byObject[&corev1.Node{}] = cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", opts.NodeName)}
	}
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, ByObject: byObject, ReaderFailOnMissingInformer: true,
		// Nothing the driver reads is in managedFields, often the
		// largest part of an object.
		DefaultTransform: caches.Compact})
	if err != nil {
		return nil, fmt.Errorf("create cache: %w", err)
	}
	watch := []client.Object{&v1alpha1.ListenerClass{}}
	if opts.NodeName != "" {
		watch = append(watch, &corev1.Pod{}, &corev1.Node{})
	}
	for _, obj := range watch {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return nil, fmt.Errorf("watch %T: %w", obj, err)
		}
	}
	return c, nil
}
