// Package labelpatch adds labels to objects the operator does not own
// (pods, claims, volumes) the one way the label policies allow it: a merge
// patch that names only the labels added. The pod controller, the relabel
// scan, the takeover and the claim controller all write labels this way.
package labelpatch

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/internal/metrics"
)

// AddPodLabels adds labels to a pod (AddLabels); a pod gone meanwhile is
// no error.
func AddPodLabels(ctx context.Context, c client.Client, controller string, pod *corev1.Pod, missing map[string]string) error {
	return client.IgnoreNotFound(AddLabels(ctx, c, controller, "Pod", pod, missing))
}

// AddLabels adds labels to obj (of kind, for the write metric) with a merge
// patch that names only them, so that nothing else on it is touched (the
// pod and claim label policies allow the operator no more); the write
// counts for controller. Nothing to add writes nothing.
func AddLabels(ctx context.Context, c client.Client, controller, kind string, obj client.Object, labels map[string]string) error {
	if len(labels) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return fmt.Errorf("build label patch for %s %s: %w", kind, client.ObjectKeyFromObject(obj), err)
	}
	err = c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(v1alpha1.FieldManager))
	if metrics.CountWrite(controller, kind, "patch", err) != nil {
		return fmt.Errorf("label %s %s: %w", kind, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}
