package claims

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// The mark (v1alpha1.LabelListenerVolume: "true") on listener claims and
// listener volumes is what the operator's caches select them by: the
// cluster's other claims and volumes are never sent to it. A claim's
// storage class is immutable, so the claim webhook marks a listener claim
// when it is created, and again on any update that
// takes it off; a volume's driver and claim are fixed once it
// is bound, so the claim reconciler marks it then. What is admitted or
// bound while the operator is away is marked by the leader's scans.

// Marked reports whether labels carry the mark.
func Marked(labels map[string]string) bool {
	return labels[v1alpha1.LabelListenerVolume] == "true"
}

// ClaimNeedsMark reports whether a listener claim lacks the mark: a claim
// of the listener storage class (storageClassName, as admitted) without it.
func ClaimNeedsMark(labels map[string]string, storageClassName *string) bool {
	return IsListenerStorageClass(storageClassName) && !Marked(labels)
}

// VolumeNeedsMark reports whether pv, the volume pvc is bound to, is a
// listener volume that lacks the mark.
func VolumeNeedsMark(pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) bool {
	return IsListenerClaim(pvc) && IsVolumeOf(pvc, pv) && !Marked(pv.Labels)
}

// ListenerLabels are the labels a claim's own Listener takes from the
// claim (with these labels): all of them but the mark, which is the
// claim's.
func ListenerLabels(claimLabels map[string]string) map[string]string {
	var out map[string]string
	for k, v := range claimLabels {
		if k == v1alpha1.LabelListenerVolume {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(claimLabels))
		}
		out[k] = v
	}
	return out
}
