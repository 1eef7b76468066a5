package csi

import (
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/ports"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// volumeRef is what a volume publishes: its Listener, and the claim the
// volume was made for.
type volumeRef struct {
	listener client.ObjectKey
	// perClaim: the Listener is the claim's own (listener-class), not a
	// shared one named by listener-name.
	perClaim bool
	claim    client.ObjectKey
	claimUID types.UID
	// volumeID is also the PersistentVolume's name (csi-provisioner names
	// the volume after the request).
	volumeID string
}

// publishable says whether l may be published into a volume of ref for
// pod: nil, or Unavailable with what it waits for (kubelet retries, and
// its FailedMount event on the pod carries the message).
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
func publishable(ref volumeRef, l *v1alpha1.Listener, pod *corev1.Pod) error {
	if !l.DeletionTimestamp.IsZero() {
		return status.Errorf(codes.Unavailable, "listener %s is being deleted: waiting for it to be gone and made again", ref.listener)
	}
	if ref.perClaim && !ownedByVolume(ref, l) {
		owner := "no controller"
		if c := metav1.GetControllerOf(l); c != nil {
			owner = fmt.Sprintf("%s %s (uid %s)", c.Kind, c.Name, c.UID)
		}
		return status.Errorf(codes.Unavailable,
			"listener %s belongs to %s, not to claim %s (uid %s): waiting for the old Listener to be garbage-collected and one made for this claim",
			ref.listener, owner, ref.claim, ref.claimUID)
	}
	cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
	if cond == nil || cond.ObservedGeneration != l.Generation {
		observed := "no Ready condition"
		if cond != nil {
			observed = fmt.Sprintf("status of generation %d", cond.ObservedGeneration)
		}
		return status.Errorf(codes.Unavailable, "listener %s has %s, its spec is generation %d: waiting for the reconciler to publish a current status",
			ref.listener, observed, l.Generation)
	}
	if ref.perClaim {
		if missing := ports.Uncovered(l.Spec.Ports, pod); len(missing) > 0 {
			return status.Errorf(codes.Unavailable, "listener %s lacks the port(s) %s that pod %s/%s declares: waiting for the reconciler to add them",
				ref.listener, strings.Join(missing, ", "), pod.Namespace, pod.Name)
		}
	}
	return nil
}

// ownedByVolume: l is controlled by the claim of ref's UID, or owned by the
// volume's PersistentVolume (per-claim Listeners of the existing Stackable
// operator).
func ownedByVolume(ref volumeRef, l *v1alpha1.Listener) bool {
	for _, o := range l.OwnerReferences {
		switch {
		case o.Kind == "PersistentVolumeClaim" && o.Controller != nil && *o.Controller && o.UID == ref.claimUID && ref.claimUID != "":
			return true
		case o.Kind == "PersistentVolume" && o.APIVersion == "v1" && o.Name == ref.volumeID:
			return true
		}
	}
	return false
}
