// Package conditions writes one condition of a Listener's status on its
// own, for the controllers that share the Listener's status with the
// Listener controller (the certificate controller's CertificateManaged,
// node loss's PinnedNodesAvailable). Each writes its condition with a
// server-side apply of that condition alone, under a field manager of its
// own: no writer overwrites another's fields or retries on another's write.
// The condition's lastTransitionTime follows the metav1 rule: it moves only
// when the condition's status changes (meta.SetStatusCondition).
package conditions

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Next is cond as it is written over the conditions current at now: of the
// Listener's generation, with lastTransitionTime now when the condition is
// new or its status changes, and the current one otherwise.
func Next(current []metav1.Condition, cond metav1.Condition, generation int64, now time.Time) metav1.Condition {
	conds := slices.Clone(current)
	cond.ObservedGeneration = generation
	cond.LastTransitionTime = metav1.NewTime(now)
	meta.SetStatusCondition(&conds, cond)
	return *meta.FindStatusCondition(conds, cond.Type)
}

// Apply writes cond on Listener l (Next over l's conditions at now) as a
// server-side apply under fieldManager; with cond nil it removes the
// condition fieldManager wrote. It returns the Listener as the API server
// has it after the write.
func Apply(ctx context.Context, c client.Client, l *v1alpha1.Listener, cond *metav1.Condition, fieldManager string, now time.Time) (*v1alpha1.Listener, error) {
	status := map[string]any{}
	if cond != nil {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ptr(Next(l.Status.Conditions, *cond, l.Generation, now)))
		if err != nil {
			return nil, fmt.Errorf("condition %s of listener %s/%s: %w", cond.Type, l.Namespace, l.Name, err)
		}
		status["conditions"] = []any{u}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Listener",
		"metadata": map[string]any{"namespace": l.Namespace, "name": l.Name, "uid": string(l.UID)},
		"status":   status,
	}}
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		return nil, err
	}
	updated := &v1alpha1.Listener{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, updated); err != nil {
		return nil, fmt.Errorf("read back listener %s/%s: %w", l.Namespace, l.Name, err)
	}
	return updated, nil
}

func ptr[T any](v T) *T { return &v }
