package listener

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/listener-operator/listener-operator/reconcile/conditions"
	"github.com/listener-operator/listener-operator/reconcile/internal/metrics"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// The Listener controller writes its part of a Listener's status (what
// api/v1alpha1's status ownership table gives to ListenerStatusWriter: the
// addresses and its conditions) with server-side apply under its field
// manager, through the one status writer (reconcile/conditions). The
// other writers (node loss, the certificate controller) apply their own
// conditions under their own field managers, so no writer overwrites
// another's fields or has to retry on another's write.

// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listeners/status,verbs=patch

// statusWriter writes the Listener controller's part of the status.
func statusWriter() conditions.Writer { return conditions.For(v1alpha1.ListenerStatusWriter) }

// ownedStatus is the part of st the Listener controller writes.
func ownedStatus(st v1alpha1.ListenerStatus) v1alpha1.ListenerStatus {
	owned := statusWriter().Owned(st)
	if mutantConditionNotOwned { // mutants.go
		owned.Conditions = slices.DeleteFunc(slices.Clone(owned.Conditions), func(c metav1.Condition) bool {
			return c.Type == v1alpha1.ConditionTenantMetadataAllowed
		})
	}
	return owned
}

// withOwned is st with the Listener controller's part replaced by owned
// (the other writers' conditions kept, in their place).
func withOwned(st, owned v1alpha1.ListenerStatus) v1alpha1.ListenerStatus {
	return statusWriter().With(st, owned)
}

// leftoverFields are the fields of the Listener controller's part that the
// API server's answer to an apply (got) shows other than applied (want):
// fields another field manager also owns, which an apply that leaves them
// out does not remove (the existing operator's after a migration, or the
// operator's own from before it applied status), named as in JSON.
func leftoverFields(got, want v1alpha1.ListenerStatus) []string {
	var out []string
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"serviceName", got.ServiceName, want.ServiceName},
		{"serviceType", got.ServiceType, want.ServiceType},
		{"className", got.ClassName, want.ClassName},
		{"ingressAddresses", got.IngressAddresses, want.IngressAddresses},
		{"nodePorts", got.NodePorts, want.NodePorts},
		{"ipFamilies", got.IPFamilies, want.IPFamilies},
		{"certificateSecretName", got.CertificateSecretName, want.CertificateSecretName},
	} {
		if !equality.Semantic.DeepEqual(f.got, f.want) {
			out = append(out, f.name)
		}
	}
	return out
}

// publish writes the status of outcome o when it differs from what the
// Listener has, and tells the user (by an event) when the Ready condition
// changed reason.
func (r *listenerReconciler) publish(ctx context.Context, l *v1alpha1.Listener, o outcome) error {
	st, v := o.status, o.verdict
	if !v.ready && !v.unpublish {
		st = keepPublished(l.Status, st)
	}
	current := ownedStatus(l.Status)
	st = withCondition(st, current.Conditions, l.Generation, v)
	if statusEqual(st, current) {
		return nil
	}
	var oldReason string
	if old := meta.FindStatusCondition(current.Conditions, v1alpha1.ConditionReady); old != nil {
		oldReason = old.Reason
	}
	got, err := r.applyStatus(ctx, l, st)
	if err == nil && got != nil {
		if fields := leftoverFields(got.Status, st); len(fields) > 0 {
			// Take the fields over: remove them, then apply again, so that
			// only the operator's apply owns them from now on.
			if err = r.clearStatusFields(ctx, l, fields); err == nil {
				got, err = r.applyStatus(ctx, l, st)
			}
		}
	}
	if err != nil || got == nil {
		return err
	}
	r.written.wrote(client.ObjectKeyFromObject(l), got.ResourceVersion, got.Status, time.Now())
	// A Listener becoming ready for the first time already got a
	// ServiceCreated event; every other change of reason is news.
	if oldReason != v.reason && (oldReason != "" || !v.ready) {
		typ := corev1.EventTypeWarning
		if v.ready {
			typ = corev1.EventTypeNormal
		}
		r.recorder.Eventf(l, nil, typ, v.reason, "Reconcile", "%s", v.message)
	}
	return nil
}

// applyStatus applies st (the Listener controller's part of the status)
// and returns the Listener as the API server answered (nil: it is gone).
func (r *listenerReconciler) applyStatus(ctx context.Context, l *v1alpha1.Listener, st v1alpha1.ListenerStatus) (*v1alpha1.Listener, error) {
	got, err := statusWriter().Apply(ctx, r.client, l, st)
	// "update-status": the verb dashboards know for a status write.
	if metrics.CountWrite(ControllerName, "Listener", "update-status", err) != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil, nil // gone, or replaced by a Listener of another UID
		}
		return nil, fmt.Errorf("apply status of listener %s/%s: %w", l.Namespace, l.Name, err)
	}
	return got, nil
}

// clearStatusFields removes fields of the status (a merge patch of nulls),
// whoever owns them.
func (r *listenerReconciler) clearStatusFields(ctx context.Context, l *v1alpha1.Listener, fields []string) error {
	nulls := map[string]any{}
	for _, f := range fields {
		nulls[f] = nil
	}
	patch, err := json.Marshal(map[string]any{"status": nulls})
	if err != nil {
		return fmt.Errorf("build status patch of listener %s/%s: %w", l.Namespace, l.Name, err)
	}
	err = r.client.Status().Patch(ctx, l.DeepCopy(), client.RawPatch(types.MergePatchType, patch), client.FieldOwner(v1alpha1.FieldManager))
	if metrics.CountWrite(ControllerName, "Listener", "patch-status", err) != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("take over status fields %v of listener %s/%s: %w", fields, l.Namespace, l.Name, err)
	}
	return nil
}
