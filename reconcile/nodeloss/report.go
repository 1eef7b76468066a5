package nodeloss

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/conditions"
)

// This file tells the user: the Listener condition PinnedNodesAvailable and
// the events. Nothing here is remembered in the process: an explanation is
// recorded unless the object's latest event of that reason already says
// it (so a new leader does not repeat it), and the events of what was done
// (Released, PodRecreated, HandoverExpired) follow the one write that did
// it.

// reportAvailable says on the claim's own Listener (if it ever lost its
// node) that the node the claim is pinned to is there.
func (r *reconciler) reportAvailable(ctx context.Context, pvc *corev1.PersistentVolumeClaim, listener *v1alpha1.Listener, node string) error {
	if listener == nil {
		return nil
	}
	return r.setCondition(ctx, listener, metav1.ConditionTrue, v1alpha1.ReasonAvailable,
		fmt.Sprintf("listener claim %s is pinned to node %s, which is available", pvc.Name, node), true)
}

// reportLost explains a claim pinned to a lost node that is not released:
// events on the claim and its Pending pods, the Listener's condition.
func (r *reconciler) reportLost(ctx context.Context, pvc *corev1.PersistentVolumeClaim, listener *v1alpha1.Listener, pods []corev1.Pod, d decision) error {
	r.explain(ctx, pvc, orNil(listener), d.message)
	for i := range pods {
		if pods[i].Spec.NodeName == "" && pods[i].DeletionTimestamp.IsZero() {
			r.explain(ctx, &pods[i], pvc, d.message)
		}
	}
	if listener == nil {
		return nil
	}
	return r.setCondition(ctx, listener, metav1.ConditionFalse, v1alpha1.ReasonNodeLost, d.message, false)
}

// reportReleased tells of a release that just happened (the claim's
// deletion, once): events on the claim and its Listener, the Listener's
// condition.
func (r *reconciler) reportReleased(ctx context.Context, pvc *corev1.PersistentVolumeClaim, listener *v1alpha1.Listener, d decision) error {
	r.recorder.Eventf(pvc, orNil(listener), corev1.EventTypeNormal, v1alpha1.ReasonReleased, "Delete", "%s", d.message)
	if listener == nil {
		return nil
	}
	r.recorder.Eventf(listener, pvc, corev1.EventTypeNormal, v1alpha1.ReasonReleased, "HandOver", "%s", d.message)
	err := r.setCondition(ctx, listener, metav1.ConditionFalse, v1alpha1.ReasonReleased,
		fmt.Sprintf("%s; handed over to the claim recreated as %s", d.message, pvc.Name), false)
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// explain records a Warning NodeLost event on regarding, unless its latest
// NodeLost event already says note: reconciles repeat, and so do leaders;
// the explanation should not.
func (r *reconciler) explain(ctx context.Context, regarding client.Object, related runtime.Object, note string) {
	if r.alreadySays(ctx, regarding, v1alpha1.ReasonNodeLost, note) {
		return
	}
	r.recorder.Eventf(regarding, related, corev1.EventTypeWarning, v1alpha1.ReasonNodeLost, "Explain", "%s", note)
}

// alreadySays reports whether the latest event of reason regarding obj (as
// the API server has it) has note. When the events cannot be read it says
// no: an explanation repeated is better than one missing.
func (r *reconciler) alreadySays(ctx context.Context, obj client.Object, reason, note string) bool {
	var list eventsv1.EventList
	err := r.reader.List(ctx, &list, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{"regarding.uid": string(obj.GetUID()), "reason": reason})
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "read events", "reason", reason, "regarding", client.ObjectKeyFromObject(obj))
		return false
	}
	var latest *eventsv1.Event
	for i := range list.Items {
		if e := &list.Items[i]; latest == nil || lastSeen(e).After(lastSeen(latest)) {
			latest = e
		}
	}
	return latest != nil && latest.Note == note
}

// lastSeen is when an event was last observed.
func lastSeen(e *eventsv1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// setCondition writes the PinnedNodesAvailable condition (conditions.Writer:
// its lastTransitionTime moves when its status changes). onlyIfPresent
// leaves Listeners that never lost a node without it.
func (r *reconciler) setCondition(ctx context.Context, l *v1alpha1.Listener, status metav1.ConditionStatus, reason, message string, onlyIfPresent bool) error {
	old := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionPinnedNodesAvailable)
	if old == nil && onlyIfPresent {
		return nil
	}
	if old != nil && old.Status == status && old.Reason == reason && old.Message == message {
		return nil
	}
	cond := &metav1.Condition{Type: v1alpha1.ConditionPinnedNodesAvailable, Status: status, Reason: reason, Message: v1alpha1.TruncateMessage(message)}
	// This condition alone, under this controller's own field manager: the
	// Listener controller's fields and conditions are left as they are,
	// whatever this reconcile's copy of them says.
	updated, err := conditions.For(v1alpha1.NodeLossStatusWriter).ApplyCondition(ctx, r.client, l, cond, r.now())
	if err != nil {
		return fmt.Errorf("apply condition %s of listener %s/%s: %w", v1alpha1.ConditionPinnedNodesAvailable, l.Namespace, l.Name, err)
	}
	updated.DeepCopyInto(l)
	return nil
}

// orNil turns a nil Listener into a nil interface, not an interface
// holding a nil pointer.
func orNil(l *v1alpha1.Listener) runtime.Object {
	if l == nil {
		return nil
	}
	return l
}

// orNilClaim turns a nil claim into a nil interface.
func orNilClaim(c *corev1.PersistentVolumeClaim) runtime.Object {
	if c == nil {
		return nil
	}
	return c
}
