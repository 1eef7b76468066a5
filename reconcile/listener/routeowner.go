package listener

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// routeIsOwn reports whether route rt is Listener l's to keep, change or
// delete: l controls it, or it is its predecessor's (predecessorRoute).
func (r *listenerReconciler) routeIsOwn(ctx context.Context, rt metav1.Object, l *v1alpha1.Listener) (bool, error) {
	if metav1.IsControlledBy(rt, l) {
		return true, nil
	}
	if !predecessorCandidate(rt, l) {
		return false, nil
	}
	// l is the Listener of its name as the API server has it now, not one
	// the cache still shows after its successor was made: else the route
	// would be its successor's, and taking it over would hand it to a
	// deleted Listener. Read only in the window before the garbage
	// collector removes the route.
	live := &v1alpha1.Listener{}
	switch err := r.live.Get(ctx, client.ObjectKeyFromObject(l), live); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get listener %s/%s: %w", l.Namespace, l.Name, err)
	}
	return live.UID == l.UID && live.DeletionTimestamp.IsZero(), nil
}

// predecessorCandidate reports whether route rt may be one the operator
// made for an earlier Listener of l's name in l's namespace: that Listener
// was deleted and l made since, and the garbage collector has not removed
// the route yet. Such a route is garbage, and l takes it over (applying
// its own owner reference) instead of reading GatewaySectionTaken or
// ForeignRoute until the collector runs. Only the operator's routes
// (gateway.MadeFor) of l's own namespace, controlled by a Listener of l's
// name and another UID, qualify.
func predecessorCandidate(rt metav1.Object, l *v1alpha1.Listener) bool {
	owner, ok := gateway.MadeFor(rt)
	return ok && owner == l.Name && rt.GetNamespace() == l.Namespace && metav1.GetControllerOfNoCopy(rt).UID != l.UID
}
