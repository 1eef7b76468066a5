package nodeloss

import (
	"cmp"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/claims"
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
// them without the requirement. pin is the node the current claim is
// pinned to ("" none, pinTerminating).
func (r *reconciler) pods(ctx context.Context, key types.NamespacedName, pvc *corev1.PersistentVolumeClaim, pin string, pods []corev1.Pod) error {
	if pin == pinTerminating {
		// The claim still exists: a pod recreated now would be pinned
		// again by the webhook. Wait for it to go.
		return nil
	}
	handedOver := false
	if pvc == nil {
		// Released (by any leader) with its own Listener: the Listener
		// waits for it.
		l, err := r.handedOverListener(ctx, key)
		if err != nil {
			return err
		}
		handedOver = l != nil
	}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName != "" || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.pod(ctx, key, pvc, pin, handedOver, p); err != nil {
			return err
		}
	}
	return nil
}

// pod deletes one Pending pod of the claim if it is to be recreated (see
// pods), or explains why it is not.
func (r *reconciler) pod(ctx context.Context, key types.NamespacedName, pvc *corev1.PersistentVolumeClaim, pin string, handedOver bool, p *corev1.Pod) error {
	lost, err := r.staleRequirement(ctx, p, pin)
	if err != nil {
		return err
	}
	releasedFrom := p.Annotations[AnnotationReleasedFromNode]
	var why string
	switch {
	case lost != "":
		allowed, err := r.releaseAllowed(ctx, key, pvc, p, lost)
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
	case pvc == nil && (releasedFrom != "" || handedOver):
		// A StatefulSet recreates the missing claim of a Pending pod
		// only when it next syncs that pod; a new pod gets its claims at
		// once.
		why = fmt.Sprintf("its listener claim %s was released from its lost node %s and is recreated with the pod", key.Name, releasedFrom)
	default:
		return nil
	}
	if metav1.GetControllerOf(p) == nil {
		setLost(key.Namespace, key.Name, cmp.Or(lost, releasedFrom), RemedyDeletePod)
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
	r.recorder.Eventf(p, orNilClaim(pvc), corev1.EventTypeNormal, ReasonPodRecreated, "Delete",
		"deleted Pending pod %s: %s; its controller recreates it (and the claim) without the old node", p.Name, why)
	return nil
}

// releaseAllowed says whether a pod of the claim that requires the lost
// node may be recreated: the claim was released from it (the pod says so:
// AnnotationReleasedFromNode), or the claim's class (read from the claim
// or the handed-over Listener) releases pins.
func (r *reconciler) releaseAllowed(ctx context.Context, key types.NamespacedName, pvc *corev1.PersistentVolumeClaim, p *corev1.Pod, node string) (bool, error) {
	if p.Annotations[AnnotationReleasedFromNode] == node {
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
	release, _, err := r.policy(ctx, class)
	return err == nil && release != v1alpha1.PinnedNodeReleaseNever, client.IgnoreNotFound(err)
}
