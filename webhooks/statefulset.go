package webhooks

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"

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

// containerView is the part of a container the mutators read.
type containerView struct {
	Name string `json:"name"`
	// Ports are only counted (a per-claim Listener needs some).
	Ports        []struct{} `json:"ports"`
	VolumeMounts []struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
	} `json:"volumeMounts"`
}

// podTemplateView is the part of a pod (or pod template) that decides where
// the listener volume is mounted.
type podTemplateView struct {
	Metadata struct {
		Name         string            `json:"name"`
		GenerateName string            `json:"generateName"`
		Labels       map[string]string `json:"labels"`
		Annotations  map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Volumes        []volumeView    `json:"volumes"`
		Containers     []containerView `json:"containers"`
		InitContainers []containerView `json:"initContainers"`
		Affinity       *affinityView   `json:"affinity"`
	} `json:"spec"`
}

type volumeView struct {
	Name                  string `json:"name"`
	PersistentVolumeClaim *struct {
		ClaimName string `json:"claimName"`
	} `json:"persistentVolumeClaim"`
	Ephemeral *struct {
		VolumeClaimTemplate *struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Spec struct {
				StorageClassName *string `json:"storageClassName"`
			} `json:"spec"`
		} `json:"volumeClaimTemplate"`
	} `json:"ephemeral"`
	CSI *struct {
		Driver string `json:"driver"`
	} `json:"csi"`
}

type affinityView struct {
	NodeAffinity *struct {
		Required *struct {
			NodeSelectorTerms []corev1.NodeSelectorTerm `json:"nodeSelectorTerms"`
		} `json:"requiredDuringSchedulingIgnoredDuringExecution"`
	} `json:"nodeAffinity"`
}

