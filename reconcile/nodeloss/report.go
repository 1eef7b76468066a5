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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// This file tells the user: the Listener condition PinnedNodesAvailable and
// the events. Nothing here is remembered in the process: an explanation is
// recorded unless the object's latest event of that reason already says
// it (so a new leader does not repeat it), and the events of what was done
// (Released, PodRecreated, HandoverExpired) follow the one write that did
// it.

// StatusFieldManager is the field manager of the condition this controller
// writes on Listeners (server-side apply), distinct from the Listener
// controller's.
const StatusFieldManager = v1alpha1.FieldManager + "-node-loss"

// reportAvailable says on the claim's own Listener (if it ever lost its
// node) that the node the claim is pinned to is there.
func (r *reconciler) reportAvailable(ctx context.Context, pvc *corev1.PersistentVolumeClaim, listener *v1alpha1.Listener, node string) error {
	if listener == nil {
		return nil
	}
	return r.setCondition(ctx, listener, metav1.ConditionTrue, ReasonAvailable,
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
	return r.setCondition(ctx, listener, metav1.ConditionFalse, ReasonNodeLost, d.message, false)
}

// reportReleased tells of a release that just happened (the claim's
// deletion, once): events on the claim and its Listener, the Listener's
// condition.
func (r *reconciler) reportReleased(ctx context.Context, pvc *corev1.PersistentVolumeClaim, listener *v1alpha1.Listener, d decision) error {
	r.recorder.Eventf(pvc, orNil(listener), corev1.EventTypeNormal, ReasonReleased, "Delete", "%s", d.message)
	if listener == nil {
		return nil
	}
	r.recorder.Eventf(listener, pvc, corev1.EventTypeNormal, ReasonReleased, "HandOver", "%s", d.message)
	err := r.setCondition(ctx, listener, metav1.ConditionFalse, ReasonReleased,
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
	if r.alreadySays(ctx, regarding, ReasonNodeLost, note) {
		return
	}
	r.recorder.Eventf(regarding, related, corev1.EventTypeWarning, ReasonNodeLost, "Explain", "%s", note)
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

// setCondition writes the PinnedNodesAvailable condition. onlyIfPresent
// leaves Listeners that never lost a node without it. The transition time
// moves when the status or the reason changes (the handover timeout counts
// from the Released transition).
func (r *reconciler) setCondition(ctx context.Context, l *v1alpha1.Listener, status metav1.ConditionStatus, reason, message string, onlyIfPresent bool) error {
	old := meta.FindStatusCondition(l.Status.Conditions, ConditionPinnedNodesAvailable)
	if old == nil && onlyIfPresent {
		return nil
	}
	if old != nil && old.Status == status && old.Reason == reason && old.Message == message {
		return nil
	}
	t := metav1.NewTime(r.now())
	if old != nil && old.Status == status && old.Reason == reason {
		t = old.LastTransitionTime
	}
	cond, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&metav1.Condition{
		Type: ConditionPinnedNodesAvailable, Status: status, Reason: reason, Message: v1alpha1.TruncateMessage(message),
		ObservedGeneration: l.Generation, LastTransitionTime: t,
	})
	if err != nil {
		return fmt.Errorf("condition of listener %s/%s: %w", l.Namespace, l.Name, err)
	}
	// Server-side apply of this condition alone, under this controller's
	// own field manager: the Listener controller's fields and conditions
	// are left as they are, whatever this reconcile's copy of them says.
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Listener",
		"metadata": map[string]any{"namespace": l.Namespace, "name": l.Name, "uid": string(l.UID)},
		"status":   map[string]any{"conditions": []any{cond}},
	}}
	if err := r.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(StatusFieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply condition %s of listener %s/%s: %w", ConditionPinnedNodesAvailable, l.Namespace, l.Name, err)
	}
	updated := &v1alpha1.Listener{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, updated); err != nil {
		return fmt.Errorf("read back listener %s/%s: %w", l.Namespace, l.Name, err)
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
