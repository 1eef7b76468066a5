package webhooks

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
)

// +kubebuilder:webhook:path=/validate-apps-v1-workload,mutating=false,failurePolicy=fail,sideEffects=None,groups=apps;batch,resources=deployments;statefulsets;daemonsets;replicasets;jobs;cronjobs,verbs=create;update,versions=v1,name=workloads.validate.listeners.stackable.tech,admissionReviewVersions=v1,timeoutSeconds=3,serviceName=listener-operator-webhook,serviceNamespace=listener-operator

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

// workloadValidator checks the listener volumes of pods and of the pod
// templates and claim templates of workloads, and warns about pinned classes
// where a new volume comes with every pod, and about Listener ports that no
// container exposes.
type workloadValidator struct{ lookup *lookup }

func (v *workloadValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	var w workloadView
	if err := decodeWorkload(req.Object.Raw, req.Kind.Kind, &w); err != nil {
		return malformed(err)
	}
	return v.check(ctx, req, &w)
}

// check validates the decoded pod or workload w of req.
func (v *workloadValidator) check(ctx context.Context, req admission.Request, w *workloadView) admission.Response {
	kind := req.Kind.Kind
	listenerClaims := w.listenerClaims(kind)
	optedIn := w.templateOptedIn(kind)
	facts, err := v.facts(ctx, req.Namespace, listenerClaims, optedIn, w.Spec.Template.Metadata.Annotations)
	if err != nil {
		return lookupFailed(err)
	}
	errs := w.errors(kind, facts)
	errs = append(errs, v.gatewayPortErrors(ctx, w, kind, facts)...) // gatewayports.go
	if req.Operation == admissionv1.Update && len(errs) > 0 {
		var old workloadView
		if err := decodeWorkload(req.OldObject.Raw, kind, &old); err == nil {
			errs = ratchet(errs, append(old.errors(kind, facts), v.gatewayPortErrors(ctx, &old, kind, facts)...))
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
	if kind == "StatefulSet" && optedIn && w.Metadata.Labels[v1alpha1.LabelEnabled] != "true" {
		warnings = append(warnings, fmt.Sprintf("only the pod template is labelled %s=true, so each pod gets an ephemeral listener volume: a new address whenever a pod is recreated; label the StatefulSet itself to get a claim template and a stable address per replica", v1alpha1.LabelEnabled))
	}
	spec := w.podSpec(kind)
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

// facts gathers what validation needs of the classes and Listeners that
// the listener claims of a pod or workload in namespace name, and of its
// opted-in pod template (with annotations), if optedIn; and the default
// class when one of them names none.
func (v *workloadValidator) facts(ctx context.Context, namespace string, listenerClaims []claimOf, optedIn bool, annotations map[string]string) (validation.ClaimFacts, error) {
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
	if optedIn {
		class, n := claims.Named(annotations)
		classNames = append(classNames, class)
		if n != "" {
			listenerNames = append(listenerNames, n)
		}
		needDefault = needDefault || claims.OptInNeedsDefaultClass(annotations)
	}
	facts, err := v.lookup.claimFacts(ctx, namespace, classNames, listenerNames)
	if err != nil {
		return facts, err
	}
	// Templates that name no class get the default when their claims are
	// created.
	if needDefault {
		if facts.DefaultClass, err = v.lookup.defaultClass(ctx, namespace); err != nil {
			return facts, err
		}
	}
	return facts, nil
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
	errs := validation.Volumes(w.podSpec(kind).volumes(), facts, volumesPath(kind))
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
		p := field.NewPath("spec", "containers")
		if kind != "Pod" {
			p = templatePath(kind).Child("spec", "containers")
		}
		errs = append(errs, validation.PortsForOwnListener(ownClaims, containerPorts(w.podSpec(kind).Containers), p)...)
	}
	return errs
}
