package webhooks

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
)

// +kubebuilder:webhook:path=/mutate-apps-v1-statefulset,mutating=true,failurePolicy=fail,sideEffects=None,groups=apps,resources=statefulsets,verbs=create;update,versions=v1,name=statefulsets.mutate.listeners.stackable.tech,admissionReviewVersions=v1,timeoutSeconds=3,serviceName=listener-operator-webhook,serviceNamespace=listener-operator

// statefulSetView is what the StatefulSet handler reads of the admitted
// StatefulSet; it is decoded once.
type statefulSetView struct {
	Metadata objectMetaView `json:"metadata"`
	Spec     struct {
		// Template and its metadata are pointers: encoders may omit them
		// when empty, and a patch must add to maps that exist.
		Template *struct {
			Metadata *objectMetaView `json:"metadata"`
			Spec     podSpecView     `json:"spec"`
		} `json:"template"`
		VolumeClaimTemplates []claimTemplateView `json:"volumeClaimTemplates"`
	} `json:"spec"`
}

// templateMeta is the pod template's metadata (zero when absent).
func (s *statefulSetView) templateMeta() objectMetaView {
	if s.Spec.Template == nil || s.Spec.Template.Metadata == nil {
		return objectMetaView{}
	}
	return *s.Spec.Template.Metadata
}

// templateSpec is the pod template's spec (nil when absent).
func (s *statefulSetView) templateSpec() *podSpecView {
	if s.Spec.Template == nil {
		return nil
	}
	return &s.Spec.Template.Spec
}

// oldStatefulSetView is what the handler reads of the stored StatefulSet
// on UPDATE; it is decoded at most once.
type oldStatefulSetView struct {
	Metadata struct {
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Template struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		} `json:"template"`
		VolumeClaimTemplates []json.RawMessage `json:"volumeClaimTemplates"`
	} `json:"spec"`
}

// claimTemplateView is what the handler reads of a claim template: what
// tells a listener claim template.
type claimTemplateView struct {
	Metadata struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		StorageClassName *string `json:"storageClassName"`
	} `json:"spec"`
}

func (t *claimTemplateView) isListener() bool {
	return claims.Requested(t.Metadata.Annotations, t.Spec.StorageClassName)
}

// statefulSetMutator gives an opted-in StatefulSet (the webhook's
// objectSelector only sends those) a listener claim template and mounts it
// in every container. Claim templates are immutable, so on UPDATE only the
// mounts and the opt-in label of the pod template are kept.
type statefulSetMutator struct{ lookup *lookup }

func (m *statefulSetMutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	var s statefulSetView
	if err := decode(req.Object.Raw, "StatefulSet", &s); err != nil {
		return malformed(err)
	}
	volume, foreign := s.listenerVolume()
	var old *oldStatefulSetView
	if req.Operation == admissionv1.Update && (volume == "" || s.templateMeta().Labels[v1alpha1.LabelListenerVolume] != "true") {
		old = &oldStatefulSetView{}
		if err := decode(req.OldObject.Raw, "StatefulSet", old); err != nil {
			return malformed(err)
		}
	}
	var p patch
	switch {
	case volume != "":
	case req.Operation == admissionv1.Update:
		resp, done := m.restore(req, &s, old, &p)
		if done {
			return resp
		}
	case req.Operation == admissionv1.Create:
		resp, done := m.inject(ctx, req, &s, foreign, &p)
		if done {
			return resp
		}
	}
	if len(p) > 0 {
		volume = v1alpha1.VolumeName
	}
	if volume != "" {
		completeTemplate(&p, &s, templateLabels(req.Operation, s.templateMeta().Labels, old), volume)
	}
	return respond(p, nil)
}

// listenerVolume is the StatefulSet's listener volume, recognised by what
// it is (a claim template of the listener storage class or with a listener
// annotation, or an ephemeral listener volume of the pod's own), not by
// its name; "" for none. foreign is a pod volume named like the listener volume that is not
// one (-1: none).
//
// A claim template of the user's own is left as it is: the list is
// atomic, so a server-side apply of the same manifest would take back
// anything added to it, and the API server refuses any change of claim
// templates. (Its claims select their pod by name when the user's template
// carries v1alpha1.AnnotationStatefulSetClaimTemplate itself.)
func (s *statefulSetView) listenerVolume() (volume string, foreign int) {
	for _, t := range s.Spec.VolumeClaimTemplates {
		if volume == "" && t.isListener() {
			volume = t.Metadata.Name
		}
	}
	foreign = -1
	if spec := s.templateSpec(); spec != nil {
		for i := range spec.Volumes {
			v := &spec.Volumes[i]
			t := v.ephemeralClaim()
			isListener := t != nil && claims.Requested(t.Annotations, t.Spec.StorageClassName)
			// A volume of a Listener the pods share (a bootstrap, mounted
			// elsewhere) is not the replicas' own: they get the claim
			// template, unless the user gave the shared one the listener
			// volume's name.
			shared := false
			if isListener {
				_, listener := claims.Named(t.Annotations)
				shared = listener != ""
			}
			switch {
			case isListener && shared && v.Name != v1alpha1.VolumeName:
			case isListener && volume == "":
				volume = v.Name
			case !isListener && v.Name == v1alpha1.VolumeName:
				foreign = i
			}
		}
	}
	return volume, foreign
}

