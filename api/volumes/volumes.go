package volumes

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Keys of the volume context (a PersistentVolume's
// spec.csi.volumeAttributes) that NodePublishVolume reads, so that
// publishing needs no claim or volume lookup.
const (
	ContextClaimName      = "listeners.stackable.tech/claim-name"
	ContextClaimNamespace = "listeners.stackable.tech/claim-namespace"
	ContextListenerName   = "listeners.stackable.tech/listener"
	// ContextClaimUID is the UID of the claim the volume was made for: a
	// claim deleted and made again under the same name is another claim,
	// and must not publish the first one's per-claim Listener.
	ContextClaimUID = "listeners.stackable.tech/claim-uid"
	// ContextPerClaim is "true" when the volume's Listener is the claim's
	// own (listener-class annotation), which the claim must control.
	ContextPerClaim = "listeners.stackable.tech/per-claim-listener"
)

// Annotations of the volume controllers (Kubernetes' and csi-provisioner)
// that the provisioner reads or writes.
const (
	// AnnotationProvisionedBy names the provisioner of a volume; the
	// csi-provisioner of this driver deletes released volumes that carry
	// it (reclaim policy Delete).
	AnnotationProvisionedBy = "pv.kubernetes.io/provisioned-by"
	// AnnotationSelectedNode is the node the scheduler picked for the
	// first pod of a claim whose storage class binds on first consumer.
	AnnotationSelectedNode = "volume.kubernetes.io/selected-node"
)

// Name is the name of the volume of the claim with this UID, and its
// volume handle: csi-provisioner's own naming (prefix "pvc", the whole
// UID), so that it and the operator, both provisioning a claim, make one
// volume, not two.
func Name(claimUID types.UID) string {
	return "pvc-" + string(claimUID)
}

// Context is the volume context of the volume of claim, which uses use
// (claims.Of).
func Context(claim *corev1.PersistentVolumeClaim, use claims.Use) map[string]string {
	return map[string]string{
		ContextClaimNamespace: claim.Namespace,
		ContextClaimName:      claim.Name,
		ContextListenerName:   use.Listener,
		ContextClaimUID:       string(claim.UID),
		ContextPerClaim:       strconv.FormatBool(use.Own),
	}
}

// Topology is the CSI topology segment that pins a volume to node.
func Topology(node string) map[string]string {
	return map[string]string{v1alpha1.TopologyKeyHostname: node}
}

// ClassName is the ListenerClass the volume of a claim that uses use
// (claims.Of) is made for: the class the claim names for its own
// Listener, or the spec.className of the shared Listener it names
// (listener, read by the caller; not read for an own Listener). "" when
// that Listener names none.
func ClassName(use claims.Use, listener *v1alpha1.Listener) string {
	if use.Own {
		return use.Class
	}
	if listener == nil || listener.Spec.ClassName == nil {
		return ""
	}
	return *listener.Spec.ClassName
}

// Request is what the operator's provisioner knows when it makes the
// volume of a claim.
type Request struct {
	// Claim is the claim as read from the API server (its spec whole).
	Claim *corev1.PersistentVolumeClaim
	// Use is the Listener the claim uses (claims.Of); Use.Listener is set.
	Use claims.Use
	// StorageClass is the claim's storage class, of this driver.
	StorageClass *storagev1.StorageClass
	// Node is the node the volume is pinned to ("" for a class that does
	// not pin volumes).
	Node string
}

// PersistentVolume is the volume of r.Claim, already bound to it
// (spec.claimRef with the claim's UID), marked and labelled with its
// Listener (so that the operator's caches hold it and the claim
// reconciler has nothing to add), as csi-provisioner makes it from this
// driver's CreateVolume: the same name, volume handle and context, the
// claim's access modes, volume mode and requested size (the volume has no
// size of its own), the storage class's reclaim policy and mount options,
// and for a pinned class the node affinity of the node.
func PersistentVolume(r Request) (*corev1.PersistentVolume, error) {
	c := r.Claim
	if c.UID == "" {
		return nil, fmt.Errorf("claim %s/%s has no UID", c.Namespace, c.Name)
	}
	if r.Use.Listener == "" {
		return nil, fmt.Errorf("claim %s/%s uses no Listener", c.Namespace, c.Name)
	}
	if r.StorageClass == nil || r.StorageClass.Provisioner != v1alpha1.DriverName {
		return nil, fmt.Errorf("claim %s/%s: its storage class is not provisioned by %s", c.Namespace, c.Name, v1alpha1.DriverName)
	}
	size, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok || size.IsZero() {
		// The API server refuses a claim without a size; a volume must
		// have one, and the binding wants it at least as large.
		size = resource.MustParse("1")
	}
	name := Name(c.UID)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				v1alpha1.LabelListenerVolume: "true",
				v1alpha1.LabelVolumeListener: r.Use.Listener,
			},
			Annotations: map[string]string{AnnotationProvisionedBy: v1alpha1.DriverName},
		},
		Spec: corev1.PersistentVolumeSpec{
			AccessModes:      c.Spec.AccessModes,
			Capacity:         corev1.ResourceList{corev1.ResourceStorage: size},
			StorageClassName: r.StorageClass.Name,
			MountOptions:     r.StorageClass.MountOptions,
			VolumeMode:       c.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				APIVersion: "v1", Kind: "PersistentVolumeClaim",
				Namespace: c.Namespace, Name: c.Name, UID: c.UID, ResourceVersion: c.ResourceVersion,
			},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver:           v1alpha1.DriverName,
				VolumeHandle:     name,
				VolumeAttributes: Context(c, r.Use),
			}},
		},
	}
	if p := r.StorageClass.ReclaimPolicy; p != nil {
		pv.Spec.PersistentVolumeReclaimPolicy = *p
	}
	if r.Node != "" {
		// The expression csi-provisioner makes of Topology(r.Node), and
		// the pod webhook copies into the claim's pods.
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{claims.NodeRequirement(r.Node)}}},
		}}
	}
	return pv, nil
}
