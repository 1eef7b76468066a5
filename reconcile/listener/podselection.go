package listener

import (
	"context"

	"github.com/listener-operator/listener-operator/reconcile/internal/claimlistener"
	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
)

// statefulSetPodErrors are the errors of l's statefulset-pod annotation
// (validation.StatefulSetPodAnnotation, as the webhook judges it): only the
// Listener the operator made for a claim that a StatefulSet made from its
// listener claim template selects a pod by name. It is judged at every
// reconcile from the StatefulSet that exists now, read from the API server
// (its claim templates are what decides, and the cache does not hold
// them), so that a restarted operator and a running one agree; the
// StatefulSet's create and delete reconcile l (setup.go). A different
// StatefulSet of that name, without the claim template (the first one
// deleted, its claims kept, another made), would get the pod the Service
// selects by name: the Listener's Service goes. While no StatefulSet of
// that name exists (awaiting, when it has a Service) the Service keeps
// selecting that pod: a
// StatefulSet deleted with --cascade=orphan and applied again keeps its
// pods and its Listeners' addresses.
func (r *listenerReconciler) statefulSetPodErrors(ctx context.Context, l *v1alpha1.Listener) (errs field.ErrorList, awaiting bool, err error) {
	pod, ok := l.Annotations[v1alpha1.AnnotationStatefulSetPod]
	if !ok {
		return nil, false, nil
	}
	claim, err := claimlistener.ControllingClaim(ctx, r.client, l)
	if err != nil {
		return nil, false, err
	}
	var sts *appsv1.StatefulSet
	if claim != nil && claims.StatefulSetPod(claim.Name, claim.Annotations) == pod {
		if sts, err = claimlistener.StatefulSetOf(ctx, r.live, l.Namespace, pod); err != nil {
			return nil, false, err
		}
	}
	errs = validation.StatefulSetPodAnnotation(l, claim, sts)
	if len(errs) > 0 && sts != nil {
		if err := r.deleteStaleServices(ctx, l, ""); err != nil {
			return nil, false, err
		}
	}
	if len(errs) == 0 || sts != nil {
		return errs, false, nil
	}
	// Only a Service made while the StatefulSet was there waits for it; a
	// Listener that never had one (its annotation forged on a plain
	// claim's Listener) gets none.
	svc, err := r.existingService(ctx, l.Namespace, names.ServiceName(l.Name))
	return errs, svc != nil, err
}

// awaitingStatefulSet is the verdict on a Listener whose pod is selected
// by name while no StatefulSet of that name exists (errs, from
// statefulSetPodErrors): its Service keeps selecting that pod, and still
// follows its class (exposure is the class's, whatever the StatefulSet),
// but the Listener is not Ready until the StatefulSet is back.
func awaitingStatefulSet(errs field.ErrorList) outcome {
	return outcome{verdict: verdict{reason: v1alpha1.ReasonInvalid, message: errs.ToAggregate().Error()}}
}

// withRefusedSelection is v, the verdict on a Listener whose Service was
// made, or the refusedSelection verdict when there is one: the Service
// serves the pods that mount the claim, not as the claim asks.
func (r *listenerReconciler) withRefusedSelection(ctx context.Context, l *v1alpha1.Listener, v verdict) (verdict, error) {
	refused, err := r.refusedSelection(ctx, l)
	if refused.none() || err != nil {
		return v, err
	}
	return refused, nil
}

// refusedSelection is the verdict on a Listener that selects the pods that
// mount its claim by label although the claim asks for a pod by name that
// does not mount it (the claim reconciler made it so, or the claim was
// annotated later): the Service serves, but not as the claim asks. None
// when that is not so.
func (r *listenerReconciler) refusedSelection(ctx context.Context, l *v1alpha1.Listener) (verdict, error) {
	if _, ok := l.Annotations[v1alpha1.AnnotationStatefulSetPod]; ok {
		return verdict{}, nil
	}
	claim, err := claimlistener.ControllingClaim(ctx, r.client, l)
	if claim == nil || err != nil {
		return verdict{}, err
	}
	b, err := claimlistener.SelectedByName(ctx, r.live, claim)
	if b.Problem == "" || err != nil {
		return verdict{}, err
	}
	return verdict{reason: v1alpha1.ReasonInvalid,
		message: claimlistener.RefusedSelectionMessage(claim.Name, b, claim.Annotations[v1alpha1.AnnotationStatefulSetClaimTemplate])}, nil
}

// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch

// listenersSelectingPodsOf are the Listeners of namespace that select a pod
// of StatefulSet sts by name: a StatefulSet of that name made or deleted
// changes their verdict.
func listenersSelectingPodsOf(ctx context.Context, c client.Reader, namespace, sts string) []ctrl.Request {
	var ls v1alpha1.ListenerList
	if err := c.List(ctx, &ls, client.InNamespace(namespace), client.MatchingFields{lookup.IndexListenerSelectedStatefulSet: sts}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list listeners selecting pods by name", "namespace", namespace, "statefulset", sts)
		return nil
	}
	reqs := make([]ctrl.Request, len(ls.Items))
	for i := range ls.Items {
		reqs[i] = ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&ls.Items[i])}
	}
	return reqs
}
