package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
)

// +kubebuilder:webhook:path=/validate-listeners-stackable-tech-v1alpha1-listenerclass,mutating=false,failurePolicy=fail,sideEffects=None,groups=listeners.stackable.tech,resources=listenerclasses,verbs=create;update;delete,versions=v1alpha1,name=listenerclasses.validate.listeners.stackable.tech,admissionReviewVersions=v1,timeoutSeconds=3,serviceName=listener-operator-webhook,serviceNamespace=listener-operator
// +kubebuilder:webhook:path=/validate-listeners-stackable-tech-v1alpha1-listener,mutating=false,failurePolicy=fail,sideEffects=None,groups=listeners.stackable.tech,resources=listeners,verbs=create;update,versions=v1alpha1,name=listeners.validate.listeners.stackable.tech,admissionReviewVersions=v1,timeoutSeconds=3,serviceName=listener-operator-webhook,serviceNamespace=listener-operator
// +kubebuilder:webhook:path=/validate-apps-v1-workload,mutating=false,failurePolicy=fail,sideEffects=None,groups=apps;batch,resources=deployments;statefulsets;daemonsets;replicasets;jobs;cronjobs,verbs=create;update,versions=v1,name=workloads.validate.listeners.stackable.tech,admissionReviewVersions=v1,timeoutSeconds=3,serviceName=listener-operator-webhook,serviceNamespace=listener-operator

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
	return admission.Allowed("").WithWarnings(validation.ListenerClassWarnings(&lc)...)
}

