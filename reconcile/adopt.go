package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/listener-operator/listener-operator/api/claims"
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
// of the endpoints, so the switch waits: label first (labelSelectedPods,
// besides the pod reconciler), switch second.

// +kubebuilder:rbac:groups="",resources=pods,verbs=list;patch

// errTakeoverPending says the Service still selects pods by another
// operator's label that not all of them carry ours yet: reconcile again
// after the Listener's takeover backoff (takeoverBackoff.after).
var errTakeoverPending = errors.New("waiting for the pods the Service selects to carry this operator's selector label")

// takeoverRecheck is the first wait of a Listener whose Service still has a
// foreign selector. The pod reconciler labels pods within moments, and label
// changes on pods do not wake the Listener controller. Each further wait
// doubles, up to takeoverMaxRecheck: a tenant whose Service can never
// switch (extra selector labels its pods lack) costs one live LIST of pods
// every few minutes, not every 2 s forever.
const (
	takeoverRecheck    = 2 * time.Second
	takeoverMaxRecheck = 5 * time.Minute
)

// EventTakeoverPending is recorded on a Listener each time its Service's
// switch to the operator's selector has to wait again.
const EventTakeoverPending = "TakeoverPending"

// takeoverDelay is the wait after attempts earlier waits: takeoverRecheck
// doubled each time, capped at takeoverMaxRecheck.
func takeoverDelay(attempts int) time.Duration {
	d := takeoverRecheck
	for range attempts {
		if d >= takeoverMaxRecheck/2 {
			return takeoverMaxRecheck
		}
		d *= 2
	}
	return d
}

// takeoverBackoff counts, per Listener, the takeover waits since its last
// progress. Entries go when the switch happens, the Listener no longer
// needs one, or it is deleted.
type takeoverBackoff struct {
	mu       sync.Mutex
	attempts map[types.NamespacedName]int
}

// wait records one more wait for key and returns how long it is.
func (b *takeoverBackoff) wait(key types.NamespacedName) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.attempts == nil {
		b.attempts = map[types.NamespacedName]int{}
	}
	d := takeoverDelay(b.attempts[key])
	b.attempts[key]++
	return d
}

// after is the current wait of key (the one wait last returned).
func (b *takeoverBackoff) after(key types.NamespacedName) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return takeoverDelay(max(b.attempts[key]-1, 0))
}

// forget drops key's count.
func (b *takeoverBackoff) forget(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.attempts, key)
}

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
		if !p.DeletionTimestamp.IsZero() || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
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

// takeOverSelector makes the switch from a foreign selector gapless. While
// some pod the existing selector matches lacks the operator's label, want
// keeps the existing selector (the rest of the Service is still applied) and
// errTakeoverPending is returned. Once all carry it, the existing selector
// is replaced with exactly the wanted one, guarded by the resourceVersion
// the decision was made on (a pod labelled or a selector changed since is
// looked at again first).
//
// Each wait is longer than the one before (takeoverBackoff) and recorded as
// an event on the Listener l that says which pod lacks which labels.
func (r *listenerReconciler) takeOverSelector(ctx context.Context, l *v1alpha1.Listener, existing *corev1.Service, want *unstructured.Unstructured) error {
	key := client.ObjectKeyFromObject(l)
	if existing == nil {
		r.takeover.forget(key)
		return nil
	}
	sel, err := wantedSelector(want)
	if err != nil {
		return err
	}
	if len(foreignSelectorKeys(existing.Spec.Selector, sel)) == 0 {
		r.takeover.forget(key)
		return nil
	}
	var pods corev1.PodList
	if err := r.live.List(ctx, &pods, client.InNamespace(existing.Namespace), client.MatchingLabels(existing.Spec.Selector)); err != nil {
		return fmt.Errorf("list pods selected by service %s/%s: %w", existing.Namespace, existing.Name, err)
	}
	if waiting := waitingPod(sel, pods.Items); waiting != nil {
		log.FromContext(ctx).V(1).Info("service keeps its foreign selector until its pods carry ours", "service", existing.Name, "pod", waiting.Name)
		missing := lackingLabels(sel, waiting.Labels)
		if err := r.labelSelectedPods(ctx, sel, pods.Items); err != nil {
			return err
		}
		if err := keepSelector(want, existing.Spec.Selector); err != nil {
			return err
		}
		delay := r.takeover.wait(key)
		r.recorder.Eventf(l, existing, corev1.EventTypeWarning, EventTakeoverPending, "Adopt",
			"Service %s keeps selecting pods by another operator's label until every pod it selects matches %v; pod %s lacks %s (the operator adds only its own listener labels: add the others to the pod, e.g. spec.extraPodSelectorLabels the pods do not carry); looking again in %s",
			existing.Name, sel, waiting.Name, strings.Join(missing, ", "), delay)
		return errTakeoverPending
	}
	r.takeover.forget(key)
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": existing.ResourceVersion},
		{"op": "replace", "path": "/spec/selector", "value": sel},
	})
	if err != nil {
		return fmt.Errorf("build selector patch for service %s/%s: %w", existing.Namespace, existing.Name, err)
	}
	err = r.client.Patch(ctx, existing, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(v1alpha1.FieldManager))
	if countWrite(controllerListener, "Service", "patch", err) != nil {
		if apierrors.IsInvalid(err) || apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return errRetrySoon // the Service changed since it was read
		}
		return fmt.Errorf("switch selector of service %s/%s: %w", existing.Namespace, existing.Name, err)
	}
	r.recorder.Eventf(existing, nil, corev1.EventTypeNormal, EventServiceAdopted, "Adopt",
		"Switched the selector of Service %s to %v: every pod it selected carries that label", existing.Name, sel)
	return nil
}

// labelSelectedPods adds the operator's selector labels to the pods the
// foreign selector matches that lack them. The pod reconciler does the same
// for every pod of a listener volume, but its cache may not hold pods
// admitted before this operator was installed; the pods a Service of this
// Listener selects are this Listener's by definition (the other operator's
// node plugin labelled them when it published their volume). The merge
// patch names only those labels.
func (r *listenerReconciler) labelSelectedPods(ctx context.Context, sel map[string]string, pods []corev1.Pod) error {
	for i := range pods {
		p := &pods[i]
		if !p.DeletionTimestamp.IsZero() || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if err := addPodLabels(ctx, r.client, controllerListener, p, takeoverLabels(sel, p.Labels)); err != nil {
			return fmt.Errorf("label pod %s/%s for the takeover of its Service: %w", p.Namespace, p.Name, err)
		}
	}
	return nil
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

// keepSelector replaces the selector in the Service the operator applies,
// and the hash that records what was applied, so that the switch later is
// seen as a change.
func keepSelector(want *unstructured.Unstructured, selector map[string]string) error {
	if err := unstructured.SetNestedStringMap(want.Object, maps.Clone(selector), "spec", "selector"); err != nil {
		return fmt.Errorf("keep selector of service %s/%s: %w", want.GetNamespace(), want.GetName(), err)
	}
	ann := want.GetAnnotations()
	delete(ann, AnnotationServiceHash)
	want.SetAnnotations(ann)
	sum, err := hashObject(want.Object)
	if err != nil {
		return fmt.Errorf("hash service %s/%s: %w", want.GetNamespace(), want.GetName(), err)
	}
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationServiceHash] = sum
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
