package addresses

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/listener-operator/listener-operator/api/ports"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Volume is what a pod's listener volume records about the Listener it
// publishes: the CSI node plugin reads it from the volume context
// CreateVolume wrote, the pod reconciler from the claim and its bound
// PersistentVolume.
type Volume struct {
	// PerClaim: the Listener is the claim's own (listener-class), not a
	// shared one named by listener-name.
	PerClaim bool
	// Claim is the claim the volume was made for, ClaimUID its UID.
	Claim    types.NamespacedName
	ClaimUID types.UID
	// Name is the volume's PersistentVolume (and CSI volume id): the
	// Stackable operator's per-claim Listeners are owned by it.
	Name string
}

// PodVolume is one listener volume of a pod and what it is published
// from: the answer of ForPod.
type PodVolume struct {
	Pod      *corev1.Pod
	Volume   Volume
	Listener *v1alpha1.Listener
	// Class is the Listener's class, nil when it is gone (or named none).
	Class *v1alpha1.ListenerClass
	// Node is the pod's node, needed only for NodePort (PodServiceType).
	Node *corev1.Node
}

// Publishable says why Listener l may not be published into vol of pod
// now (nil: it may). The wait ends by itself (Fix false) except for a
// Listener naming no class.
//
//   - A Listener being deleted is never published: its Service and ports
//     are going away.
//   - A per-claim Listener only while the claim it was made for controls it
//     (same UID: a claim deleted and made again under the same name must
//     not get the old one's node ports or load balancer), or, for
//     Listeners the existing Stackable operator made, while the volume's
//     PersistentVolume owns it.
//   - Only a status that is current: the Ready condition observed the
//     Listener's generation, and, for a per-claim Listener, every port the
//     pod declares is in the Listener (the reconciler adds a new container
//     port of a rolling update asynchronously; applications read the tree
//     once, at start).
//   - A Listener with a class: without spec.className there is no policy
//     to publish by (a class named but gone is fine: ForPod).
func Publishable(vol Volume, l *v1alpha1.Listener, pod *corev1.Pod) *Wait {
	key := types.NamespacedName{Namespace: l.Namespace, Name: l.Name}
	if !l.DeletionTimestamp.IsZero() {
		return &Wait{Reason: fmt.Sprintf("listener %s is being deleted: waiting for it to be gone and made again", key)}
	}
	if vol.PerClaim && !ownedByVolume(vol, l) {
		owner := "no controller"
		if c := metav1.GetControllerOf(l); c != nil {
			owner = fmt.Sprintf("%s %s (uid %s)", c.Kind, c.Name, c.UID)
		}
		return &Wait{Reason: fmt.Sprintf("listener %s belongs to %s, not to claim %s (uid %s): waiting for the old Listener to be garbage-collected and one made for this claim",
			key, owner, vol.Claim, vol.ClaimUID)}
	}
	cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
	if cond == nil || cond.ObservedGeneration != l.Generation {
		observed := "no Ready condition"
		if cond != nil {
			observed = fmt.Sprintf("status of generation %d", cond.ObservedGeneration)
		}
		return &Wait{Reason: fmt.Sprintf("listener %s has %s, its spec is generation %d: waiting for the reconciler to publish a current status", key, observed, l.Generation)}
	}
	if vol.PerClaim {
		if missing := ports.Uncovered(l.Spec.Ports, pod); len(missing) > 0 {
			return &Wait{Reason: fmt.Sprintf("listener %s lacks the port(s) %s that pod %s/%s declares: waiting for the reconciler to add them",
				key, strings.Join(missing, ", "), pod.Namespace, pod.Name)}
		}
	}
	if l.Spec.ClassName == nil || *l.Spec.ClassName == "" {
		return &Wait{Fix: true, Reason: fmt.Sprintf("listener %s has no spec.className", key)}
	}
	return nil
}

// ownedByVolume: l is controlled by the claim of vol's UID, or owned by the
// volume's PersistentVolume (per-claim Listeners of the existing Stackable
// operator).
func ownedByVolume(vol Volume, l *v1alpha1.Listener) bool {
	for _, o := range l.OwnerReferences {
		switch {
		case o.Kind == "PersistentVolumeClaim" && o.Controller != nil && *o.Controller && o.UID == vol.ClaimUID && vol.ClaimUID != "":
			return true
		case o.Kind == "PersistentVolume" && o.APIVersion == "v1" && o.Name == vol.Name:
			return true
		}
	}
	return false
}