// users counts, per namespace, the Listeners and claims that refer to the
// class.
func (v *classValidator) users(ctx context.Context, class string) (validation.ClassUsers, error) {
	var listeners v1alpha1.ListenerList
	if err := v.lookup.cache.List(ctx, &listeners, client.UnsafeDisableDeepCopy); err != nil {
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
	if err := v.lookup.cache.List(ctx, &pvcs, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list PersistentVolumeClaims: %w", err)
	}
	for _, c := range pvcs.Items {
		if named, _ := claims.Named(c.Annotations); named == class && c.DeletionTimestamp == nil {
			users.Add(c.Namespace, true)
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
	// The class is policy: overrides may not change what it decides.
	var class *v1alpha1.ListenerClass
	if l.Spec.ClassName != nil && *l.Spec.ClassName != "" && len(l.Spec.ObjectOverrides) > 0 {
		var lc v1alpha1.ListenerClass
		err := v.lookup.get(ctx, types.NamespacedName{Name: *l.Spec.ClassName}, &lc)
		switch {
		case err == nil:
			class = &lc
		case !apierrors.IsNotFound(err):
			return lookupFailed(err)
		}
	}
	check := func(l *v1alpha1.Listener) field.ErrorList {
		errs := validation.Listener(l, classes)
		// One rule with the reconciler: the Service that results from
		// the class and the overrides keeps what the class decides.
		return append(errs, validation.ListenerOverrides(l, class)...)
	}
	errs := check(&l)
	var old *v1alpha1.Listener
	if req.Operation == admissionv1.Update {
		old = &v1alpha1.Listener{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode Listener: %w", err))
		}
		errs = ratchet(errs, check(old))
	}
	// The statefulset-pod annotation is the operator's: judged when it is
	// set or changed (the webhook is called for annotation changes too).
	if pod, ok := l.Annotations[v1alpha1.AnnotationStatefulSetPod]; ok && (old == nil || old.Annotations[v1alpha1.AnnotationStatefulSetPod] != pod) {
		claim, err := v.controllingClaim(ctx, &l)
		if err != nil {
			return lookupFailed(err)
		}
		errs = append(errs, validation.StatefulSetPodAnnotation(&l, claim)...)
	}
	if old == nil {
		others, err := v.listenerNames(ctx, req.Namespace)
		if err != nil {
			return lookupFailed(err)
		}
		errs = append(errs, validation.NameCollisions(l.Name, others, field.NewPath("metadata", "name"))...)
	}
	if len(errs) > 0 {
		return invalid(req, errs)
	}
	return admission.Allowed("").WithWarnings(ListenerWarnings(&l, classes)...)
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

// listenerNames are the names of the Listeners in namespace.
func (v *listenerValidator) listenerNames(ctx context.Context, namespace string) ([]string, error) {
	return namesInNamespace(ctx, v.lookup, namespace)
}

// namesInNamespace lists the Listener names of a namespace from the cache.
func namesInNamespace(ctx context.Context, l *lookup, namespace string) ([]string, error) {
	var list v1alpha1.ListenerList
	if err := l.cache.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list Listeners of namespace %s: %w", namespace, err)
	}
	out := make([]string, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, list.Items[i].Name)
	}
	return out, nil
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
	Metadata objectMetaView `json:"metadata"`
	Spec     struct {
		podSpecView
		Template             templateView                   `json:"template"`
		VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates"`
		// JobTemplate is a CronJob's; decodeWorkload moves its pod
		// template to Template.
		JobTemplate *struct {
			Spec struct {
				Template templateView `json:"template"`
			} `json:"spec"`
		} `json:"jobTemplate"`
	} `json:"spec"`
}

// templateView is a pod template.
type templateView struct {
	Metadata objectMetaView `json:"metadata"`
	Spec     podSpecView    `json:"spec"`
}

// decodeWorkload decodes a pod or a workload; a CronJob's pod template is
// read from its job template.
func decodeWorkload(raw []byte, kind string, w *workloadView) error {
	if err := decode(raw, kind, w); err != nil {
		return err
	}
	if kind == "CronJob" && w.Spec.JobTemplate != nil {
		w.Spec.Template = w.Spec.JobTemplate.Spec.Template
	}
	return nil
}

// templatePath is where a workload's pod template is.
func templatePath(kind string) *field.Path {
	if kind == "CronJob" {
		return field.NewPath("spec", "jobTemplate", "spec", "template")
	}
	return field.NewPath("spec", "template")
}

type objectMetaView struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type podSpecView struct {
	Volumes    []corev1.Volume `json:"volumes"`
	Containers []struct {
		Name  string                 `json:"name"`
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
	if err := decodeWorkload(req.Object.Raw, req.Kind.Kind, &w); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	return v.check(ctx, req, &w)
}

// check validates the decoded pod or workload w of req.
func (v *workloadValidator) check(ctx context.Context, req admission.Request, w *workloadView) admission.Response {
	spec := w.podSpec(req.Kind.Kind)
	listenerClaims := w.listenerClaims(req.Kind.Kind)
	var classNames, listenerNames []string
	needDefault := false
	for _, c := range listenerClaims {
		class, n := claims.Named(c.annotations)
		if n != "" {
			listenerNames = append(listenerNames, n)
		}
		classNames = append(classNames, class)
		needDefault = needDefault || claims.NeedsDefaultClass(c.annotations)
	}
	optedIn := w.templateOptedIn(req.Kind.Kind)
	if optedIn {
		ann := w.Spec.Template.Metadata.Annotations
		class, n := claims.Named(ann)
		classNames = append(classNames, class)
		if n != "" {
			listenerNames = append(listenerNames, n)
		}
		needDefault = needDefault || claims.OptInNeedsDefaultClass(ann)
	}
	facts, err := v.lookup.claimFacts(ctx, req.Namespace, classNames, listenerNames)
	if err != nil {
		return lookupFailed(err)
	}
	// Templates that name no class get the default when their claims are
	// created.
	if needDefault {
		if facts.DefaultClass, err = v.lookup.defaultClass(ctx, req.Namespace); err != nil {
			return lookupFailed(err)
		}
	}
	errs := w.errors(req.Kind.Kind, facts)
	if req.Operation == admissionv1.Update && len(errs) > 0 {
		var old workloadView
		if err := decodeWorkload(req.OldObject.Raw, req.Kind.Kind, &old); err == nil {
			errs = ratchet(errs, old.errors(req.Kind.Kind, facts))
		}
	}
	if len(errs) > 0 {
		return invalid(req, errs)
	}
	var warnings []string
	for _, c := range listenerClaims {
		if m := validation.MissingListener(c.annotations, facts); m != "" {
			warnings = append(warnings, m)
		}
	}
	if req.Kind.Kind == "StatefulSet" && optedIn && w.Metadata.Labels[v1alpha1.LabelEnabled] != "true" {
		warnings = append(warnings, fmt.Sprintf("only the pod template is labelled %s=true, so each pod gets an ephemeral listener volume: a new address whenever a pod is recreated; label the StatefulSet itself to get a claim template and a stable address per replica", v1alpha1.LabelEnabled))
	}
	if optedIn {
		ann := claims.OptInAnnotations(w.Spec.Template.Metadata.Annotations, facts.DefaultClass)
		if m := validation.MissingListener(ann, facts); m != "" {
			warnings = append(warnings, m)
		}
		warnings = append(warnings, v.claimWarnings(ctx, req, ann, spec, true)...)
	}
	for _, c := range listenerClaims {
		warnings = append(warnings, v.claimWarnings(ctx, req, c.annotations, spec, c.ephemeral)...)
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

// claimWarnings warns about a pinned class on an ephemeral claim, which
// lives no longer than its pod, and about ports of a shared Listener that no
// container declares.
func (v *workloadValidator) claimWarnings(ctx context.Context, req admission.Request, annotations map[string]string, spec *podSpecView, ephemeral bool) []string {
	var w []string
	class, name := claims.Named(annotations)
	if class != "" && ephemeral {
		var lc v1alpha1.ListenerClass
		if err := v.lookup.get(ctx, types.NamespacedName{Name: class}, &lc); err == nil && lc.Spec.IsPinned() {
			w = append(w, fmt.Sprintf("ListenerClass %q pins each volume to the node its pod first ran on, which keeps an address stable only for long-lived claims, but an ephemeral volume gets a new claim (and address) with every new pod of this %s: use a StatefulSet volumeClaimTemplate, or a class that is not pinned", class, req.Kind.Kind))
		}
	}
	if name != "" {
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

// claimOf is a listener claim that a pod or workload asks for.
type claimOf struct {
	name        string // the volume's or claim template's name
	annotations map[string]string
	spec        *corev1.PersistentVolumeClaimSpec
	ephemeral   bool
	path        *field.Path
}

// podSpec is the pod spec of a pod, or of a workload's pod template.
func (w *workloadView) podSpec(kind string) *podSpecView {
	if kind == "Pod" {
		return &w.Spec.podSpecView
	}
	return &w.Spec.Template.Spec
}

// volumesPath is where podSpec's volumes are.
func volumesPath(kind string) *field.Path {
	if kind == "Pod" {
		return field.NewPath("spec", "volumes")
	}
	return templatePath(kind).Child("spec", "volumes")
}

// listenerClaims are the listener claims the object asks for: ephemeral
// volumes and claim templates, recognised by what they are (storage class,
// annotations), not by their names.
func (w *workloadView) listenerClaims(kind string) []claimOf {
	var out []claimOf
	spec := w.podSpec(kind)
	for i := range spec.Volumes {
		if e := spec.Volumes[i].Ephemeral; e != nil && e.VolumeClaimTemplate != nil && claims.Requested(e.VolumeClaimTemplate.Annotations, e.VolumeClaimTemplate.Spec.StorageClassName) {
			out = append(out, claimOf{spec.Volumes[i].Name, e.VolumeClaimTemplate.Annotations, &e.VolumeClaimTemplate.Spec, true, nil})
		}
	}
	for i := range w.Spec.VolumeClaimTemplates {
		t := &w.Spec.VolumeClaimTemplates[i]
		if claims.Requested(t.Annotations, t.Spec.StorageClassName) {
			out = append(out, claimOf{t.Name, t.Annotations, &t.Spec, false, field.NewPath("spec", "volumeClaimTemplates").Index(i)})
		}
	}
	return out
}

// templateOptedIn reports whether the workload's pod template carries the
// opt-in label without a listener volume or claim template of its own: the
// pod webhook then gives each pod an ephemeral listener volume, whose class
// must be checked now, at apply time.
func (w *workloadView) templateOptedIn(kind string) bool {
	if kind == "Pod" || w.Spec.Template.Metadata.Labels[v1alpha1.LabelEnabled] != "true" {
		return false
	}
	for _, c := range w.listenerClaims(kind) {
		if !c.ephemeral {
			return false // the StatefulSet's claim template provides it
		}
	}
	for _, v := range w.Spec.Template.Spec.Volumes {
		if v.Name == v1alpha1.VolumeName {
			return false
		}
	}
	return true
}

// errors are the problems of the object's listener volumes.
func (w *workloadView) errors(kind string, facts validation.ClaimFacts) field.ErrorList {
	errs := validation.Volumes(w.podSpec(kind).Volumes, facts, volumesPath(kind))
	for _, c := range w.listenerClaims(kind) {
		if c.path != nil {
			errs = append(errs, validation.Claim(c.annotations, c.spec, facts, c.path)...)
		}
	}
	optedIn := w.templateOptedIn(kind)
	if optedIn {
		errs = append(errs, validation.OptIn(w.Spec.Template.Metadata.Annotations, facts, templatePath(kind).Child("metadata", "annotations"))...)
	}
	// A listener volume of its own gets a Listener whose ports are the
	// containers' ports: with none, its Service cannot exist.
	var ownClaims []string
	for _, c := range w.listenerClaims(kind) {
		if claims.WillOwnListener(c.annotations, facts.DefaultClass) {
			ownClaims = append(ownClaims, c.name)
		}
	}
	if optedIn && claims.WillOwnListener(w.Spec.Template.Metadata.Annotations, facts.DefaultClass) {
		ownClaims = append(ownClaims, v1alpha1.VolumeName)
	}
	if len(ownClaims) > 0 {
		spec := w.podSpec(kind)
		var containers []validation.ContainerPorts
		for _, c := range spec.Containers {
			containers = append(containers, validation.ContainerPorts{Name: c.Name, Ports: len(c.Ports)})
		}
		p := field.NewPath("spec", "containers")
		if kind != "Pod" {
			p = templatePath(kind).Child("spec", "containers")
		}
		errs = append(errs, validation.PortsForOwnListener(ownClaims, containers, p)...)
	}
	return errs
}
