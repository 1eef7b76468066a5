package listener

import (
	"context"
	"sync"

	"github.com/listener-operator/listener-operator/reconcile/internal/claimlistener"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
)

// statefulSetPodErrors are the errors of l's statefulset-pod annotation
// (validation.StatefulSetPodAnnotation, as the webhook judges it): only the
// Listener the operator made for a claim that a StatefulSet made from its
// listener claim template selects a pod by name. A Listener found valid
// is remembered (selections), so that its StatefulSet is read once.
func (r *listenerReconciler) statefulSetPodErrors(ctx context.Context, l *v1alpha1.Listener) (field.ErrorList, error) {
	pod, ok := l.Annotations[v1alpha1.AnnotationStatefulSetPod]
	if !ok {
		return nil, nil
	}
	claim, err := claimlistener.ControllingClaim(ctx, r.client, l)
	if err != nil {
		return nil, err
	}
	key := client.ObjectKeyFromObject(l)
	verified := podSelection{listener: l.UID, pod: pod}
	if claim != nil {
		verified.claim = claim.UID
		if r.selections.has(key, verified) {
			return nil, nil
		}
	}
	var sts *appsv1.StatefulSet
	if claim != nil && claims.StatefulSetPod(claim.Name, claim.Annotations) == pod {
		if sts, err = claimlistener.StatefulSetOf(ctx, r.live, l.Namespace, pod); err != nil {
			return nil, err
		}
	}
	errs := validation.StatefulSetPodAnnotation(l, claim, sts)
	if len(errs) == 0 {
		r.selections.add(key, verified)
	}
	return errs, nil
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

// podSelection is a Listener found to select pod by name for its claim.
type podSelection struct {
	listener, claim types.UID
	pod             string
}

// selections remembers, per Listener, the selection by name last found
// valid: the StatefulSet that made the claim is read once, not on every
// reconcile (a rollout of a large StatefulSet reconciles each Listener
// several times). A change of the Listener, its claim or the pod is judged
// again. Deleted Listeners are forgotten.
type selections struct {
	mu sync.Mutex
	ok map[types.NamespacedName]podSelection
}

func (s *selections) has(key types.NamespacedName, sel podSelection) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ok[key] == sel
}

func (s *selections) add(key types.NamespacedName, sel podSelection) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ok == nil {
		s.ok = map[types.NamespacedName]podSelection{}
	}
	s.ok[key] = sel
}

func (s *selections) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ok, key)
}