type statefulSetView struct {
	Metadata struct {
		Name        string            `json:"name"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Template             podTemplateView     `json:"template"`
		VolumeClaimTemplates []claimTemplateView `json:"volumeClaimTemplates"`
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
		return admission.Errored(http.StatusBadRequest, err)
	}
	var p patch
	// The listener volume, recognised by what it is (a claim template of
	// the listener storage class or with a listener annotation, or an
	// ephemeral listener volume), not by its name.
	volume := ""
	// A claim template of the user's own is left as it is: the list is
	// atomic, so a server-side apply of the same manifest would take back
	// anything added to it, and the API server refuses any change of claim
	// templates. (Its claims select their pod by name when the user's
	// template carries v1alpha1.AnnotationStatefulSetClaimTemplate itself.)
	for _, t := range s.Spec.VolumeClaimTemplates {
		if volume == "" && t.isListener() {
			volume = t.Metadata.Name
		}
	}
	foreign := -1 // a pod volume named like the listener volume that is not one
	for i, v := range s.Spec.Template.Spec.Volumes {
		isListener := v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil &&
			claims.Requested(v.Ephemeral.VolumeClaimTemplate.Metadata.Annotations, v.Ephemeral.VolumeClaimTemplate.Spec.StorageClassName)
		switch {
		case isListener && volume == "":
			volume = v.Name
		case !isListener && v.Name == v1alpha1.VolumeName:
			foreign = i
		}
	}
	if volume == "" && req.Operation == admissionv1.Update {
		var old struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				VolumeClaimTemplates []json.RawMessage `json:"volumeClaimTemplates"`
			} `json:"spec"`
		}
		if err := decode(req.OldObject.Raw, "StatefulSet", &old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		// Claim templates are immutable: labelling an existing StatefulSet
		// would silently do nothing. Refused with the way to do it, unless
		// the old object was labelled already (it got in while the
		// webhooks were down; other updates must not be blocked by it).
		if s.Metadata.Labels[v1alpha1.LabelEnabled] == "true" && old.Metadata.Labels[v1alpha1.LabelEnabled] != "true" {
			name := s.Metadata.Name
			if name == "" {
				name = req.Name
			}
			return invalid(req, field.ErrorList{validation.OptInExisting(name, field.NewPath("metadata", "labels"))})
		}
		injected, err := injectedTemplate(old.Spec.VolumeClaimTemplates)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if injected != nil {
			// A server-side apply of the manifest the StatefulSet was
			// created from takes back the claim template the webhook
			// injected (the list is atomic and the applier owns it), and
			// the API server would refuse the change of claim templates:
			// the template comes back, as it is, where it was.
			n := len(s.Spec.VolumeClaimTemplates)
			if s.Spec.VolumeClaimTemplates == nil {
				n = -1
			}
			p.appendTo("/spec/volumeClaimTemplates", &n, injected)
			volume = v1alpha1.VolumeName
		}
	}
	if volume == "" && req.Operation == admissionv1.Create {
		if foreign >= 0 {
			return invalid(req, field.ErrorList{validation.ForeignListenerVolume(field.NewPath("spec", "template", "spec", "volumes").Index(foreign))})
		}
		ann, errs, err := claimAnnotations(ctx, m.lookup, req.Namespace, s.Metadata.Annotations, field.NewPath("metadata", "annotations"))
		if err != nil {
			return lookupFailed(err)
		}
		if errs != nil {
			return invalid(req, errs)
		}
		n := len(s.Spec.VolumeClaimTemplates)
		if s.Spec.VolumeClaimTemplates == nil {
			n = -1
		}
		p.appendTo("/spec/volumeClaimTemplates", &n, claimTemplate(ann))
		volume = v1alpha1.VolumeName
	}
	if volume != "" {
		t := &s.Spec.Template
		missing, err := templateLabels(req, t.Metadata.Labels)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if len(missing) > 0 {
			exists := t.Metadata.Labels != nil
			hasTemplate, hasMetadata := templateShape(req.Object.Raw)
			switch {
			case !exists && !hasTemplate:
				p.add("/spec/template", map[string]any{"metadata": map[string]any{"labels": missing}})
			case !exists && !hasMetadata:
				p.add("/spec/template/metadata", map[string]any{"labels": missing})
			default:
				for _, k := range slices.Sorted(maps.Keys(missing)) {
					p.setMapEntry("/spec/template/metadata/labels", &exists, k, missing[k])
				}
			}
		}
		mountEverywhere(&p, "/spec/template/spec", t, volume)
	}
	if len(p) == 0 {
		return admission.Allowed("")
	}
	return admission.Patched("", p...)
}

// templateLabels are the labels the pod template of an opted-in
// StatefulSet lacks. Its pods carry the opt-in label, so that the pod
// webhook mounts the volume in containers other webhooks add, and the
// listener-volume label, so that the controller caches them without the pod
// webhook having to patch it in. The second is added when the StatefulSet
// is created, and kept on updates of one that has it: adding it to the
// template of an existing StatefulSet would restart all of its pods (the
// pod webhook labels them instead).
func templateLabels(req admission.Request, labels map[string]string) (map[string]string, error) {
	missing := map[string]string{}
	if labels[v1alpha1.LabelEnabled] != "true" {
		missing[v1alpha1.LabelEnabled] = "true"
	}
	if labels[v1alpha1.LabelListenerVolume] == "true" {
		return missing, nil
	}
	want := req.Operation == admissionv1.Create
	if req.Operation == admissionv1.Update {
		var old statefulSetView
		if err := decode(req.OldObject.Raw, "StatefulSet", &old); err != nil {
			return nil, err
		}
		want = old.Spec.Template.Metadata.Labels[v1alpha1.LabelListenerVolume] == "true"
	}
	if want {
		missing[v1alpha1.LabelListenerVolume] = "true"
	}
	return missing, nil
}

// claimAnnotations picks the annotation of the listener claims of a
// workload (or bare pod) from its own annotations at path: the listener-name
// or listener-class it names, else the default class. errs says that there
// is no class to use.
func claimAnnotations(ctx context.Context, l *lookup, namespace string, annotations map[string]string, path *field.Path) (ann map[string]string, errs field.ErrorList, err error) {
	var want []string
	if c, _ := claims.Named(annotations); c != "" {
		want = append(want, c)
	}
	facts := validation.ClaimFacts{Namespace: namespace}
	if facts.Classes, err = l.classNames(ctx, want...); err != nil {
		return nil, nil, err
	}
	if claims.OptInNeedsDefaultClass(annotations) {
		if facts.DefaultClass, err = l.defaultClass(ctx, namespace); err != nil {
			return nil, nil, err
		}
	}
	if errs := validation.OptIn(annotations, facts, path); len(errs) > 0 {
		return nil, errs, nil
	}
	return claims.OptInAnnotations(annotations, facts.DefaultClass), nil, nil
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

// mountEverywhere mounts volume read-only at /stackable/listener in every
// container of the pod (template) at path, and in the init containers that
// the pod's v1alpha1.AnnotationMountInitContainers names. Containers that already
// mount something at that path, or mount the volume elsewhere, are left
// alone.
func mountEverywhere(p *patch, path string, t *podTemplateView, volume string) {
	mount := corev1.VolumeMount{Name: volume, MountPath: v1alpha1.MountPath, ReadOnly: true}
	for i := range t.Spec.Containers {
		mountIn(p, path+"/containers", i, &t.Spec.Containers[i], mount)
	}
	want := t.Metadata.Annotations[v1alpha1.AnnotationMountInitContainers]
	if want == "" {
		return
	}
	for i := range t.Spec.InitContainers {
		c := &t.Spec.InitContainers[i]
		if want == "*" || containsName(want, c.Name) {
			mountIn(p, path+"/initContainers", i, c, mount)
		}
	}
}

func mountIn(p *patch, path string, i int, c *containerView, mount corev1.VolumeMount) {
	for _, m := range c.VolumeMounts {
		if m.MountPath == mount.MountPath || m.Name == mount.Name {
			return
		}
	}
	n := len(c.VolumeMounts)
	if c.VolumeMounts == nil {
		n = -1
	}
	p.appendTo(index(path, i, "/volumeMounts"), &n, mount)
}

// containsName reports whether the comma-separated list has name.
func containsName(list, name string) bool {
	for item := range strings.SplitSeq(list, ",") {
		if strings.TrimSpace(item) == name {
			return true
		}
	}
	return false
}

// templateShape reports whether the workload raw has spec.template and
// spec.template.metadata (which encoders may omit when empty), so that a
// patch adds to maps that exist.
func templateShape(raw []byte) (template, metadata bool) {
	var v struct {
		Spec struct {
			Template *struct {
				Metadata *struct{} `json:"metadata"`
			} `json:"template"`
		} `json:"spec"`
	}
	if viewDecoder.Unmarshal(raw, &v) != nil || v.Spec.Template == nil {
		return false, false
	}
	return true, v.Spec.Template.Metadata != nil
}
