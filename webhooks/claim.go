package webhooks

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
)

// +kubebuilder:webhook:path=/mutate-v1-persistentvolumeclaim,mutating=true,failurePolicy=fail,sideEffects=None,groups="",resources=persistentvolumeclaims,verbs=create,versions=v1,name=claims.mutate.listeners.stackable.tech,admissionReviewVersions=v1,timeoutSeconds=3,serviceName=listener-operator-webhook,serviceNamespace=listener-operator
// +kubebuilder:webhook:path=/mutate-v1-persistentvolumeclaim,mutating=true,failurePolicy=ignore,sideEffects=None,groups="",resources=persistentvolumeclaims,verbs=update,versions=v1,name=claim-marks.mutate.listeners.stackable.tech,admissionReviewVersions=v1,timeoutSeconds=3,serviceName=listener-operator-webhook,serviceNamespace=listener-operator
// +kubebuilder:webhook:path=/validate-v1-persistentvolumeclaim,mutating=false,failurePolicy=fail,sideEffects=None,groups="",resources=persistentvolumeclaims,verbs=create;update,versions=v1,name=claims.validate.listeners.stackable.tech,admissionReviewVersions=v1,timeoutSeconds=3,serviceName=listener-operator-webhook,serviceNamespace=listener-operator

// claimView is the part of a PersistentVolumeClaim the handlers read.
type claimView struct {
	Metadata struct {
		Name        string            `json:"name"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec *corev1.PersistentVolumeClaimSpec `json:"spec"`
}

func decodeClaim(raw []byte) (*claimView, error) {
	var c claimView
	if err := decode(raw, "PersistentVolumeClaim", &c); err != nil {
		return nil, err
	}
	if c.Spec == nil {
		c.Spec = &corev1.PersistentVolumeClaimSpec{}
	}
	return &c, nil
}

// claimMutator fills in what a listener claim leaves out: the ListenerClass
// (the default class) when it names neither a class nor a Listener, and the
// listener storage class when it has a listener annotation but no class;
// and it marks a claim of the listener storage class with the
// listener-volume label, which the operator's caches select claims by, when
// it is created and on every update that would take the mark off.
type claimMutator struct{ lookup *lookup }

func (m *claimMutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	c, err := decodeClaim(req.Object.Raw)
	if err != nil {
		return malformed(err)
	}
	if !claims.Requested(c.Metadata.Annotations, c.Spec.StorageClassName) {
		return admission.Allowed("")
	}
	var p patch
	if req.Operation == admissionv1.Update {
		// The storage class is immutable, and the class was given when
		// the claim was made: an update keeps only the mark (a whole
		// object written back without it, kubectl replace, keeps it).
		mark(&p, c.Metadata.Labels, c.Spec.StorageClassName)
		return respond(p, nil)
	}
	if claims.NeedsDefaultClass(c.Metadata.Annotations) {
		class, err := m.lookup.defaultClass(ctx, req.Namespace)
		if err != nil {
			return lookupFailed(err)
		}
		// Without a default class the claim stays as it is and validation
		// explains what to add.
		if class != "" {
			exists := c.Metadata.Annotations != nil
			p.setMapEntry("/metadata/annotations", &exists, v1alpha1.AnnotationListenerClass, class)
		}
	}
	set, err := claims.SetsStorageClass(c.Spec.StorageClassName, func(sc string) (bool, error) {
		return m.lookup.isDefaultStorageClass(ctx, sc)
	})
	if err != nil {
		return lookupFailed(err)
	}
	sc := c.Spec.StorageClassName
	if set {
		p.add("/spec/storageClassName", v1alpha1.StorageClassName)
		sc = ptr(v1alpha1.StorageClassName)
	}
	mark(&p, c.Metadata.Labels, sc)
	return respond(p, nil)
}

// mark adds to p the listener-volume label a claim of storage class sc
// with these labels needs (claims.ClaimNeedsMark): the operator's caches
// select listener claims by it.
func mark(p *patch, labels map[string]string, sc *string) {
	if claims.ClaimNeedsMark(labels, sc) {
		exists := labels != nil
		p.setMapEntry("/metadata/labels", &exists, v1alpha1.LabelListenerVolume, "true")
	}
}

// claimValidator refuses listener claims that cannot work, with a message
// that says how to fix them.
type claimValidator struct{ lookup *lookup }

func (v *claimValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	c, err := decodeClaim(req.Object.Raw)
	if err != nil {
		return malformed(err)
	}
	if !claims.Requested(c.Metadata.Annotations, c.Spec.StorageClassName) {
		return admission.Allowed("")
	}
	var old *claimView
	if req.Operation == admissionv1.Update {
		if old, err = decodeClaim(req.OldObject.Raw); err != nil {
			return malformed(err)
		}
		// The spec of a claim is immutable, and what matters about its
		// annotations was checked when it was created: only a change of
		// the listener annotations is checked again.
		oldClass, oldName := claims.Named(old.Metadata.Annotations)
		if class, name := claims.Named(c.Metadata.Annotations); oldClass == class && oldName == name {
			return admission.Allowed("")
		}
		// A bound claim keeps the Listener its volume was made for.
		if errs := validation.ClaimBinding(old.Metadata.Annotations, c.Metadata.Annotations, old.Spec.VolumeName); len(errs) > 0 {
			return invalid(req, errs)
		}
	}
	class, name := claims.Named(c.Metadata.Annotations)
	facts, err := v.lookup.claimFacts(ctx, req.Namespace, []string{class}, []string{name})
	if err != nil {
		return lookupFailed(err)
	}
	errs := validation.Claim(c.Metadata.Annotations, c.Spec, facts, nil)
	if old == nil && c.Metadata.Name != "" && claims.WillOwnListener(c.Metadata.Annotations, "") {
		// The claim's own Listener takes the claim's name.
		others, err := namesInNamespace(ctx, v.lookup, req.Namespace)
		if err != nil {
			return lookupFailed(err)
		}
		errs = append(errs, validation.NameCollisions(names.ClaimListenerName(c.Metadata.Name), others, field.NewPath("metadata", "name"))...)
		// Its Listener selects a pod by name only when that pod mounts
		// it: the pod's StatefulSet made it from a claim template.
		if pod := claims.StatefulSetPod(c.Metadata.Name, c.Metadata.Annotations); pod != "" {
			sts, err := v.lookup.statefulSetOf(ctx, req.Namespace, pod)
			if err != nil {
				return lookupFailed(err)
			}
			errs = append(errs, validation.StatefulSetClaimTemplate(c.Metadata.Name, c.Metadata.Annotations, sts)...)
		}
	}
	if old != nil {
		errs = ratchet(errs, validation.Claim(old.Metadata.Annotations, old.Spec, facts, nil))
	}
	if len(errs) > 0 {
		return invalid(req, errs)
	}
	var warnings []string
	if w := validation.MissingListener(c.Metadata.Annotations, facts); w != "" {
		warnings = append(warnings, w)
	}
	w, err := v.labelWarnings(ctx, c, class)
	if err != nil {
		return lookupFailed(err)
	}
	return admission.Allowed("").WithWarnings(append(warnings, w...)...)
}

// labelWarnings say which labels of a claim that gets a Listener of its own
// (of class) will not reach that Listener's Service (the class's
// allow-list); nothing when the class does not exist (refused already).
func (v *claimValidator) labelWarnings(ctx context.Context, c *claimView, class string) ([]string, error) {
	if class == "" || len(c.Metadata.Labels) == 0 || !claims.WillOwnListener(c.Metadata.Annotations, "") {
		return nil, nil
	}
	var lc v1alpha1.ListenerClass
	if err := v.lookup.get(ctx, types.NamespacedName{Name: class}, &lc); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return validation.ClaimLabelWarnings(c.Metadata.Labels, &lc), nil
}
