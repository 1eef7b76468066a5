package validation

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// StatefulSetClaimTemplate refuses a claim named claimName whose
// statefulset-claim-template annotation asks that its own Listener select
// a pod by name that does not mount it (claims.SelectedByName): only a
// claim a StatefulSet makes from its listener claim template may ask. sts
// is the StatefulSet of the pod asked for (claims.StatefulSetOfPod), nil
// when the namespace has none.
func StatefulSetClaimTemplate(claimName string, annotations map[string]string, sts *appsv1.StatefulSet) field.ErrorList {
	b := claims.SelectedByName(claimName, annotations, sts)
	if b.Problem == "" {
		return nil
	}
	key := v1alpha1.AnnotationStatefulSetClaimTemplate
	return field.ErrorList{field.Invalid(field.NewPath("metadata", "annotations").Key(key), annotations[key], b.Refusal(claimName))}
}

// StatefulSetPodAnnotation refuses the statefulset-pod annotation on a
// Listener the operator did not make for a claim that a StatefulSet made
// from its listener claim template: the Service of such a Listener selects
// the named pod by its StatefulSet pod-name label, whether or not it mounts
// a listener volume. claim is the claim that controls the Listener (nil if
// none or not found), sts the StatefulSet of the pod the annotation names
// (claims.StatefulSetOfPod; nil when the namespace has none).
func StatefulSetPodAnnotation(l *v1alpha1.Listener, claim *corev1.PersistentVolumeClaim, sts *appsv1.StatefulSet) field.ErrorList {
	pod, ok := l.Annotations[v1alpha1.AnnotationStatefulSetPod]
	if !ok {
		return nil
	}
	why := ""
	owner := metav1.GetControllerOf(l)
	if owner != nil && owner.Kind == "PersistentVolumeClaim" && claim != nil && claim.UID == owner.UID &&
		claim.Name == owner.Name && names.ClaimListenerName(claim.Name) == l.Name && claims.StatefulSetPod(claim.Name, claim.Annotations) == pod {
		b := claims.SelectedByName(claim.Name, claim.Annotations, sts)
		if b.Pod == pod {
			return nil
		}
		why = fmt.Sprintf(" (its claim %s asks for that pod, but %s)", claim.Name, b.Problem)
	}
	return field.ErrorList{field.Forbidden(field.NewPath("metadata", "annotations").Key(v1alpha1.AnnotationStatefulSetPod), fmt.Sprintf(
		"only the operator sets this annotation, on the Listener it makes for a claim that a StatefulSet made from its listener claim template; it would select pod %q by name whether or not it mounts a listener volume%s; remove it (a Listener selects the pods that mount its volumes)", pod, why))}
}
