package pod

import (
	"context"
	"fmt"

	"github.com/listener-operator/listener-operator/api/service"
	"github.com/listener-operator/listener-operator/reconcile/internal/metrics"
	"github.com/listener-operator/listener-operator/reconcile/options"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/digest"
)

// A pod's PodListeners is written by the operator only. The leader does not
// cache PodListeners (their spec, with the addresses of every listener
// volume of every pod, is most of what a listener pod would cost the leader
// otherwise): caches.PodListenersHashes holds the hash of the spec last
// written (v1alpha1.AnnotationPodListenersHash) and whether an address
// change may still ask for a restart (v1alpha1.AnnotationAddressesChanged),
// so a steady cluster reads and writes nothing. Only when the spec to write
// differs, or a restart may be due, is the PodListeners read whole from the
// API server.

// podListenersHash is the hash of spec as computed for a pod (without
// AddressesAtStart).
func podListenersHash(spec v1alpha1.PodListenersSpec) (string, error) {
	return digest.JSON(spec)
}

// writtenHash is the hash a PodListeners is written with for spec, the
// entries computed for a pod, and waiting, the volumes whose entries are
// kept as last written (podListenersSpec): the hash of spec alone when no
// volume waits. A pod that keeps waiting so reads and writes nothing.
func writtenHash(spec v1alpha1.PodListenersSpec, waiting []string) (string, error) {
	if len(waiting) == 0 {
		return podListenersHash(spec)
	}
	return digest.JSON(struct {
		Spec    v1alpha1.PodListenersSpec `json:"spec"`
		Waiting []string                  `json:"waiting"`
	}{spec, waiting})
}

// keepWaiting is spec with the entries of the waiting volumes as old
// holds them: what the pod's tree still holds.
func keepWaiting(old, spec v1alpha1.PodListenersSpec, waiting []string) v1alpha1.PodListenersSpec {
	for _, vol := range waiting {
		if e, ok := old.Listeners[vol]; ok {
			if spec.Listeners == nil {
				spec.Listeners = map[string]v1alpha1.PodListener{}
			}
			spec.Listeners[vol] = e
		}
	}
	return spec
}

// podListenersAnnotations are the annotations of a PodListeners written
// with spec, computed as hash.
func podListenersAnnotations(in map[string]string, hash string, spec v1alpha1.PodListenersSpec) map[string]string {
	out := make(map[string]string, len(in)+2)
	for k, v := range in {
		out[k] = v
	}
	out[v1alpha1.AnnotationPodListenersHash] = hash
	delete(out, v1alpha1.AnnotationAddressesChanged)
	for _, l := range spec.Listeners {
		if len(l.AddressesAtStart) > 0 {
			out[v1alpha1.AnnotationAddressesChanged] = "true"
			break
		}
	}
	return out
}

// writePodListeners writes spec, with the entries of the waiting volumes
// kept as last written (keepWaiting), into the pod's PodListeners, and
// returns what it holds then (nil when that is not known yet: a conflict
// is retried).
func (r *podReconciler) writePodListeners(ctx context.Context, pod *corev1.Pod, spec v1alpha1.PodListenersSpec, waiting []string, vols []podVolumeListener) (ctrl.Result, *v1alpha1.PodListenersSpec, error) {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: names.PodListenersName(pod.UID)}
	hash, err := writtenHash(spec, waiting)
	if err != nil {
		return ctrl.Result{}, nil, fmt.Errorf("hash podlisteners %s: %w", key, err)
	}
	held, ok := r.podListeners.Get(key)
	switch {
	case !ok:
		return r.createPodListeners(ctx, pod, key, spec, hash)
	case held.Hash == hash && !held.AddressesChanged:
		// What was written for these entries; a waiting volume's entry is
		// not read (the gate judges it by its Listener).
		return ctrl.Result{}, &spec, nil
	}
	existing := &v1alpha1.PodListeners{}
	if err := r.live.Get(ctx, key, existing); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{RequeueAfter: options.ConflictRetry}, nil, nil // the cache lags a deletion
		}
		return ctrl.Result{}, nil, fmt.Errorf("get podlisteners %s: %w", key, err)
	}
	if existing.Annotations[v1alpha1.AnnotationPodListenersHash] == hash {
		// Nothing new to write: a restart the class asks for may still be
		// due (a PodDisruptionBudget refused the eviction before).
		res, err := r.signalAddressChanges(ctx, pod, existing, vols, nil)
		return res, &existing.Spec, err
	}
	spec, changed := recordAddressChanges(existing.Spec, keepWaiting(existing.Spec, spec, waiting)) // addresschange.go
	updated := existing.DeepCopy()
	updated.Spec = spec
	updated.Annotations = podListenersAnnotations(existing.Annotations, hash, spec)
	err = r.client.Update(ctx, updated, client.FieldOwner(v1alpha1.FieldManager))
	if metrics.CountWrite(ControllerName, "PodListeners", "update", err) != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: options.ConflictRetry}, nil, nil
		}
		return ctrl.Result{}, nil, fmt.Errorf("update podlisteners %s: %w", key, err)
	}
	res, err := r.signalAddressChanges(ctx, pod, updated, vols, changed)
	return res, &updated.Spec, err
}

// createPodListeners creates the pod's PodListeners with spec.
func (r *podReconciler) createPodListeners(ctx context.Context, pod *corev1.Pod, key types.NamespacedName, spec v1alpha1.PodListenersSpec, hash string) (ctrl.Result, *v1alpha1.PodListenersSpec, error) {
	pl := &v1alpha1.PodListeners{
		ObjectMeta: metav1.ObjectMeta{
			Name:        key.Name,
			Namespace:   key.Namespace,
			Labels:      map[string]string{service.LabelManagedBy: v1alpha1.FieldManager},
			Annotations: podListenersAnnotations(nil, hash, spec),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: spec,
	}
	err := r.client.Create(ctx, pl, client.FieldOwner(v1alpha1.FieldManager))
	if metrics.CountWrite(ControllerName, "PodListeners", "create", err) != nil {
		if apierrors.IsAlreadyExists(err) {
			return ctrl.Result{RequeueAfter: options.ConflictRetry}, nil, nil
		}
		return ctrl.Result{}, nil, fmt.Errorf("create podlisteners %s: %w", key, err)
	}
	return ctrl.Result{}, &spec, nil
}
