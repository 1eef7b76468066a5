package listener

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// isOwn reports whether obj, a route or the Service the operator made for
// a Listener, is Listener l's to keep, change or delete: l controls it, or
// it is its predecessor's (predecessorCandidate).
func (r *listenerReconciler) isOwn(ctx context.Context, obj metav1.Object, l *v1alpha1.Listener) (bool, error) {
	if metav1.IsControlledBy(obj, l) {
		return true, nil
	}
	if !predecessorCandidate(obj, l) {
		return false, nil
	}
	// l is the Listener of its name as the API server has it now, not one
	// the cache still shows after its successor was made: else the object
	// would be its successor's, and taking it over would hand it to a
	// deleted Listener. Read only in the window before the garbage
	// collector removes the object.
	live := &v1alpha1.Listener{}
	switch err := r.live.Get(ctx, client.ObjectKeyFromObject(l), live); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get listener %s/%s: %w", l.Namespace, l.Name, err)
	}
	return live.UID == l.UID && live.DeletionTimestamp.IsZero(), nil
}

// predecessorCandidate reports whether obj (a route or a Service) may be
// one the operator made for an earlier Listener of l's name in l's
// namespace: that Listener was deleted and l made since, and the garbage
// collector has not removed obj yet. Such an object is garbage, and l takes
// it over (applying its own owner reference) instead of reading
// GatewaySectionTaken, ForeignRoute or ForeignService until the collector
// runs; a Service taken over keeps its node ports, cluster IP and load
// balancer address. Only the operator's objects (madeFor) of l's own
// namespace, controlled by a Listener of l's name and another UID, qualify.
func predecessorCandidate(obj metav1.Object, l *v1alpha1.Listener) bool {
	owner, ok := madeFor(obj)
	return ok && owner == l.Name && obj.GetNamespace() == l.Namespace && metav1.GetControllerOfNoCopy(obj).UID != l.UID
}

// madeFor is the name of the Listener that controls obj when the operator
// made obj: a route by its labels (gateway.MadeFor); a Service also by the
// labels every Service of the operator carries, which no override or
// tenant changes (api/service). A Service of another operator (Stackable's
// among them) that a Listener controls is not the operator's.
func madeFor(obj metav1.Object) (listener string, ok bool) {
	if _, svc := obj.(*corev1.Service); svc {
		labels := obj.GetLabels()
		if labels[LabelName] != LabelNameValue || labels[LabelManagedBy] != v1alpha1.FieldManager {
			return "", false
		}
	}
	return gateway.MadeFor(obj)
}
