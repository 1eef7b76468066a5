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

// volumeHandleIndex indexes PersistentVolumes by "<driver>/<volume handle>".
const volumeHandleIndex = "csi.driverAndVolumeHandle"

func volumeHandleKey(driver, handle string) string { return driver + "/" + handle }

// CacheOptions say what a process serves, and so what it must watch.
type CacheOptions struct {
	// NodeName scopes the node plugin's watches of Pods and Nodes to this
	// node; empty watches no Pods or Nodes.
	NodeName string
	// Controller watches PersistentVolumes (indexed by volume handle) for
	// ValidateVolumeCapabilities.
	Controller bool
}

// NewCache builds the informer cache the driver reads through:
// ListenerClasses (few, cluster-wide admin policy); for a node, only its own
// Node and the Pods scheduled to it; for the controller (one Deployment),
// every Listener and the listener PersistentVolumes (marked, see
// claims.Marked). A node plugin alone does not watch
// Listeners here: it reads them through a ListenerScope, which watches only
// the ones its volumes publish. Reading any other type from it fails rather
// than quietly starting a cluster-wide watch. Start it (and wait for it to
// sync) before serving.
func NewCache(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, opts CacheOptions) (cache.Cache, error) {
	byObject := map[client.Object]cache.ByObject{}
	if opts.NodeName != "" {
		byObject[&corev1.Pod{}] = cache.ByObject{Field: fields.OneTermEqualSelector("spec.nodeName", opts.NodeName)}
		byObject[&corev1.Node{}] = cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", opts.NodeName)}
	}
	if opts.Controller {
		// Only listener volumes (marked by the controller once bound): a
		// cluster's other volumes are never sent to the driver.
		byObject[&corev1.PersistentVolume{}] = cache.ByObject{Label: caches.Marked(), Transform: caches.TrimVolume}
	}
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, ByObject: byObject, ReaderFailOnMissingInformer: true,
		// Nothing the driver reads is in managedFields, often the
		// largest part of an object.
		DefaultTransform: caches.Compact})
	if err != nil {
		return nil, fmt.Errorf("create cache: %w", err)
	}
	watch := []client.Object{&v1alpha1.ListenerClass{}}
	if opts.Controller {
		watch = append(watch, &v1alpha1.Listener{})
	}
	if opts.NodeName != "" {
		watch = append(watch, &corev1.Pod{}, &corev1.Node{})
	}
	for _, obj := range watch {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return nil, fmt.Errorf("watch %T: %w", obj, err)
		}
	}
	if opts.Controller {
		err := c.IndexField(ctx, &corev1.PersistentVolume{}, volumeHandleIndex, func(obj client.Object) []string {
			pv, ok := obj.(*corev1.PersistentVolume)
			if !ok || pv.Spec.CSI == nil {
				return nil
			}
			return []string{volumeHandleKey(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle)}
		})
		if err != nil {
			return nil, fmt.Errorf("index PersistentVolumes by volume handle: %w", err)
		}
	}
	return c, nil
}
