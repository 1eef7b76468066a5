package webhooks

import (
	"context"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
)

// +kubebuilder:webhook:path=/validate-listeners-stackable-tech-v1alpha1-listenerclass,mutating=false,failurePolicy=fail,sideEffects=None,groups=listeners.stackable.tech,resources=listenerclasses,verbs=create;update;delete,versions=v1alpha1,name=listenerclasses.validate.listeners.stackable.tech,admissionReviewVersions=v1,timeoutSeconds=3,serviceName=listener-operator-webhook,serviceNamespace=listener-operator

// classValidator checks ListenerClasses, and refuses deleting one that
// Listeners or claims still use.
type classValidator struct{ lookup *lookup }

func (v *classValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation == admissionv1.Delete {
		users, err := v.users(ctx, req.Name)
		if err != nil {
			return lookupFailed(err)
		}
		if errs := validation.ListenerClassDeletion(req.Name, users); len(errs) > 0 {
			return invalid(req, errs)
		}
		return admission.Allowed("")
	}
	var lc v1alpha1.ListenerClass
	if err := json.Unmarshal(req.Object.Raw, &lc); err != nil {
		return malformed(fmt.Errorf("decode ListenerClass: %w", err))
	}
	errs := validation.ListenerClass(&lc)
	var old *v1alpha1.ListenerClass
	if req.Operation == admissionv1.Update {
		old = &v1alpha1.ListenerClass{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return malformed(fmt.Errorf("decode ListenerClass: %w", err))
		}
		errs = ratchet(errs, validation.ListenerClass(old))
	}
	// A template that can give two Listeners one name: refused when new,
	// a warning when the class keeps it (its names are published already).
	ambiguous, warnings := validation.HostnameOneToOne(&lc, old)
	errs = append(errs, ambiguous...)
	if len(errs) == 0 {
		gwErrs, gwWarnings := v.gatewayChecks(ctx, &lc) // gatewayclass.go
		errs, warnings = append(errs, gwErrs...), append(warnings, gwWarnings...)
	}
	if len(errs) > 0 {
		return invalid(req, errs)
	}
	warnings = append(warnings, v.overlappingRanges(ctx, &lc)...)
	warnings = append(warnings, v.overlappingTemplates(ctx, &lc, old)...)
	return admission.Allowed("").WithWarnings(append(validation.ListenerClassWarnings(&lc), warnings...)...)
}

// overlappingRanges warns about other classes whose node port ranges
// overlap lc's. A failed read only costs the warning, never the class.
func (v *classValidator) overlappingRanges(ctx context.Context, lc *v1alpha1.ListenerClass) []string {
	if lc.Spec.NodePortRange == nil {
		return nil
	}
	var classes v1alpha1.ListenerClassList
	if err := v.lookup.cache.List(ctx, &classes); err != nil {
		return []string{fmt.Sprintf("could not check spec.nodePortRange against the other classes' ranges (%v); list them with: kubectl get listenerclasses -o wide", err)}
	}
	return validation.OverlappingRanges(lc, classes.Items)
}

// overlappingTemplates warns about other classes whose hostname templates
// can give another Listener a name lc's gives one of its own, when lc is
// new or its template changes. A failed read only costs the warning.
func (v *classValidator) overlappingTemplates(ctx context.Context, lc, old *v1alpha1.ListenerClass) []string {
	if lc.Spec.Hostname == nil || old != nil && old.Spec.Hostname != nil && old.Spec.Hostname.Template == lc.Spec.Hostname.Template {
		return nil
	}
	var classes v1alpha1.ListenerClassList
	if err := v.lookup.cache.List(ctx, &classes); err != nil {
		return []string{fmt.Sprintf("could not check spec.hostname.template against the other classes' templates (%v); list them with: kubectl get listenerclasses -o wide", err)}
	}
	return validation.HostnameOverlaps(lc, old, classes.Items)
}

// users counts, per namespace, the Listeners and claims that refer to the
// class.
func (v *classValidator) users(ctx context.Context, class string) (validation.ClassUsers, error) {
	var listeners v1alpha1.ListenerList
	if err := v.lookup.cache.List(ctx, &listeners); err != nil {
		return nil, fmt.Errorf("list Listeners: %w", err)
	}
	users := validation.ClassUsers{}
	for _, l := range listeners.Items {
		// A Listener whose Service was made from the class (status.className)
		// uses it too, even once spec.className names another, missing,
		// class: its Service stays as the class made it.
		named := l.Spec.ClassName != nil && *l.Spec.ClassName == class
		if (named || l.Status.ClassName == class) && l.DeletionTimestamp == nil {
			users.Add(l.Namespace, false)
		}
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := v.lookup.cache.List(ctx, &pvcs); err != nil {
		return nil, fmt.Errorf("list PersistentVolumeClaims: %w", err)
	}
	for _, c := range pvcs.Items {
		if named, _ := claims.Named(c.Annotations); named == class && c.DeletionTimestamp == nil {
			users.Add(c.Namespace, true)
		}
	}
	return users, nil
}
