package claims

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TemplateSpec is the spec of the listener claim templates the webhooks
// inject (a StatefulSet's claim template, an opted-in pod's ephemeral
// volume).
func TemplateSpec() corev1.PersistentVolumeClaimSpec {
	sc := v1alpha1.StorageClassName
	return corev1.PersistentVolumeClaimSpec{
		StorageClassName: &sc,
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}},
	}
}

// OptInAnnotations are the claim annotations of the listener volume an
// opted-in object (StatefulSet, pod template, bare pod) with these
// annotations gets: the shared Listener or the class it names, else the
// default class.
func OptInAnnotations(annotations map[string]string, defaultClass string) map[string]string {
	class, listener := Named(annotations)
	switch {
	case listener != "":
		return map[string]string{v1alpha1.AnnotationListenerName: listener}
	case class != "":
		return map[string]string{v1alpha1.AnnotationListenerClass: class}
	}
	return map[string]string{v1alpha1.AnnotationListenerClass: defaultClass}
}

// OptInNeedsDefaultClass reports whether the listener volume of an
// opted-in object with these annotations takes the default class
// (OptInAnnotations).
func OptInNeedsDefaultClass(annotations map[string]string) bool {
	class, listener := Named(annotations)
	return class == "" && listener == ""
}

// StatefulSetTemplateAnnotations are the annotations of the claim template
// the StatefulSet webhook injects, from the claim annotations
// (OptInAnnotations): unless its claims share a named Listener, the
// template names itself (v1alpha1.AnnotationStatefulSetClaimTemplate, under
// its name v1alpha1.VolumeName), so that the per-claim Listener of each
// replica selects its pod by the StatefulSet controller's pod-name label
// and the pod needs no patch at admission.
func StatefulSetTemplateAnnotations(annotations map[string]string) map[string]string {
	if _, listener := Named(annotations); listener != "" {
		return annotations
	}
	named := make(map[string]string, len(annotations)+1)
	maps.Copy(named, annotations)
	named[v1alpha1.AnnotationStatefulSetClaimTemplate] = v1alpha1.VolumeName
	return named
}

// EphemeralListener is the Listener the generic ephemeral volume named
// volume of pod podName uses, from its claim template's annotations, as
// far as admission can tell: the shared Listener it names, else the
// per-claim Listener of its claim "<pod>-<volume>" (the claim webhook gives
// a claim that names no class the default one). "" while the pod has no
// name (generateName): the reconciler labels such pods once they exist.
func EphemeralListener(annotations map[string]string, podName, volume string) string {
	if _, listener := Named(annotations); listener != "" {
		return listener
	}
	if podName == "" {
		return ""
	}
	return names.ClaimListenerName(names.EphemeralClaimName(podName, volume))
}

// WillOwnListener reports whether a claim or claim template with these
// annotations, at admission, gets a Listener of its own once the claim
// webhook completed it (a class, named or the default one: defaultClass,
// "" if there is none), not a shared one (listener-name). Admission refuses
// the empty values Of tells apart.
func WillOwnListener(annotations map[string]string, defaultClass string) bool {
	if _, shared := annotations[v1alpha1.AnnotationListenerName]; shared {
		return false
	}
	_, hasClass := annotations[v1alpha1.AnnotationListenerClass]
	return hasClass || defaultClass != ""
}
