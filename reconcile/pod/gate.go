package pod

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/podready"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/internal/metrics"
)

// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch

// certificateRecheck is how often a gated pod whose Listener's Certificate
// is not Ready, or does not name its addresses, is judged again: the
// controller does not watch Certificates (they are read live, as the
// certificate controller reads them).
const certificateRecheck = 15 * time.Second

// gated reports whether pod carries the readiness gate the operator sets
// (the pod webhook adds it for classes with spec.podReadiness Gate).
func gated(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.ReadinessGates, func(g corev1.PodReadinessGate) bool {
		return g.ConditionType == v1alpha1.PodConditionAddressesReady
	})
}

// gate judges a gated pod's listener volumes (podready.Judge) from vols,
// with what its PodListeners holds (recorded), and writes the verdict as
// the pod's condition when it differs from the one the pod has.
func (r *podReconciler) gate(ctx context.Context, pod *corev1.Pod, vols []podready.Volume, recorded v1alpha1.PodListenersSpec) (ctrl.Result, error) {
	for i := range vols {
		v := &vols[i]
		if e, ok := recorded.Listeners[v.Name]; ok {
			v.Recorded = &e
		}
		if v.Listener == nil || v.Class == nil || v.Class.Spec.Certificate == nil {
			continue
		}
		cert, err := r.certificate(ctx, pod.Namespace, v.Listener.Name)
		if err != nil {
			return ctrl.Result{}, err
		}
		v.Certificate = cert
	}
	verdict := mutateVerdict(podready.Judge(vols)) // mutants.go: the verdict itself without a mutant's tag
	if err := r.writeGateCondition(ctx, pod, verdict); err != nil {
		return ctrl.Result{}, err
	}
	if verdict.Reason == v1alpha1.ReasonCertificateNotReady || verdict.Reason == v1alpha1.ReasonCertificateStale {
		return ctrl.Result{RequeueAfter: certificateRecheck}, nil
	}
	return ctrl.Result{}, nil
}

// refusal is what the API server said when it refused a write: its
// status message, which names only the object written and what refused it
// (a quota, a policy of the namespace), or the error itself.
func refusal(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}

// certificate reads the Listener's Certificate live; nil when it does not
// exist or cert-manager is not installed.
func (r *podReconciler) certificate(ctx context.Context, namespace, listener string) (*podready.Certificate, error) {
	c := &cmv1.Certificate{}
	err := r.live.Get(ctx, types.NamespacedName{Namespace: namespace, Name: names.CertificateName(listener)}, c)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get certificate of listener %s/%s: %w", namespace, listener, err)
	}
	out := &podready.Certificate{Names: append(slices.Clone(c.Spec.DNSNames), c.Spec.IPAddresses...)}
	for _, cond := range c.Status.Conditions {
		if cond.Type == cmv1.CertificateConditionReady {
			out.Ready = cond.Status == cmmeta.ConditionTrue && cond.ObservedGeneration == c.Generation
		}
	}
	return out, nil
}

// writeGateCondition sets the pod's PodConditionAddressesReady to verdict
// through pods/status (a strategic merge of that one condition, by type),
// and writes nothing when the pod has it already: one write per change.
func (r *podReconciler) writeGateCondition(ctx context.Context, pod *corev1.Pod, verdict podready.Verdict) error {
	status := corev1.ConditionFalse
	if verdict.Ready {
		status = corev1.ConditionTrue
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1alpha1.PodConditionAddressesReady && c.Status == status && c.Reason == verdict.Reason && c.Message == verdict.Message {
			return nil
		}
	}
	cond := corev1.PodCondition{Type: v1alpha1.PodConditionAddressesReady, Status: status, Reason: verdict.Reason, Message: verdict.Message,
		LastTransitionTime: metav1.Now()}
	for _, c := range pod.Status.Conditions {
		if c.Type == cond.Type && c.Status == status {
			cond.LastTransitionTime = c.LastTransitionTime
		}
	}
	// The pod's resourceVersion makes the patch conditional: a pod read
	// from a cache that has not seen the last write (this one's, or the
	// kubelet's) is judged again when its update arrives, rather than
	// written twice.
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID, "resourceVersion": pod.ResourceVersion},
		"status":   map[string]any{"conditions": []corev1.PodCondition{cond}},
	})
	if err != nil {
		return err
	}
	err = r.client.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, patch), client.FieldOwner(v1alpha1.FieldManager))
	if metrics.CountWrite(ControllerName, "Pod", "status", err) != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil // gone, or replaced by a pod of the same name: its own event brings it back
		}
		return fmt.Errorf("set condition %s of pod %s/%s: %w", cond.Type, pod.Namespace, pod.Name, err)
	}
	return nil
}
