package nodeloss

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
)

// This file reads what the decision and the actions need: the claim, its
// volume's pin, its Listener and class, the nodes. It writes nothing.

// getClaim is the listener claim of key (nil when there is none) and
// whether the controller handles key at all (never another claim, nor its
// pods).
func (r *reconciler) getClaim(ctx context.Context, key types.NamespacedName) (*corev1.PersistentVolumeClaim, bool, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	err := r.client.Get(ctx, key, pvc)
	if apierrors.IsNotFound(err) {
		// The cache holds only listener claims (marked): a claim it
		// lacks may be another of the pod's claims, or a listener claim
		// not marked yet. Only the API server tells them from a claim
		// that is gone.
		err = r.reader.Get(ctx, key, pvc)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, true, nil
	case err != nil:
		return nil, false, fmt.Errorf("get claim %s: %w", key, err)
	}
	return pvc, claims.IsListenerClaim(pvc), nil
}

// podsOf are the pods that mount the claim named key.
func (r *reconciler) podsOf(ctx context.Context, key types.NamespacedName) ([]corev1.Pod, error) {
	return caches.PodsOfClaim(ctx, r.client, key.Namespace, key.Name)
}

// node is the state of the named node (gone when it does not exist).
func (r *reconciler) node(ctx context.Context, name string) (nodeState, error) {
	n := &corev1.Node{}
	switch err := r.client.Get(ctx, types.NamespacedName{Name: name}, n); {
	case apierrors.IsNotFound(err):
		return stateOf(nil), nil
	case err != nil:
		return nodeState{}, fmt.Errorf("get node %s: %w", name, err)
	}
	return stateOf(n), nil
}

// pinnedNodeOf is the node a claim's volume is pinned to ("" when it is not
// bound or not pinned), and the Listener the claim uses (claims.Bound: a
// bound volume keeps the one recorded on it).
func (r *reconciler) pinnedNodeOf(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (string, claims.Use, error) {
	use := claims.Of(pvc.Name, pvc.Annotations)
	if pvc.Spec.VolumeName == "" {
		return "", use, nil
	}
	pv := &corev1.PersistentVolume{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return "", use, client.IgnoreNotFound(err)
	}
	if ref := pv.Spec.ClaimRef; ref != nil && ref.UID != "" && ref.UID != pvc.UID {
		return "", use, nil // bound to an earlier claim of this name
	}
	return addresses.PinnedNode(pv), claims.Bound(pvc, use, pv), nil
}

// claimInfo gathers what decide needs about a pinned claim that uses use
// (pinnedNodeOf).
func (r *reconciler) claimInfo(ctx context.Context, pvc *corev1.PersistentVolumeClaim, use claims.Use, node string) (claimInfo, error) {
	info := claimInfo{namespace: pvc.Namespace, name: pvc.Name, node: node, manual: pvc.Annotations[v1alpha1.AnnotationReleasePinnedNode]}
	info.class, info.listener = use.Class, use.Listener
	if named := use.Listener; named != "" && use.Class == "" {
		// A shared Listener's class decides (and that of the claim's own
		// one when the claim no longer names it: claims.Bound).
		l := &v1alpha1.Listener{}
		if err := r.client.Get(ctx, types.NamespacedName{Namespace: pvc.Namespace, Name: named}, l); err != nil && !apierrors.IsNotFound(err) {
			return info, fmt.Errorf("get listener %s/%s: %w", pvc.Namespace, named, err)
		} else if err == nil && l.Spec.ClassName != nil {
			info.class = *l.Spec.ClassName
		}
	}
	var err error
	info.release, info.timeout, err = r.pinnedNodeLoss(ctx, info.class)
	if apierrors.IsNotFound(err) {
		// A class that is gone has no pinnedNodeLoss: its default applies.
		info.release, info.timeout, err = v1alpha1.PinnedNodeReleaseNodeDeleted, 0, nil
	}
	return info, err
}

// pinnedNodeLoss is a class's effective pinnedNodeLoss: when a claim pinned to a
// lost node is released, and after how long.
func (r *reconciler) pinnedNodeLoss(ctx context.Context, class string) (v1alpha1.PinnedNodeRelease, time.Duration, error) {
	lc := &v1alpha1.ListenerClass{}
	if class == "" {
		return v1alpha1.PinnedNodeReleaseNodeDeleted, 0, nil
	}
	if err := r.client.Get(ctx, types.NamespacedName{Name: class}, lc); err != nil {
		return "", 0, fmt.Errorf("get listener class %s: %w", class, err)
	}
	release, timeout := lc.Spec.EffectivePinnedNodeLoss()
	return release, timeout, nil
}

// ownListener is the claim's own Listener (of use, from pinnedNodeOf) if it
// exists and the claim controls it (shared Listeners are not the claim's to
// hand over).
func (r *reconciler) ownListener(ctx context.Context, pvc *corev1.PersistentVolumeClaim, use claims.Use) (*v1alpha1.Listener, error) {
	if !use.Own {
		return nil, nil
	}
	l := &v1alpha1.Listener{}
	err := r.client.Get(ctx, types.NamespacedName{Namespace: pvc.Namespace, Name: use.Listener}, l)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get listener %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	if !metav1.IsControlledBy(l, pvc) {
		return nil, nil
	}
	return l, nil
}

// handedOverListener is the Listener handed over to the claim named key
// that waits for it (no controller), or nil.
func (r *reconciler) handedOverListener(ctx context.Context, key types.NamespacedName) (*v1alpha1.Listener, error) {
	l := &v1alpha1.Listener{}
	err := r.client.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: names.ClaimListenerName(key.Name)}, l)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get listener %s: %w", key, err)
	}
	if l.Annotations[v1alpha1.AnnotationHandoverToClaim] != key.Name || metav1.GetControllerOf(l) != nil {
		return nil, nil
	}
	return l, nil
}

// staleRequirement is the first node the pod's listener hostname affinity
// requires that is not pin (the claim's current node) and is not usable,
// or "".
func (r *reconciler) staleRequirement(ctx context.Context, p *corev1.Pod, pin string) (string, error) {
	for _, m := range claims.PinnedNodes(p) {
		if m == pin {
			continue
		}
		n, err := r.node(ctx, m)
		if err != nil {
			return "", err
		}
		if !n.usable() {
			return m, nil
		}
	}
	return "", nil
}
