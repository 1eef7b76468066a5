// Package foreign recognises what the Stackable listener-operator made, for
// the controllers that take it over: the Listener controller leaves a
// foreign pod selector alone (LeaveForeignSelector), the claim controller
// adopts the per-claim Listener it made (StackableClaimListener), and the
// takeover controller and the relabel scan find the pods and Services that
// still select by its labels.
//
// Its Services are controlled by the same Listener (same UID), so they are
// adopted like our own: same name, kept clusterIP, node ports, load balancer
// and metadata.uid. What differs is the pod selector: theirs selects
// listener.stackable.tech/mnt.<Listener UID without dashes>=<Listener name>,
// which their node plugin put on each pod, ours
// listener.stackable.tech/mnt.<Listener name>=true (names.PodSelectorLabel),
// which the pod reconciler adds to every pod of a listener volume. Switching
// the selector before every pod carries our label would drop those pods out
// of the endpoints, so the switch waits: label first, switch second (the
// takeover controller does both).
package foreign

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/podstate"
	"github.com/listener-operator/listener-operator/api/service"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// SelectorKeys are the pod selector keys of an existing Service that
// look like a listener mount label (listener.stackable.tech/mnt.*) but are
// not one the operator wants: what another operator selected pods by.
func SelectorKeys(have, want map[string]string) []string {
	var keys []string
	for k := range have {
		if _, ok := want[k]; !ok && strings.HasPrefix(k, v1alpha1.PodSelectorLabelPrefix) {
			keys = append(keys, k)
		}
	}
	return keys
}

// WantedSelector reads the selector out of the Service the operator would
// apply.
func WantedSelector(want *unstructured.Unstructured) (map[string]string, error) {
	sel, _, err := unstructured.NestedStringMap(want.Object, "spec", "selector")
	if err != nil {
		return nil, fmt.Errorf("read selector of service %s/%s: %w", want.GetNamespace(), want.GetName(), err)
	}
	return sel, nil
}

// LeaveForeignSelector leaves the selector out of the Service the Listener
// controller applies while the existing Service still selects pods by
// another operator's label (the takeover controller switches it, once every
// pod carries the operator's labels), and hashes what is left, so that the
// switch later is seen as a change. An apply without the selector leaves it
// to the manager that set it.
func LeaveForeignSelector(want *unstructured.Unstructured, existing *corev1.Service) error {
	if existing == nil {
		return nil
	}
	sel, err := WantedSelector(want)
	if err != nil {
		return err
	}
	if len(SelectorKeys(existing.Spec.Selector, sel)) == 0 {
		return nil
	}
	unstructured.RemoveNestedField(want.Object, "spec", "selector")
	return service.StampHash(want)
}

// StackableClaimListener reports whether l is the per-claim Listener the
// Stackable listener-operator made for pvc: named after the claim (as ours),
// created by its node plugin at publish with no controller and owned by the
// claim's PersistentVolume. The claim reconciler adopts it (the claim
// becomes its controller, the volume's owner reference goes), so that its
// Service, node ports and load balancer stay and it lives as long as the
// claim, as the Listeners the operator makes do.
func StackableClaimListener(l *v1alpha1.Listener, pvc *corev1.PersistentVolumeClaim) bool {
	if metav1.GetControllerOf(l) != nil || !l.DeletionTimestamp.IsZero() || pvc.Spec.VolumeName == "" {
		return false
	}
	for _, o := range l.OwnerReferences {
		if VolumeOwner(o, pvc) {
			return true
		}
	}
	return false
}

// VolumeOwner: o is an owner reference to pvc's PersistentVolume.
func VolumeOwner(o metav1.OwnerReference, pvc *corev1.PersistentVolumeClaim) bool {
	return o.APIVersion == "v1" && o.Kind == "PersistentVolume" && o.Name == pvc.Spec.VolumeName && pvc.Spec.VolumeName != ""
}

// ListenerPod reports whether a pod carries another operator's
// listener label (listener.stackable.tech/mnt.<uid>=<Listener name>): one
// that a Service may select it by until the takeover switches it (finished
// and terminating pods do not count).
func ListenerPod(pod *corev1.Pod) bool {
	if !podstate.Running(pod) {
		return false
	}
	return len(ListenersOfPod(pod)) > 0
}

// ListenersOfPod maps a pod to the Listeners another operator's
// labels on it name: listener.stackable.tech/mnt.<uid>=<Listener name>.
func ListenersOfPod(pod client.Object) []ctrl.Request {
	var reqs []ctrl.Request
	for k, v := range pod.GetLabels() {
		if strings.HasPrefix(k, v1alpha1.PodSelectorLabelPrefix) && v != v1alpha1.PodSelectorLabelValue && v != "" {
			reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: pod.GetNamespace(), Name: v}})
		}
	}
	return reqs
}
