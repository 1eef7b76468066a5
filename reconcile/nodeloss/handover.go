package nodeloss

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// This file expires hand-overs: a Listener handed over to a claim that
// does not come back is deleted after Options.HandoverTimeout.

// handover deals with a claim name that has no claim: a Listener handed over
// to it waits for it while a pod that will bring the claim back exists, and
// is deleted once it has waited longer than the handover timeout.
func (r *reconciler) handover(ctx context.Context, key types.NamespacedName, pods []corev1.Pod, now time.Time) (ctrl.Result, error) {
	l, err := r.handedOverListener(ctx, key)
	if err != nil || l == nil || !l.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, err
	}
	since, err := r.handedOverSince(ctx, key, l, now)
	if err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		return ctrl.Result{}, err
	}
	if mounted(pods) {
		// A pod mounts the claim: its controller brings the claim back
		// (a StatefulSet creates missing claims of its pods).
		return ctrl.Result{RequeueAfter: r.opts.HandoverTimeout}, nil
	}
	if wait := r.opts.HandoverTimeout - now.Sub(since); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	return r.expire(ctx, key, l)
}

// handedOverSince is when the Listener was released (releasedSince),
// writing its Released condition now if it tells nothing: a Listener
// handed over by hand.
func (r *reconciler) handedOverSince(ctx context.Context, key types.NamespacedName, l *v1alpha1.Listener, now time.Time) (time.Time, error) {
	if since, ok := releasedSince(l); ok {
		return since, nil
	}
	msg := fmt.Sprintf("handed over to claim %s, which does not exist yet", key.Name)
	return now, r.setCondition(ctx, l, metav1.ConditionFalse, v1alpha1.ReasonReleased, msg, false)
}

// releasedSince is when Listener l was released: its released-at
// annotation, which the release writes with the handover annotation, or,
// on a Listener released before that annotation existed, the transition
// time of its Released condition (then written when the reason changed).
// The condition's time is not enough on its own: NodeLost and Released are
// both False, so since the condition keeps its time while its status does,
// it says when the node was lost.
func releasedSince(l *v1alpha1.Listener) (time.Time, bool) {
	if at, err := time.Parse(time.RFC3339, l.Annotations[v1alpha1.AnnotationReleasedAt]); err == nil {
		return at, true
	}
	if c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionPinnedNodesAvailable); c != nil && c.Reason == v1alpha1.ReasonReleased {
		return c.LastTransitionTime.Time, true
	}
	return time.Time{}, false
}

// mounted reports whether a pod that is not terminating mounts the claim.
func mounted(pods []corev1.Pod) bool {
	for i := range pods {
		if pods[i].DeletionTimestamp.IsZero() {
			return true
		}
	}
	return false
}

// expire deletes a handed-over Listener whose claim did not come back.
func (r *reconciler) expire(ctx context.Context, key types.NamespacedName, l *v1alpha1.Listener) (ctrl.Result, error) {
	err := r.client.Delete(ctx, l, client.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion})
	switch {
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, nil
	case apierrors.IsConflict(err):
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("delete handed-over listener %s: %w", key, err)
	}
	handoversExpiredTotal.Inc()
	// The delete is what happened once: no other replica records it.
	r.recorder.Eventf(l, nil, corev1.EventTypeNormal, v1alpha1.ReasonHandoverExpired, "Delete",
		"deleted Listener %s: it was handed over to claim %s, which did not come back within %s and no pod mounts it", l.Name, key.Name, r.opts.HandoverTimeout)
	return ctrl.Result{}, nil
}
