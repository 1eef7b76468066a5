package pod

import (
	"context"
	"fmt"
	"time"

	"github.com/listener-operator/listener-operator/reconcile/internal/labelpatch"
	"github.com/listener-operator/listener-operator/reconcile/internal/metrics"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=patch

// controllerClaimMark names the claim mark scan in metrics.
const controllerClaimMark = "claim-mark"

// unmarked selects what lacks the listener-volume label.
func unmarked() (labels.Selector, error) {
	req, err := labels.NewRequirement(v1alpha1.LabelListenerVolume, selection.NotEquals, []string{"true"})
	if err != nil {
		return nil, err
	}
	return labels.NewSelector().Add(*req), nil
}

// markClaims marks the listener claims that lack the listener-volume label
// (claims.ClaimNeedsMark): admitted while the claim webhook was
// unavailable, or before it marked claims. The caches hold only marked
// claims, so an unmarked one is found only here: the API server is read
// page by page (relabelPageSize claims at a time), not the cache.
func markClaims(ctx context.Context, live client.Reader, c client.Client) (scanned, marked int, err error) {
	defer metrics.ObserveReconcile(controllerClaimMark, time.Now())
	sel, err := unmarked()
	if err != nil {
		return 0, 0, err
	}
	opts := &client.ListOptions{LabelSelector: sel, Limit: relabelPageSize}
	for {
		var list corev1.PersistentVolumeClaimList
		if err := live.List(ctx, &list, opts); err != nil {
			return scanned, marked, fmt.Errorf("list claims: %w", err)
		}
		for i := range list.Items {
			pvc := &list.Items[i]
			scanned++
			if !claims.ClaimNeedsMark(pvc.Labels, pvc.Spec.StorageClassName) {
				continue
			}
			if err := markClaim(ctx, c, pvc); err != nil {
				return scanned, marked, err
			}
			marked++
		}
		if list.Continue == "" {
			return scanned, marked, nil
		}
		opts.Continue = list.Continue
	}
}

// markClaim puts the listener-volume label on pvc; a claim gone meanwhile
// is no error.
func markClaim(ctx context.Context, c client.Client, pvc *corev1.PersistentVolumeClaim) error {
	return client.IgnoreNotFound(labelpatch.AddLabels(ctx, c, controllerClaimMark, "PersistentVolumeClaim", pvc, map[string]string{v1alpha1.LabelListenerVolume: "true"}))
}

// namespaceClaims reads claims for the pod relabel scan: from the cache,
// which holds only marked (listener) claims, and for a claim it lacks,
// from the claims of the pod's namespace listed from the API server (once
// per namespace the scan meets in a row: it pages through pods in
// namespace order). So a pod whose claim exists but is not a listener
// claim is not taken for one whose claim does not exist yet (which may
// become a listener claim, and is labelled). Only the names of the
// namespace's claims are kept, and only while the scan is in it.
type namespaceClaims struct {
	cache client.Reader
	live  client.Reader

	namespace string
	// known are the namespace's claims: nil for one that is not a listener
	// claim, the claim itself for an unmarked listener claim.
	known map[string]*corev1.PersistentVolumeClaim
}

var _ client.Reader = (*namespaceClaims)(nil)

// Get implements client.Reader.
func (n *namespaceClaims) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := n.cache.Get(ctx, key, obj, opts...)
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok || !apierrors.IsNotFound(err) {
		return err
	}
	if err := n.load(ctx, key.Namespace); err != nil {
		return err
	}
	found, exists := n.known[key.Name]
	switch {
	case !exists:
		return err
	case found == nil:
		// Exists, and is not a listener claim.
		*pvc = corev1.PersistentVolumeClaim{}
		pvc.Namespace, pvc.Name = key.Namespace, key.Name
	default:
		found.DeepCopyInto(pvc)
	}
	return nil
}

// List implements client.Reader.
func (n *namespaceClaims) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return n.cache.List(ctx, list, opts...)
}

// load lists the claims of namespace, unless they are the ones known.
func (n *namespaceClaims) load(ctx context.Context, namespace string) error {
	if n.known != nil && n.namespace == namespace {
		return nil
	}
	known := map[string]*corev1.PersistentVolumeClaim{}
	opts := &client.ListOptions{Namespace: namespace, Limit: relabelPageSize}
	for {
		var list corev1.PersistentVolumeClaimList
		if err := n.live.List(ctx, &list, opts); err != nil {
			return fmt.Errorf("list claims of namespace %s: %w", namespace, err)
		}
		for i := range list.Items {
			pvc := &list.Items[i]
			if claims.IsListenerClaim(pvc) {
				known[pvc.Name] = pvc.DeepCopy()
			} else {
				known[pvc.Name] = nil
			}
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	n.namespace, n.known = namespace, known
	return nil
}
