package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
)

// +kubebuilder:webhook:path=/validate-listeners-stackable-tech-v1alpha1-listenerclass,mutating=false,failurePolicy=fail,sideEffects=None,groups=listeners.stackable.tech,resources=listenerclasses,verbs=create;update;delete,versions=v1alpha1,name=listenerclasses.validate.listeners.stackable.tech,admissionReviewVersions=v1,timeoutSeconds=3,serviceName=listener-operator-webhook,serviceNamespace=listener-operator
// +kubebuilder:webhook:path=/validate-listeners-stackable-tech-v1alpha1-listener,mutating=false,failurePolicy=fail,sideEffects=None,groups=listeners.stackable.tech,resources=listeners,verbs=create;update,versions=v1alpha1,name=listeners.validate.listeners.stackable.tech,admissionReviewVersions=v1,timeoutSeconds=3,serviceName=listener-operator-webhook,serviceNamespace=listener-operator
// +kubebuilder:webhook:path=/validate-apps-v1-workload,mutating=false,failurePolicy=fail,sideEffects=None,groups=apps,resources=deployments;statefulsets;daemonsets,verbs=create;update,versions=v1,name=workloads.validate.listeners.stackable.tech,admissionReviewVersions=v1,timeoutSeconds=3,serviceName=listener-operator-webhook,serviceNamespace=listener-operator

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
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode ListenerClass: %w", err))
	}
	errs := validation.ListenerClass(&lc)
	if req.Operation == admissionv1.Update {
		var old v1alpha1.ListenerClass
		if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode ListenerClass: %w", err))
		}
		errs = ratchet(errs, validation.ListenerClass(&old))
	}
	if len(errs) > 0 {
		return invalid(req, errs)
	}
	return admission.Allowed("")
}

// users lists the Listeners and claims that refer to the class.
func (v *classValidator) users(ctx context.Context, class string) ([]string, error) {
	var listeners v1alpha1.ListenerList
	if err := v.lookup.cache.List(ctx, &listeners, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list Listeners: %w", err)
	}
	var users []string
	for _, l := range listeners.Items {
		if l.Spec.ClassName != nil && *l.Spec.ClassName == class && l.DeletionTimestamp == nil {
			users = append(users, "Listener "+l.Namespace+"/"+l.Name)
		}
	}
	var claims corev1.PersistentVolumeClaimList
	if err := v.lookup.cache.List(ctx, &claims, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list PersistentVolumeClaims: %w", err)
	}
	for _, c := range claims.Items {
		if c.Annotations[v1alpha1.AnnotationListenerClass] == class && c.DeletionTimestamp == nil {
			users = append(users, "PersistentVolumeClaim "+c.Namespace+"/"+c.Name)
		}
	}
	return users, nil
}

// listenerValidator checks Listeners, and warns about names that had to be
// rewritten for the Service and about a missing class.
type listenerValidator struct{ lookup *lookup }

func (v *listenerValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	var l v1alpha1.Listener
	if err := json.Unmarshal(req.Object.Raw, &l); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode Listener: %w", err))
	}
	var want []string
	if l.Spec.ClassName != nil {
		want = append(want, *l.Spec.ClassName)
	}
	classes, err := v.lookup.classNames(ctx, want...)
	if err != nil {
		return lookupFailed(err)
	}
	errs := validation.Listener(&l, classes)
	if req.Operation == admissionv1.Update {
		var old v1alpha1.Listener
		if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode Listener: %w", err))
		}
		errs = ratchet(errs, validation.Listener(&old, classes))
	}
	if len(errs) > 0 {
		return invalid(req, errs)
	}
	return admission.Allowed("").WithWarnings(ListenerWarnings(&l, classes)...)
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

// workloadView is the part of a pod or a workload (its pod template and
// claim templates) that the validator reads.
type workloadView struct {
	Spec struct {
		podSpecView
		Template struct {
			Spec podSpecView `json:"spec"`
		} `json:"template"`
		VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates"`
	} `json:"spec"`
}

type podSpecView struct {
	Volumes    []corev1.Volume `json:"volumes"`
	Containers []struct {
		Ports []corev1.ContainerPort `json:"ports"`
	} `json:"containers"`
}

// workloadValidator checks the listener volumes of pods and of the pod
// templates and claim templates of workloads, and warns about pinned classes
// where a new volume comes with every pod, and about Listener ports that no
// container exposes.
type workloadValidator struct{ lookup *lookup }

func (v *workloadValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	var w workloadView
	if err := decode(req.Object.Raw, req.Kind.Kind, &w); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	return v.check(ctx, req, &w)
}

