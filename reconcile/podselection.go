package reconcile

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
)

// Which pods a per-claim Listener selects by name (issue 37). A claim's
// statefulset-claim-template annotation asks that its Listener select pod
// "<pod>" by the StatefulSet pod-name label; the StatefulSet decides
// whether that pod mounts the claim (claims.SelectedByName). The operator
// caches no StatefulSet: each question is one namespaced GET from the API
// server, asked when a claim's Listener is made, and when a Listener that
// selects by name is judged (once per Listener and process).

// EventStatefulSetPodRefused, on a claim, says that its Listener selects the
// pods that mount it by label, not the pod its statefulset-claim-template
// annotation asks for, and why.
const EventStatefulSetPodRefused = "StatefulSetPodRefused"

// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get

// statefulSetOf reads, from c in namespace, the StatefulSet whose pod pod
// would be (claims.StatefulSetOfPod): nil when pod is not such a name or the
// StatefulSet does not exist.
func statefulSetOf(ctx context.Context, c client.Reader, namespace, pod string) (*appsv1.StatefulSet, error) {
	name := claims.StatefulSetOfPod(pod)
	if name == "" {
		return nil, nil
	}
	sts := &appsv1.StatefulSet{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, sts); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get statefulset %s/%s: %w", namespace, name, err)
	}
	return sts, nil
}

// selectedByName is which pod the own Listener of pvc selects by name
// (claims.SelectedByName), reading the StatefulSet live only when the claim
// asks for one.
func selectedByName(ctx context.Context, live client.Reader, pvc *corev1.PersistentVolumeClaim) (claims.ByName, error) {
	asked := claims.StatefulSetPod(pvc.Name, pvc.Annotations)
	if asked == "" {
		return claims.ByName{}, nil
	}
	sts, err := statefulSetOf(ctx, live, pvc.Namespace, asked)
	if err != nil {
		return claims.ByName{}, err
	}
	return claims.SelectedByName(pvc.Name, pvc.Annotations, sts), nil
}

// refusedSelectionMessage says that the Listener of claim selects the pods
// that mount it, not the pod its annotation asks for (b), and why.
func refusedSelectionMessage(claim string, b claims.ByName, tmpl string) string {
	return fmt.Sprintf("claim %s, annotated %s: %s, %s", claim, v1alpha1.AnnotationStatefulSetClaimTemplate, tmpl, b.Refusal(claim))
}

// controllingClaim is the claim that controls l (a copy from the cache),
// nil when none does or it is gone.
func controllingClaim(ctx context.Context, c client.Reader, l *v1alpha1.Listener) (*corev1.PersistentVolumeClaim, error) {
	owner := metav1.GetControllerOf(l)
	if owner == nil || owner.Kind != "PersistentVolumeClaim" {
		return nil, nil
	}
	claim := &corev1.PersistentVolumeClaim{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: l.Namespace, Name: owner.Name}, claim); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get claim %s/%s of listener %s: %w", l.Namespace, owner.Name, l.Name, err)
	}
	if claim.UID != owner.UID {
		return nil, nil
	}
	return claim, nil
}

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
	claim, err := controllingClaim(ctx, r.client, l)
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
		if sts, err = statefulSetOf(ctx, r.live, l.Namespace, pod); err != nil {
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
	if refused == nil || err != nil {
		return v, err
	}
	return *refused, nil
}

// refusedSelection is the verdict on a Listener that selects the pods that
// mount its claim by label although the claim asks for a pod by name that
// does not mount it (the claim reconciler made it so, or the claim was
// annotated later): the Service serves, but not as the claim asks. nil
// when that is not so.
func (r *listenerReconciler) refusedSelection(ctx context.Context, l *v1alpha1.Listener) (*verdict, error) {
	if _, ok := l.Annotations[v1alpha1.AnnotationStatefulSetPod]; ok {
		return nil, nil
	}
	claim, err := controllingClaim(ctx, r.client, l)
	if claim == nil || err != nil {
		return nil, err
	}
	b, err := selectedByName(ctx, r.live, claim)
	if b.Problem == "" || err != nil {
		return nil, err
	}
	return &verdict{reason: v1alpha1.ReasonInvalid,
		message: refusedSelectionMessage(claim.Name, b, claim.Annotations[v1alpha1.AnnotationStatefulSetClaimTemplate])}, nil
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
