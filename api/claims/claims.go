package claims

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// IsListenerStorageClass reports whether storageClassName is the storage
// class of listener volumes.
func IsListenerStorageClass(storageClassName *string) bool {
	return storageClassName != nil && *storageClassName == v1alpha1.StorageClassName
}

// Requested reports whether a claim or claim template with these
// annotations and storage class asks for a listener volume: it has the
// listener storage class or either listener annotation. Admission asks
// this (the claim webhook completes the storage class of such a claim, or
// refuses it); a stored claim is a listener claim by IsListenerClaim.
func Requested(annotations map[string]string, storageClassName *string) bool {
	return IsListenerStorageClass(storageClassName) || hasListenerAnnotation(annotations)
}

// hasListenerAnnotation reports whether either listener annotation is
// present, empty or not.
func hasListenerAnnotation(annotations map[string]string) bool {
	_, hasClass := annotations[v1alpha1.AnnotationListenerClass]
	_, hasName := annotations[v1alpha1.AnnotationListenerName]
	return hasClass || hasName
}

// SetsStorageClass reports whether the claim webhook gives a claim that
// asks for a listener volume (Requested), of storage class sc, the
// listener storage class: when it names none, and when it names the
// cluster's default, which the DefaultStorageClass admission plugin fills
// in before webhooks run (a claim that asks for a listener by annotation
// meant ours). isDefault, asked only then, says whether a storage class is
// the default.
func SetsStorageClass(sc *string, isDefault func(string) (bool, error)) (bool, error) {
	switch {
	case sc == nil:
		return true, nil
	case IsListenerStorageClass(sc) || *sc == "":
		return false, nil
	}
	return isDefault(*sc)
}

// IsListenerClaim reports whether a stored claim is a listener claim: its
// storage class is the listener storage class, so its volume is this
// driver's to provision. Annotations on a claim of another storage class
// (which admission refuses) make no listener volume.
func IsListenerClaim(pvc *corev1.PersistentVolumeClaim) bool {
	return IsListenerStorageClass(pvc.Spec.StorageClassName)
}

// Use is which Listener a listener claim uses.
type Use struct {
	// Listener is the Listener's name, in the claim's namespace; "" when
	// the claim uses none (Problem says why).
	Listener string
	// Own says that Listener is the claim's own: the reconciler makes it,
	// named after the claim and controlled by it (listener-class). A
	// shared Listener (listener-name) is not the claim's.
	Own bool
	// Class is the ListenerClass of the claim's own Listener; "" for a
	// shared Listener, whose spec.className decides.
	Class string
	// Problem says why a listener claim uses no Listener and how to fix
	// it, as the end of a sentence that begins with the claim ("" when it
	// uses one).
	Problem string
}

// Of is which Listener the claim named claimName, with these annotations,
// uses: the shared Listener a non-empty listener-name names (it wins when
// both annotations are set), else the claim's own Listener of the class a
// non-empty listener-class names. A claim with neither, or with an empty
// one only, uses none.
func Of(claimName string, annotations map[string]string) Use {
	if name := annotations[v1alpha1.AnnotationListenerName]; name != "" {
		return Use{Listener: name}
	}
	class, hasClass := annotations[v1alpha1.AnnotationListenerClass]
	switch {
	case class != "":
		return Use{Listener: names.ClaimListenerName(claimName), Own: true, Class: class}
	case hasClass:
		return Use{Problem: fmt.Sprintf(
			"has an empty %s annotation (admission refuses it; the claim got in while the webhooks were down), so it has no Listener: "+
				"name a ListenerClass in it (kubectl annotate --overwrite pvc %s %s=<class>) or share a Listener with %s",
			v1alpha1.AnnotationListenerClass, claimName, v1alpha1.AnnotationListenerClass, v1alpha1.AnnotationListenerName)}
	}
	return Use{Problem: fmt.Sprintf(
		"has neither the %s nor the %s annotation: say which ListenerClass or Listener the volume is for",
		v1alpha1.AnnotationListenerClass, v1alpha1.AnnotationListenerName)}
}

// OfClaim is which Listener a stored claim uses, and whether it is a
// listener claim at all (IsListenerClaim); the Use of a claim that is not
// is empty.
func OfClaim(pvc *corev1.PersistentVolumeClaim) (Use, bool) {
	if !IsListenerClaim(pvc) {
		return Use{}, false
	}
	return Of(pvc.Name, pvc.Annotations), true
}

// IsVolumeOf reports whether pv is the listener volume of the claim pvc:
// a volume of this driver bound to this claim (not to an earlier claim of
// its name).
func IsVolumeOf(pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) bool {
	return pv != nil && pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID == pvc.UID &&
		pv.Spec.CSI != nil && pv.Spec.CSI.Driver == v1alpha1.DriverName
}

// Bound is which Listener the volume of a listener claim publishes, and
// so the one its pods are labelled for: once the claim is bound to pv, the
// one the volume was provisioned for, as the claim reconciler recorded it
// on the volume (v1alpha1.LabelVolumeListener), whatever the claim's
// annotations say since (admission refuses changing them once bound; they
// can change while the webhooks are down: it is then the claim's own
// Listener if it is named after the claim, and its class is not known);
// until then, and while nothing is recorded, the one the claim uses (use,
// from Of). pv may be nil.
func Bound(pvc *corev1.PersistentVolumeClaim, use Use, pv *corev1.PersistentVolume) Use {
	if !IsVolumeOf(pvc, pv) {
		return use
	}
	bound := pv.Labels[v1alpha1.LabelVolumeListener]
	if bound == "" || bound == use.Listener {
		return use
	}
	return Use{Listener: bound, Own: bound == names.ClaimListenerName(pvc.Name)}
}

// Named are the ListenerClass and the shared Listener the annotations name
// (each "" when absent or empty), as written: for the lookups and messages
// of admission, which checks both even when one would win.
func Named(annotations map[string]string) (class, listener string) {
	return annotations[v1alpha1.AnnotationListenerClass], annotations[v1alpha1.AnnotationListenerName]
}

// NeedsDefaultClass reports whether a claim (or claim template) with these
// annotations names neither a class nor a Listener, so that the claim
// webhook gives it the default ListenerClass when it is created.
func NeedsDefaultClass(annotations map[string]string) bool {
	return !hasListenerAnnotation(annotations)
}

// StatefulSetPod is the StatefulSet pod whose per-claim Listener selects
// it by name (v1alpha1.AnnotationStatefulSetPod): the claim was made from a
// StatefulSet claim template annotated with
// v1alpha1.AnnotationStatefulSetClaimTemplate, it names no shared Listener,
// and its name is "<template>-<pod>". "" means the Listener selects its
// pods by the per-Listener label (names.PodSelectorLabel).
func StatefulSetPod(claimName string, annotations map[string]string) string {
	tmpl := annotations[v1alpha1.AnnotationStatefulSetClaimTemplate]
	if tmpl == "" || annotations[v1alpha1.AnnotationListenerName] != "" {
		return ""
	}
	pod, ok := strings.CutPrefix(claimName, tmpl+"-")
	if !ok || len(validation.IsValidLabelValue(pod)) > 0 {
		return ""
	}
	return pod
}
