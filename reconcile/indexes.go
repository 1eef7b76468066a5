package reconcile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
)

// Cache indexes: every lookup a reconcile or a watch mapping makes goes
// through one of these, never through a list of everything.
const (
	// indexListenerClass: Listeners by spec.className.
	indexListenerClass = "spec.className"
	// indexListenerServiceName: Listeners by status.serviceName, the
	// Service they publish, and by the name their Service gets
	// (names.ServiceName), which a Listener not yet published waits for.
	indexListenerServiceName = "status.serviceName"
	// indexServiceOwner: Services by the name of the Listener that controls them.
	indexServiceOwner = "listener.controller"
	// indexSliceService: EndpointSlices by the Service they belong to.
	indexSliceService = "endpointslice.service"
	// indexSliceNode: EndpointSlices by the nodes of their endpoints.
	indexSliceNode = "endpointslice.node"
	// indexClaimListener: PersistentVolumeClaims by the Listener they use.
	indexClaimListener = "claim.listener"
	// indexPVNode: PersistentVolumes by the nodes they are pinned to.
	indexPVNode = "pv.pinnedNode"
	// indexPodClaim: Pods by the claims their volumes use (registered by
	// caches.ReconcilerView, which the pinned-node-loss controller shares).
	indexPodClaim = caches.IndexPodClaim
)

func addIndexes(ctx context.Context, fi client.FieldIndexer) error {
	indexes := []struct {
		obj   client.Object
		field string
		fn    client.IndexerFunc
	}{
		{&v1alpha1.Listener{}, indexListenerClass, func(o client.Object) []string {
			if c := o.(*v1alpha1.Listener).Spec.ClassName; c != nil {
				return []string{*c}
			}
			return nil
		}},
		{&v1alpha1.Listener{}, indexListenerServiceName, func(o client.Object) []string {
			return listenerServiceNames(o.(*v1alpha1.Listener))
		}},
		{&corev1.Service{}, indexServiceOwner, func(o client.Object) []string {
			if owner := controlledByListener(o); owner != "" {
				return []string{owner}
			}
			return nil
		}},
		{&discoveryv1.EndpointSlice{}, indexSliceService, func(o client.Object) []string {
			if s := o.GetLabels()[discoveryv1.LabelServiceName]; s != "" {
				return []string{s}
			}
			return nil
		}},
		{&discoveryv1.EndpointSlice{}, indexSliceNode, func(o client.Object) []string {
			return endpointNodes([]discoveryv1.EndpointSlice{*o.(*discoveryv1.EndpointSlice)}, true)
		}},
		{&corev1.PersistentVolumeClaim{}, indexClaimListener, func(o client.Object) []string {
			if name, ok := claimListener(o.(*corev1.PersistentVolumeClaim)); ok {
				return []string{name}
			}
			return nil
		}},
		{&corev1.PersistentVolume{}, indexPVNode, func(o client.Object) []string {
			return addresses.PinnedNodes(o.(*corev1.PersistentVolume))
		}},
	}
	for _, ix := range indexes {
		if err := fi.IndexField(ctx, ix.obj, ix.field, ix.fn); err != nil {
			return fmt.Errorf("index %T by %s: %w", ix.obj, ix.field, err)
		}
	}
	return nil
}

// listenerServiceNames are the Service names a Listener is found by: the
// one its status publishes and the one it would get (they differ only when
// the naming changed, or before the first status).
func listenerServiceNames(l *v1alpha1.Listener) []string {
	own := names.ServiceName(l.Name)
	if s := l.Status.ServiceName; s != "" && s != own {
		return []string{s, own}
	}
	return []string{own}
}

// claimListener is the Listener a listener claim uses (claims.OfClaim):
// false when it is not a listener claim or uses none.
func claimListener(pvc *corev1.PersistentVolumeClaim) (string, bool) {
	use, ok := claims.OfClaim(pvc)
	return use.Listener, ok && use.Listener != ""
}
