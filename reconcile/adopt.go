package reconcile

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/podstate"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Taking over a Service made by the Stackable listener-operator.
//
// Its Services are controlled by the same Listener (same UID), so they are
// adopted like our own: same name, kept clusterIP, node ports, load balancer
// and metadata.uid. What differs is the pod selector: theirs selects
// listener.stackable.tech/mnt.<Listener UID without dashes>=<Listener name>,
// which their node plugin put on each pod, ours
// listener.stackable.tech/mnt.<Listener name>=true (names.PodSelectorLabel),
// which the pod reconciler adds to every pod of a listener volume. Switching
// the selector before every pod carries our label would drop those pods out
// of the endpoints, so the switch waits: label first, switch second. The
// takeover controller (takeover.go) does both; the Listener controller
// leaves the selector alone meanwhile (leaveForeignSelector).

// lackingLabels are the labels of want (key=value) that labels lacks.
func lackingLabels(want, labels map[string]string) []string {
	var missing []string
	for k, v := range want {
		if labels[k] != v {
			missing = append(missing, k+"="+v)
		}
	}
	sort.Strings(missing)
	return missing
}

// foreignSelectorKeys are the pod selector keys of an existing Service that
// look like a listener mount label (listener.stackable.tech/mnt.*) but are
// not one the operator wants: what another operator selected pods by.
func foreignSelectorKeys(have, want map[string]string) []string {
	var keys []string
	for k := range have {
		if _, ok := want[k]; !ok && strings.HasPrefix(k, v1alpha1.PodSelectorLabelPrefix) {
			keys = append(keys, k)
		}
	}
	return keys
}

// selectorSwitchReady reports whether the Service may switch from its
// current selector to want: every pod the current selector matches, and
// that can still be an endpoint (not terminating, not finished), also
// matches want. Pods that never will (gone, finished) do not hold it up.
func selectorSwitchReady(want map[string]string, pods []corev1.Pod) (bool, string) {
	if p := waitingPod(want, pods); p != nil {
		return false, p.Name
	}
	return true, ""
}

// waitingPod is the first pod that holds up the switch to want (nil: none).
func waitingPod(want map[string]string, pods []corev1.Pod) *corev1.Pod {
	sel := labels.SelectorFromSet(want)
	for i := range pods {
		p := &pods[i]
		if !podstate.Running(p) {
			continue
		}
		if !sel.Matches(labels.Set(p.Labels)) {
			return p
		}
	}
	return nil
}

// wantedSelector reads the selector out of the Service the operator would
// apply.
func wantedSelector(want *unstructured.Unstructured) (map[string]string, error) {
	sel, _, err := unstructured.NestedStringMap(want.Object, "spec", "selector")
	if err != nil {
		return nil, fmt.Errorf("read selector of service %s/%s: %w", want.GetNamespace(), want.GetName(), err)
	}
	return sel, nil
}

// takeoverLabels are the labels a pod with labels has to get before a
// Service may switch to selector sel: the operator's own selector labels it
// lacks, and the listener-volume label, so that the reconcilers' cache holds
// the pod from now on. A pod's other labels (the StatefulSet controller's
// pod name, the ones a Listener's extraPodSelectorLabels name) are not the
// operator's to write, and the pod label policy refuses them.
func takeoverLabels(sel, labels map[string]string) map[string]string {
	return claims.Missing(claims.SelectorPodLabels(sel), labels)
}

// EventServiceAdopted is recorded when a Service made by another operator
// switches to this operator's pod selector.
const EventServiceAdopted = "ServiceAdopted"

// leaveForeignSelector leaves the selector out of the Service the Listener
// controller applies while the existing Service still selects pods by
// another operator's label (the takeover controller switches it, once every
// pod carries the operator's labels), and hashes what is left, so that the
// switch later is seen as a change. An apply without the selector leaves it
// to the manager that set it.
func leaveForeignSelector(want *unstructured.Unstructured, existing *corev1.Service) error {
	if existing == nil {
		return nil
	}
	sel, err := wantedSelector(want)
	if err != nil {
		return err
	}
	if len(foreignSelectorKeys(existing.Spec.Selector, sel)) == 0 {
		return nil
	}
	unstructured.RemoveNestedField(want.Object, "spec", "selector")
	ann := want.GetAnnotations()
	delete(ann, v1alpha1.AnnotationServiceHash)
	want.SetAnnotations(ann)
	sum, err := hashObject(want.Object)
	if err != nil {
		return fmt.Errorf("hash service %s/%s: %w", want.GetNamespace(), want.GetName(), err)
	}
	if ann == nil {
		ann = map[string]string{}
	}
	ann[v1alpha1.AnnotationServiceHash] = sum
	want.SetAnnotations(ann)
	return nil
}

// stackableClaimListener reports whether l is the per-claim Listener the
// Stackable listener-operator made for pvc: named after the claim (as ours),
// created by its node plugin at publish with no controller and owned by the
// claim's PersistentVolume. The claim reconciler adopts it (the claim
// becomes its controller, the volume's owner reference goes), so that its
// Service, node ports and load balancer stay and it lives as long as the
// claim, as the Listeners the operator makes do.
func stackableClaimListener(l *v1alpha1.Listener, pvc *corev1.PersistentVolumeClaim) bool {
	if metav1.GetControllerOf(l) != nil || !l.DeletionTimestamp.IsZero() || pvc.Spec.VolumeName == "" {
		return false
	}
	for _, o := range l.OwnerReferences {
		if volumeOwner(o, pvc) {
			return true
		}
	}
	return false
}

// volumeOwner: o is an owner reference to pvc's PersistentVolume.
func volumeOwner(o metav1.OwnerReference, pvc *corev1.PersistentVolumeClaim) bool {
	return o.APIVersion == "v1" && o.Kind == "PersistentVolume" && o.Name == pvc.Spec.VolumeName && pvc.Spec.VolumeName != ""
}