// check validates the decoded pod or workload w of req.
func (v *workloadValidator) check(ctx context.Context, req admission.Request, w *workloadView) admission.Response {
	spec, path := &w.Spec.podSpecView, field.NewPath("spec", "volumes")
	if req.Kind.Kind != "Pod" {
		spec, path = &w.Spec.Template.Spec, field.NewPath("spec", "template", "spec", "volumes")
	}
	// The claims this object asks for, wherever they sit.
	type claim struct {
		annotations map[string]string
		spec        *corev1.PersistentVolumeClaimSpec
		ephemeral   bool
	}
	var claims []claim
	var classNames, listenerNames []string
	for i := range spec.Volumes {
		if e := spec.Volumes[i].Ephemeral; e != nil && e.VolumeClaimTemplate != nil && validation.IsListenerClaim(e.VolumeClaimTemplate.Annotations, e.VolumeClaimTemplate.Spec.StorageClassName) {
			claims = append(claims, claim{e.VolumeClaimTemplate.Annotations, &e.VolumeClaimTemplate.Spec, true})
		}
	}
	var templates []int
	for i := range w.Spec.VolumeClaimTemplates {
		t := &w.Spec.VolumeClaimTemplates[i]
		if validation.IsListenerClaim(t.Annotations, t.Spec.StorageClassName) {
			claims = append(claims, claim{t.Annotations, &t.Spec, false})
			templates = append(templates, i)
		}
	}
	for _, c := range claims {
		if n := c.annotations[v1alpha1.AnnotationListenerName]; n != "" {
			listenerNames = append(listenerNames, n)
		}
		classNames = append(classNames, c.annotations[v1alpha1.AnnotationListenerClass])
	}
	facts, err := v.lookup.claimFacts(ctx, req.Namespace, classNames, listenerNames)
	if err != nil {
		return lookupFailed(err)
	}
	// Templates that name no class get the default when their claims are
	// created.
	for _, c := range claims {
		_, hasClass := c.annotations[v1alpha1.AnnotationListenerClass]
		_, hasName := c.annotations[v1alpha1.AnnotationListenerName]
		if !hasClass && !hasName {
			if facts.DefaultClass, err = v.lookup.defaultClass(ctx, req.Namespace); err != nil {
				return lookupFailed(err)
			}
			break
		}
	}
	errs := validation.Volumes(spec.Volumes, facts, path)
	for _, i := range templates {
		t := &w.Spec.VolumeClaimTemplates[i]
		errs = append(errs, validation.Claim(t.Annotations, &t.Spec, facts, field.NewPath("spec", "volumeClaimTemplates").Index(i))...)
	}
	if req.Operation == admissionv1.Update && len(errs) > 0 {
		var old workloadView
		if err := decode(req.OldObject.Raw, req.Kind.Kind, &old); err == nil {
			oldSpec := &old.Spec.Template.Spec
			oldErrs := validation.Volumes(oldSpec.Volumes, facts, path)
			for i := range old.Spec.VolumeClaimTemplates {
				t := &old.Spec.VolumeClaimTemplates[i]
				if validation.IsListenerClaim(t.Annotations, t.Spec.StorageClassName) {
					oldErrs = append(oldErrs, validation.Claim(t.Annotations, &t.Spec, facts, field.NewPath("spec", "volumeClaimTemplates").Index(i))...)
				}
			}
			errs = ratchet(errs, oldErrs)
		}
	}
	if len(errs) > 0 {
		return invalid(req, errs)
	}
	var warnings []string
	for _, c := range claims {
		warnings = append(warnings, v.claimWarnings(ctx, req, c.annotations, spec, c.ephemeral)...)
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

// claimWarnings warns about a pinned class on an ephemeral claim, which
// lives no longer than its pod, and about ports of a shared Listener that no
// container declares.
func (v *workloadValidator) claimWarnings(ctx context.Context, req admission.Request, annotations map[string]string, spec *podSpecView, ephemeral bool) []string {
	var w []string
	if class := annotations[v1alpha1.AnnotationListenerClass]; class != "" && ephemeral {
		var lc v1alpha1.ListenerClass
		if err := v.lookup.get(ctx, types.NamespacedName{Name: class}, &lc); err == nil && lc.Spec.IsPinned() {
			w = append(w, fmt.Sprintf("ListenerClass %q pins each volume to the node its pod first ran on, which keeps an address stable only for long-lived claims, but an ephemeral volume gets a new claim (and address) with every new pod of this %s: use a StatefulSet volumeClaimTemplate, or a class that is not pinned", class, req.Kind.Kind))
		}
	}
	if name := annotations[v1alpha1.AnnotationListenerName]; name != "" {
		var l v1alpha1.Listener
		if err := v.lookup.get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: name}, &l); err == nil {
			exposed := map[int32]bool{}
			for _, c := range spec.Containers {
				for _, p := range c.Ports {
					exposed[p.ContainerPort] = true
				}
			}
			var missing []string
			for _, p := range l.Spec.Ports {
				if !exposed[p.Port] {
					missing = append(missing, fmt.Sprintf("%s (%d)", p.Name, p.Port))
				}
			}
			if len(missing) > 0 {
				w = append(w, fmt.Sprintf("Listener %q exposes ports that no container declares: %s; add them to the containers' ports or remove them from the Listener", name, joinSorted(missing)))
			}
		}
	}
	return w
}
