package listener

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
)

// servingNodes are the nodes a NodePort Listener is reachable through: those
// its volumes are pinned to and those its pods run on (podNodes), both found
// through its claims.
func (r *listenerReconciler) servingNodes(ctx context.Context, l *v1alpha1.Listener) ([]*corev1.Node, error) {
	publishNotReady := l.Spec.EffectivePublishNotReadyAddresses()
	claims, err := lookup.ClaimsOfListener(ctx, r.client, l.Namespace, l.Name)
	if err != nil {
		return nil, err
	}
	var nodeNames []string
	for _, c := range claims {
		pods, err := caches.PodsOfClaim(ctx, r.client, c.Namespace, c.Name)
		if err != nil {
			return nil, err
		}
		nodeNames = append(nodeNames, podNodes(pods, publishNotReady)...)
		if c.Spec.VolumeName == "" {
			continue
		}
		pv := &corev1.PersistentVolume{}
		if err := r.client.Get(ctx, types.NamespacedName{Name: c.Spec.VolumeName}, pv); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("get volume %s of claim %s/%s: %w", c.Spec.VolumeName, c.Namespace, c.Name, err)
		}
		if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID != "" && pv.Spec.ClaimRef.UID != c.UID {
			continue // bound to another claim of the same name
		}
		nodeNames = append(nodeNames, addresses.PinnedNodes(pv)...)
	}

	seen := map[string]bool{}
	var nodes []*corev1.Node
	for _, name := range nodeNames {
		if seen[name] {
			continue
		}
		seen[name] = true
		n := &corev1.Node{}
		if err := r.client.Get(ctx, types.NamespacedName{Name: name}, n); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("get node %s: %w", name, err)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}
