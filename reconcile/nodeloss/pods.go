package nodeloss

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// This file deletes the Pending pods of a released claim, so that their
// controller recreates them (and the claim) without the lost node.

// pinTerminating is the pin of a claim on its way out: it pins nothing
// new, and its pods wait for it to go.
const pinTerminating = "-"

// pods deletes the Pending pods of the claim that still require a node the
// claim is no longer pinned to, when that node is not usable and the claim
// was released (by policy or by hand), so that their controller recreates
// them without the requirement. st is what the claim step left.
func (r *reconciler) pods(ctx context.Context, key types.NamespacedName, pvc *corev1.PersistentVolumeClaim, st claimState, pods []corev1.Pod) error {
	if st.pin == pinTerminating {
		// The claim still exists: a pod recreated now would be pinned
		// again by the webhook. Wait for it to go.
		return nil
	}
	pending := slices.DeleteFunc(slices.Clone(pods), func(p corev1.Pod) bool {
		return p.Spec.NodeName != "" || !p.DeletionTimestamp.IsZero()
	})
	if len(pending) == 0 {
		return nil
	}
	rel, err := r.releaseOf(ctx, key, pvc, st.releasedFrom)
	if err != nil {
		return err
	}
	for i := range pending {
		if err := r.pod(ctx, key, pvc, st.pin, rel, &pending[i]); err != nil {
			return err
		}
	}
	return nil
}

// releaseRecord is what is known of a claim's release.
type releaseRecord struct {
	// from is the node the claim was released from: by this reconcile,
	// or as its own Listener records (v1alpha1.AnnotationReleasedFromNode).
	from string
	// waiting: the claim is gone and its own Listener, handed over,
	// waits for it.
	waiting bool
}

// releaseOf reads what the release of the claim named key wrote on its
// own Listener (handed over to it, or controlled by the claim that
// adopted it). now is the node this reconcile released it from, if any.
func (r *reconciler) releaseOf(ctx context.Context, key types.NamespacedName, pvc *corev1.PersistentVolumeClaim, now string) (releaseRecord, error) {
	l := &v1alpha1.Listener{}
	err := r.client.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: names.ClaimListenerName(key.Name)}, l)
	if apierrors.IsNotFound(err) {
		return releaseRecord{from: now}, nil
	}
	if err != nil {
		return releaseRecord{}, fmt.Errorf("get listener %s: %w", key, err)
	}
	handedOver := l.Annotations[v1alpha1.AnnotationHandoverToClaim] == key.Name && metav1.GetControllerOf(l) == nil
	if !handedOver && (pvc == nil || !metav1.IsControlledBy(l, pvc)) {
		return releaseRecord{from: now}, nil
	}
	return releaseRecord{from: cmp.Or(now, l.Annotations[v1alpha1.AnnotationReleasedFromNode]), waiting: pvc == nil && handedOver}, nil
}

// pod deletes one Pending pod of the claim if it is to be recreated (see
// pods), or explains why it is not.
func (r *reconciler) pod(ctx context.Context, key types.NamespacedName, pvc *corev1.PersistentVolumeClaim, pin string, rel releaseRecord, p *corev1.Pod) error {
	lost, err := r.staleRequirement(ctx, p, pin)
	if err != nil {
		return err
	}
	var why string
	switch {
	case lost != "":
		allowed, err := r.releaseAllowed(ctx, key, pvc, rel, lost)
		if err != nil {
			return err
		}
		if !allowed {
			r.explain(ctx, p, orNilClaim(pvc), fmt.Sprintf(
				"pod %s requires node %s, which is gone, and its listener claim %s is no longer pinned there; delete the pod so that its controller recreates it without that requirement",
				p.Name, lost, key.Name))
			return nil
		}
		why = fmt.Sprintf("it requires node %s, which is gone, and its listener claim %s was released", lost, key.Name)
	case pvc == nil && rel.waiting:
		// A StatefulSet recreates the missing claim of a Pending pod
		// only when it next syncs that pod; a new pod gets its claims at
		// once.
		why = fmt.Sprintf("its listener claim %s was released from its lost node %s and is recreated with the pod", key.Name, rel.from)
	default:
		return nil
	}
	if metav1.GetControllerOf(p) == nil {
		setLost(key.Namespace, key.Name, cmp.Or(lost, rel.from), RemedyDeletePod)
		r.explain(ctx, p, orNilClaim(pvc), fmt.Sprintf(
			"pod %s cannot start: %s; the pod has no controller to recreate it: delete it and create it again", p.Name, why))
		return nil
	}
	return r.deletePod(ctx, p, pvc, why)
}

// deletePod deletes a Pending pod for its controller to recreate it. Not a
// force delete: an unscheduled pod has nothing to stop, so the API server
// removes it at once anyway.
func (r *reconciler) deletePod(ctx context.Context, p *corev1.Pod, pvc *corev1.PersistentVolumeClaim, why string) error {
	err := r.client.Delete(ctx, p, client.Preconditions{UID: &p.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	podsRecreatedTotal.Inc()
	// The delete is what happened once: no other replica records it.
	r.recorder.Eventf(p, orNilClaim(pvc), corev1.EventTypeNormal, v1alpha1.ReasonPodRecreated, "Delete",
		"deleted Pending pod %s: %s; its controller recreates it (and the claim) without the old node", p.Name, why)
	return nil
}

// releaseAllowed says whether a pod of the claim that requires the lost
// node may be recreated: the claim was released from it (rel), or the
// claim's class (read from the claim or the handed-over Listener) releases
// pins.
func (r *reconciler) releaseAllowed(ctx context.Context, key types.NamespacedName, pvc *corev1.PersistentVolumeClaim, rel releaseRecord, node string) (bool, error) {
	if rel.from == node {
		return true, nil
	}
	class := ""
	if pvc != nil {
		class = claims.Of(pvc.Name, pvc.Annotations).Class
	} else {
		l, err := r.handedOverListener(ctx, key)
		if err != nil || l == nil || l.Spec.ClassName == nil {
			return false, err
		}
		class = *l.Spec.ClassName
	}
	if class == "" {
		return false, nil
	}
	release, _, err := r.pinnedNodeLoss(ctx, class)
	return err == nil && release != v1alpha1.PinnedNodeReleaseNever, client.IgnoreNotFound(err)
}
