package nodeloss

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// This file acts on listener claims: it releases a claim from its lost
// node (hand the Listener over, delete the claim) and explains a released
// claim that a pod on a NotReady node still holds.

// release hands the claim's own Listener over and deletes the claim (d
// says why). Once it is released, the claim pins nothing and the pod step
// knows the node it was released from.
func (r *reconciler) release(ctx context.Context, pvc *corev1.PersistentVolumeClaim, listener *v1alpha1.Listener, node string, d decision) (ctrl.Result, claimState, error) {
	res, pinned := ctrl.Result{RequeueAfter: d.recheck}, claimState{pin: node}
	if listener != nil {
		if err := r.handOver(ctx, listener, pvc, node); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: conflictRetry}, pinned, nil
			}
			return res, pinned, err
		}
	}
	deleted, err := r.deleteClaim(ctx, pvc)
	switch {
	case apierrors.IsConflict(err):
		return ctrl.Result{RequeueAfter: conflictRetry}, pinned, nil
	case err != nil:
		return res, pinned, err
	case !deleted:
		return ctrl.Result{}, claimState{}, nil
	}
	releasesTotal.WithLabelValues(d.trigger).Inc()
	clearLost(pvc.Namespace, pvc.Name)
	return res, claimState{releasedFrom: node}, r.reportReleased(ctx, pvc, listener, d)
}

// deleteClaim deletes the claim as it was read (UID and resourceVersion
// preconditions), orphaning its Listener: the garbage collector removes
// the claim's controller reference from its Listener before the claim
// goes, instead of deleting the Listener with it. The Listener is never
// without a controller while the old claim is live, so it cannot be
// adopted back by it. deleted is false when the claim was gone already.
func (r *reconciler) deleteClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (bool, error) {
	err := r.client.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID, ResourceVersion: &pvc.ResourceVersion}, client.PropagationPolicy(metav1.DeletePropagationOrphan))
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case apierrors.IsConflict(err):
		return false, err
	case err != nil:
		return false, fmt.Errorf("delete claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	return true, nil
}

// handOver names the claim in the Listener's handover annotation, so that
// the claim recreated under the same name adopts it once the claim's
// deletion (with orphan propagation) has removed the claim's controller
// reference, the node it is released from (AnnotationReleasedFromNode) and
// when (AnnotationReleasedAt, where the handover timeout starts). While the
// old claim controls it, nobody adopts it.
func (r *reconciler) handOver(ctx context.Context, l *v1alpha1.Listener, pvc *corev1.PersistentVolumeClaim, node string) error {
	if l.Annotations[v1alpha1.AnnotationHandoverToClaim] == pvc.Name && l.Annotations[v1alpha1.AnnotationReleasedFromNode] == node {
		return nil
	}
	updated := l.DeepCopy()
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	updated.Annotations[v1alpha1.AnnotationHandoverToClaim] = pvc.Name
	updated.Annotations[v1alpha1.AnnotationReleasedFromNode] = node
	updated.Annotations[v1alpha1.AnnotationReleasedAt] = r.now().UTC().Format(time.RFC3339)
	if err := r.client.Update(ctx, updated, client.FieldOwner(v1alpha1.FieldManager)); err != nil {
		return fmt.Errorf("hand listener %s/%s over: %w", l.Namespace, l.Name, err)
	}
	updated.DeepCopyInto(l)
	return nil
}

// terminating handles a listener claim on its way out: if a pod still holds
// it on a node that is not usable, that pod is what keeps everything stuck,
// and only its kubelet or an out-of-service taint can let it go.
func (r *reconciler) terminating(ctx context.Context, pvc *corev1.PersistentVolumeClaim, pods []corev1.Pod) (ctrl.Result, error) {
	stuck := false
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" {
			continue
		}
		n := &corev1.Node{}
		err := r.client.Get(ctx, types.NamespacedName{Name: p.Spec.NodeName}, n)
		if err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("get node %s: %w", p.Spec.NodeName, err)
		}
		if err == nil && !stateOf(n).ready {
			stuck = true
			setLost(pvc.Namespace, pvc.Name, p.Spec.NodeName, RemedyOutOfServiceTaint)
			r.explain(ctx, p, pvc, stuckMessage(pvc, p))
		}
	}
	if !stuck {
		clearLost(pvc.Namespace, pvc.Name)
	}
	return ctrl.Result{}, nil
}

// stuckMessage explains a released claim that pod p still holds on its
// NotReady node.
func stuckMessage(pvc *corev1.PersistentVolumeClaim, p *corev1.Pod) string {
	return fmt.Sprintf(
		"listener claim %s/%s was released, but pod %s still holds it on node %s, which is not Ready; the pod (and its replacement) waits until kubelet on %s confirms it stopped. "+
			"If the machine is down, mark it: kubectl taint node %s node.kubernetes.io/out-of-service=nodeshutdown:NoExecute (the operator never force-deletes pods)",
		pvc.Namespace, pvc.Name, p.Name, p.Spec.NodeName, p.Spec.NodeName, p.Spec.NodeName)
}