// restore handles the UPDATE of a StatefulSet without a listener volume.
// Claim templates are immutable: labelling an existing StatefulSet would
// silently do nothing, so it is refused with the way to do it, unless the
// old object was labelled already (it got in while the webhooks were down;
// other updates must not be blocked by it). A server-side apply of the
// manifest the StatefulSet was created from takes back the claim template
// the webhook injected (the list is atomic and the applier owns it), and
// the API server would refuse the change of claim templates: the template
// comes back, as it is, where it was.
func (m *statefulSetMutator) restore(req admission.Request, s *statefulSetView, old *oldStatefulSetView, p *patch) (admission.Response, bool) {
	if s.Metadata.Labels[v1alpha1.LabelEnabled] == "true" && old.Metadata.Labels[v1alpha1.LabelEnabled] != "true" {
		name := s.Metadata.Name
		if name == "" {
			name = req.Name
		}
		return invalid(req, field.ErrorList{validation.OptInExisting(name, field.NewPath("metadata", "labels"))}), true
	}
	injected, err := injectedTemplate(old.Spec.VolumeClaimTemplates)
	if err != nil {
		return malformed(err), true
	}
	if injected != nil {
		n := length(s.Spec.VolumeClaimTemplates)
		p.appendTo("/spec/volumeClaimTemplates", &n, injected)
	}
	return admission.Response{}, false
}

// inject gives a new StatefulSet without a listener volume the listener
// claim template, of the class or Listener its annotations name.
func (m *statefulSetMutator) inject(ctx context.Context, req admission.Request, s *statefulSetView, foreign int, p *patch) (admission.Response, bool) {
	if foreign >= 0 {
		return invalid(req, field.ErrorList{validation.ForeignListenerVolume(field.NewPath("spec", "template", "spec", "volumes").Index(foreign))}), true
	}
	ann, errs, err := optInClaimAnnotations(ctx, m.lookup, req.Namespace, s.Metadata.Annotations, field.NewPath("metadata", "annotations"))
	if err != nil {
		return lookupFailed(err), true
	}
	if errs != nil {
		return invalid(req, errs), true
	}
	n := length(s.Spec.VolumeClaimTemplates)
	p.appendTo("/spec/volumeClaimTemplates", &n, claimTemplate(ann))
	return admission.Response{}, false
}

// completeTemplate adds the missing labels to the pod template and mounts
// volume in its containers.
func completeTemplate(p *patch, s *statefulSetView, missing map[string]string, volume string) {
	meta := s.templateMeta()
	if len(missing) > 0 {
		exists := meta.Labels != nil
		switch {
		case !exists && s.Spec.Template == nil:
			p.add("/spec/template", map[string]any{"metadata": map[string]any{"labels": missing}})
		case !exists && s.Spec.Template.Metadata == nil:
			p.add("/spec/template/metadata", map[string]any{"labels": missing})
		default:
			for _, k := range slices.Sorted(maps.Keys(missing)) {
				p.setMapEntry("/spec/template/metadata/labels", &exists, k, missing[k])
			}
		}
	}
	if spec := s.templateSpec(); spec != nil {
		mountEverywhere(p, "/spec/template/spec", meta.Annotations, spec, volume)
	}
}

// templateLabels are the labels the pod template of an opted-in
// StatefulSet lacks. Its pods carry the opt-in label, so that the pod
// webhook mounts the volume in containers other webhooks add, and the
// listener-volume label, so that the controller caches them without the pod
// webhook having to patch it in. The second is added when the StatefulSet
// is created, and kept on updates of one that has it (old, the stored
// StatefulSet): adding it to the template of an existing StatefulSet would
// restart all of its pods (the pod webhook labels them instead).
func templateLabels(op admissionv1.Operation, labels map[string]string, old *oldStatefulSetView) map[string]string {
	missing := map[string]string{}
	if labels[v1alpha1.LabelEnabled] != "true" {
		missing[v1alpha1.LabelEnabled] = "true"
	}
	if labels[v1alpha1.LabelListenerVolume] == "true" {
		return missing
	}
	want := op == admissionv1.Create
	if op == admissionv1.Update && old != nil {
		want = old.Spec.Template.Metadata.Labels[v1alpha1.LabelListenerVolume] == "true"
	}
	if want {
		missing[v1alpha1.LabelListenerVolume] = "true"
	}
	return missing
}

// claimTemplateValue is a claim template as it goes into a patch: without
// the empty status a PersistentVolumeClaim would carry.
type claimTemplateValue struct {
	Metadata metav1.ObjectMeta                `json:"metadata"`
	Spec     corev1.PersistentVolumeClaimSpec `json:"spec"`
}

// injectedTemplate is the listener claim template the webhook injected, as
// stored, among a StatefulSet's claim templates ts (the last one, named
// v1alpha1.VolumeName, a listener claim template), or nil.
func injectedTemplate(ts []json.RawMessage) (json.RawMessage, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	last := ts[len(ts)-1]
	var t claimTemplateView
	if err := decode(last, "StatefulSet claim template", &t); err != nil {
		return nil, err
	}
	if t.Metadata.Name != v1alpha1.VolumeName || !t.isListener() {
		return nil, nil
	}
	return last, nil
}

// claimTemplate is the claim template of listener volumes that the webhook
// injects, with the claim annotations
// (claims.StatefulSetTemplateAnnotations).
func claimTemplate(annotations map[string]string) claimTemplateValue {
	return claimTemplateValue{
		Metadata: metav1.ObjectMeta{Name: v1alpha1.VolumeName, Annotations: claims.StatefulSetTemplateAnnotations(annotations)},
		Spec:     claims.TemplateSpec(),
	}
}
