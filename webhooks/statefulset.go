package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// +kubebuilder:webhook:path=/mutate-apps-v1-statefulset,mutating=true,failurePolicy=fail,sideEffects=None,groups=apps,resources=statefulsets,verbs=create;update,versions=v1,name=statefulsets.mutate.listeners.stackable.tech,admissionReviewVersions=v1,timeoutSeconds=3,serviceName=listener-operator-webhook,serviceNamespace=listener-operator

// containerView is the part of a container the mutators read.
type containerView struct {
	Name         string `json:"name"`
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
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Template             podTemplateView `json:"template"`
		VolumeClaimTemplates []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"volumeClaimTemplates"`
	} `json:"spec"`
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
	hasTemplate := false
	for _, t := range s.Spec.VolumeClaimTemplates {
		hasTemplate = hasTemplate || t.Metadata.Name == v1alpha1.VolumeName
	}
	hasVolume := false
	for _, v := range s.Spec.Template.Spec.Volumes {
		hasVolume = hasVolume || v.Name == v1alpha1.VolumeName
	}
	if !hasTemplate && !hasVolume && req.Operation == admissionv1.Create {
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
		hasTemplate = true
	}
	if hasTemplate || hasVolume {
		t := &s.Spec.Template
		// Pods of the StatefulSet carry the opt-in label, so that the pod
		// webhook mounts the volume in containers other webhooks add.
		if t.Metadata.Labels[v1alpha1.LabelEnabled] != "true" {
			exists := t.Metadata.Labels != nil
			p.setMapEntry("/spec/template/metadata/labels", &exists, v1alpha1.LabelEnabled, "true")
		}
		mountEverywhere(&p, "/spec/template/spec", t, v1alpha1.VolumeName)
	}
	if len(p) == 0 {
		return admission.Allowed("")
	}
	return admission.Patched("", p...)
}

// claimAnnotations picks the annotation of the listener claims of a
// workload (or bare pod) from its own annotations at path: the listener-name
// or listener-class it names, else the default class. errs says that there
// is no class to use.
func claimAnnotations(ctx context.Context, l *lookup, namespace string, annotations map[string]string, path *field.Path) (ann map[string]string, errs field.ErrorList, err error) {
	if name := annotations[v1alpha1.AnnotationListenerName]; name != "" {
		return map[string]string{v1alpha1.AnnotationListenerName: name}, nil, nil
	}
	if class := annotations[v1alpha1.AnnotationListenerClass]; class != "" {
		return map[string]string{v1alpha1.AnnotationListenerClass: class}, nil, nil
	}
	class, err := l.defaultClass(ctx, namespace)
	if err != nil {
		return nil, nil, err
	}
	if class == "" {
		classes, err := l.classNames(ctx)
		if err != nil {
			return nil, nil, err
		}
		return nil, field.ErrorList{field.Required(path.Key(v1alpha1.AnnotationListenerClass),
			fmt.Sprintf("no default ListenerClass is set, so name one (available: %s), or name a shared Listener with %s", classes, v1alpha1.AnnotationListenerName))}, nil
	}
	return map[string]string{v1alpha1.AnnotationListenerClass: class}, nil, nil
}

// claimTemplateValue is a claim template as it goes into a patch: without
// the empty status a PersistentVolumeClaim would carry.
type claimTemplateValue struct {
	Metadata metav1.ObjectMeta                `json:"metadata"`
	Spec     corev1.PersistentVolumeClaimSpec `json:"spec"`
}

// claimTemplate is the claim template of listener volumes.
func claimTemplate(annotations map[string]string) claimTemplateValue {
	return claimTemplateValue{
		Metadata: metav1.ObjectMeta{Name: v1alpha1.VolumeName, Annotations: annotations},
		Spec:     claimSpec(),
	}
}

func claimSpec() corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{
		StorageClassName: ptr(v1alpha1.StorageClassName),
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}},
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
