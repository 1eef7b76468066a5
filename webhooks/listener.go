package webhooks

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/service"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
)

// +kubebuilder:webhook:path=/validate-listeners-stackable-tech-v1alpha1-listener,mutating=false,failurePolicy=fail,sideEffects=None,groups=listeners.stackable.tech,resources=listeners,verbs=create;update,versions=v1alpha1,name=listeners.validate.listeners.stackable.tech,admissionReviewVersions=v1,timeoutSeconds=3,serviceName=listener-operator-webhook,serviceNamespace=listener-operator

// listenerValidator checks Listeners, and warns about names that had to be
// rewritten for the Service and about a missing class.
type listenerValidator struct{ lookup *lookup }

func (v *listenerValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	var l, old *v1alpha1.Listener
	l, err := decodeListener(req.Object.Raw)
	if err == nil && req.Operation == admissionv1.Update {
		old, err = decodeListener(req.OldObject.Raw)
	}
	if err != nil {
		return malformed(err)
	}
	classes, class, err := v.classes(ctx, l)
	if err != nil {
		return lookupFailed(err)
	}
	carried, err := v.carried(ctx, l, class, old != nil)
	if err != nil {
		return lookupFailed(err)
	}
	// One rule with the reconciler: the Service that results from the
	// class and everything the tenant wrote keeps what the class decides.
	errs, metadataWarnings := validation.ListenerAgainstClass(l, class, carried)
	errs = append(validation.Listener(l, classes), errs...)
	if old != nil {
		oldErrs, _ := validation.ListenerAgainstClass(old, class, carried)
		errs = ratchet(errs, append(validation.Listener(old, classes), oldErrs...))
	}
	others, err := v.relations(ctx, req, l, old)
	if err != nil {
		return lookupFailed(err)
	}
	if errs = append(errs, others...); len(errs) > 0 {
		return invalid(req, errs)
	}
	return admission.Allowed("").WithWarnings(append(ListenerWarnings(l, classes), metadataWarnings...)...)
}

func decodeListener(raw []byte) (*v1alpha1.Listener, error) {
	var l v1alpha1.Listener
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("decode Listener: %w", err)
	}
	return &l, nil
}

// classes are the names of the ListenerClasses (with the one l names,
// read live if the cache lacks it) and l's class (nil when it does not
// exist): the class is policy, and what a tenant writes (overrides,
// labels) may not change what it decides.
func (v *listenerValidator) classes(ctx context.Context, l *v1alpha1.Listener) (validation.ClassNames, *v1alpha1.ListenerClass, error) {
	var want []string
	if l.Spec.ClassName != nil {
		want = append(want, *l.Spec.ClassName)
	}
	classes, err := v.lookup.classNames(ctx, want...)
	if err != nil || l.Spec.ClassName == nil || *l.Spec.ClassName == "" {
		return classes, nil, err
	}
	var lc v1alpha1.ListenerClass
	err = v.lookup.get(ctx, types.NamespacedName{Name: *l.Spec.ClassName}, &lc)
	switch {
	case err == nil:
		return classes, &lc, nil
	case apierrors.IsNotFound(err):
		return classes, nil, nil
	}
	return nil, nil, err
}

// carried are the keys l's Service carries now, which a class in mode
// Warn keeps (service.CarriedBy): read live (the webhooks' cache holds no
// Services), and only for an update of a Listener of such a class; a
// Listener being created has no Service of its own yet.
func (v *listenerValidator) carried(ctx context.Context, l *v1alpha1.Listener, class *v1alpha1.ListenerClass, update bool) (service.Carried, error) {
	if !update || class == nil || class.Spec.EffectiveTenantMetadataMode() != v1alpha1.TenantMetadataWarn {
		return service.Carried{}, nil
	}
	var svc corev1.Service
	err := v.lookup.live.Get(ctx, types.NamespacedName{Namespace: l.Namespace, Name: names.ServiceName(l.Name)}, &svc)
	switch {
	case apierrors.IsNotFound(err):
		return service.Carried{}, nil
	case err != nil:
		return service.Carried{}, fmt.Errorf("get Service of Listener %s/%s: %w", l.Namespace, l.Name, err)
	}
	return service.CarriedBy(l, &svc), nil
}

// relations are the errors of l (old: as stored, nil on CREATE) with
// other objects: the statefulset-pod annotation, which is the operator's,
// judged against the claim that controls l when it is set or changed (the
// webhook is called for annotation changes too); on CREATE, a name that
// collides with another Listener's.
func (v *listenerValidator) relations(ctx context.Context, req admission.Request, l, old *v1alpha1.Listener) (field.ErrorList, error) {
	var errs field.ErrorList
	if pod, ok := l.Annotations[v1alpha1.AnnotationStatefulSetPod]; ok && (old == nil || old.Annotations[v1alpha1.AnnotationStatefulSetPod] != pod) {
		claim, err := v.controllingClaim(ctx, l)
		if err != nil {
			return nil, err
		}
		sts, err := v.statefulSetOf(ctx, l, claim, pod)
		if err != nil {
			return nil, err
		}
		errs = append(errs, validation.StatefulSetPodAnnotation(l, claim, sts)...)
	}
	if old == nil {
		others, err := v.listenerNames(ctx, req.Namespace)
		if err != nil {
			return nil, err
		}
		errs = append(errs, validation.NameCollisions(l.Name, others, field.NewPath("metadata", "name"))...)
	}
	return errs, nil
}

// controllingClaim is the claim that controls l, or nil.
func (v *listenerValidator) controllingClaim(ctx context.Context, l *v1alpha1.Listener) (*corev1.PersistentVolumeClaim, error) {
	owner := metav1.GetControllerOf(l)
	if owner == nil || owner.Kind != "PersistentVolumeClaim" {
		return nil, nil
	}
	claim := &corev1.PersistentVolumeClaim{}
	err := v.lookup.get(ctx, types.NamespacedName{Namespace: l.Namespace, Name: owner.Name}, claim)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return claim, err
}

// statefulSetOf is the StatefulSet of pod (lookup.statefulSetOf), read
// only when claim, which controls l, asks for that pod.
func (v *listenerValidator) statefulSetOf(ctx context.Context, l *v1alpha1.Listener, claim *corev1.PersistentVolumeClaim, pod string) (*appsv1.StatefulSet, error) {
	if claim == nil || claims.StatefulSetPod(claim.Name, claim.Annotations) != pod {
		return nil, nil
	}
	return v.lookup.statefulSetOf(ctx, l.Namespace, pod)
}

// listenerNames are the names of the Listeners in namespace.
func (v *listenerValidator) listenerNames(ctx context.Context, namespace string) ([]string, error) {
	return namesInNamespace(ctx, v.lookup, namespace)
}

// ListenerWarnings are the things about a valid Listener that are probably
// not what its author meant.
func ListenerWarnings(l *v1alpha1.Listener, classes validation.ClassNames) []string {
	var w []string
	if l.Spec.ClassName == nil {
		w = append(w, fmt.Sprintf("spec.className is not set: the Listener gets no Service until it names a ListenerClass (available: %s)", classes))
	}
	if svc := names.ServiceName(l.Name); svc != l.Name {
		w = append(w, fmt.Sprintf("the name %q is not a DNS-1035 label, so the Listener's Service is named %q; a lower-case name starting with a letter, without dots, keeps them equal", l.Name, svc))
	}
	return w
}
