package claim

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/internal/foreign"
)

// action is what a reconcile does about a claim's own Listener.
type action int

const (
	// actionNone: the Listener is as the claim wants it.
	actionNone action = iota
	// actionCreate: there is none; it is created.
	actionCreate
	// actionUpdate: its labels, class or ports follow the claim.
	actionUpdate
	// actionAdopt: it was handed over to the claim, or made by the
	// Stackable operator; the claim becomes its controller.
	actionAdopt
	// actionAwaitCollection: it belongs to an earlier claim of the same
	// name, which the garbage collector removes (its deletion brings the
	// claim back).
	actionAwaitCollection
	// actionRefuseForeign: someone else's Listener has the name.
	actionRefuseForeign
)

// outcome is what one reconcile of a listener claim that asks for its own
// Listener decided (decide).
type outcome struct {
	action action
	// listener is the update to write (actionUpdate, actionAdopt) or the
	// Listener the claim cannot have (actionAwaitCollection,
	// actionRefuseForeign).
	listener *v1alpha1.Listener
	// ports are the new Listener's (actionCreate).
	ports []v1alpha1.ListenerPort
	// portless: the claim's Listener has no ports, and its running pods are
	// told why they wait (warnPortless).
	portless bool
}

// decide is what to do about the own Listener of pvc (use: claims.Of),
// given the ports its running pods declare, the Listener its volume was
// provisioned for (bound, "" when not bound) and the Listener of that name
// that exists (nil: none).
func decide(pvc *corev1.PersistentVolumeClaim, use claims.Use, bound string, ports []v1alpha1.ListenerPort, existing *v1alpha1.Listener) outcome {
	if existing == nil {
		return outcome{action: actionCreate, ports: ports}
	}
	adopt := handedOver(existing, pvc) || foreign.StackableClaimListener(existing, pvc)
	if !adopt && !metav1.IsControlledBy(existing, pvc) {
		if ref := metav1.GetControllerOf(existing); ref != nil && ref.Kind == "PersistentVolumeClaim" && ref.Name == pvc.Name {
			return outcome{action: actionAwaitCollection, listener: existing}
		}
		return outcome{action: actionRefuseForeign, listener: existing}
	}
	if len(ports) == 0 {
		// While no running pod declares ports (between pods, or when the
		// pods finished) the Listener keeps the ports it had, so the
		// address and its ports stay the same.
		ports = existing.Spec.Ports
	}
	o := outcome{portless: len(ports) == 0}
	// The selection by pod name is decided once, when the Listener is
	// made (claimListenerObject): only labels, class and ports follow.
	want := claimListenerObject(pvc, use, ports, "")
	if bound != "" && metav1.IsControlledBy(existing, pvc) && existing.Spec.ClassName != nil && *existing.Spec.ClassName != "" {
		// The volume was provisioned for the Listener of this class; a
		// class annotation changed since (the webhook refuses that on a
		// bound claim) does not move it.
		want.Spec.ClassName = existing.Spec.ClassName
	}
	if !adopt && equality.Semantic.DeepEqual(existing.Labels, want.Labels) && ptr.Equal(existing.Spec.ClassName, want.Spec.ClassName) &&
		equality.Semantic.DeepEqual(existing.Spec.Ports, want.Spec.Ports) {
		return o
	}
	updated := existing.DeepCopy()
	o.action, o.listener = actionUpdate, updated
	if adopt {
		// Keep the Listener (its Service, node ports and name) for the
		// claim it was handed over to.
		updated.OwnerReferences = append(slices.DeleteFunc(slices.Clone(existing.OwnerReferences), func(o metav1.OwnerReference) bool {
			return ptr.Deref(o.Controller, false) || foreign.VolumeOwner(o, pvc)
		}), want.OwnerReferences...)
		delete(updated.Annotations, v1alpha1.AnnotationHandoverToClaim)
		o.action = actionAdopt
	}
	updated.Labels = want.Labels
	updated.Spec.ClassName = want.Spec.ClassName
	updated.Spec.Ports = want.Spec.Ports
	return o
}
