package listener

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listener-operator/listener-operator/api/service"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// EventMetadataLeftOut names the labels a tenant put on a Listener (or its
// claim) that its Service was made without, or, in the class's mode Warn,
// copied although they are off the allow-list.
const EventMetadataLeftOut = "MetadataLeftOut"

// serviceFindings are what the one Service rule (service.Service) said
// about what the tenant wrote: refused overrides, labels left out, keys
// copied only in mode Warn.
type serviceFindings struct {
	refused, leftOut, tolerated field.ErrorList
}

// tenantMetadataCondition is the TenantMetadataAllowed condition of l: nil
// when every key the tenant wrote is allowed, False with the keys and the
// fix otherwise.
func tenantMetadataCondition(l *v1alpha1.Listener, class *v1alpha1.ListenerClass, f serviceFindings) *metav1.Condition {
	if len(f.leftOut) == 0 && len(f.tolerated) == 0 {
		return nil
	}
	cond := &metav1.Condition{Type: v1alpha1.ConditionTenantMetadataAllowed, Status: metav1.ConditionFalse, ObservedGeneration: l.Generation}
	var parts []string
	if len(f.leftOut) > 0 {
		cond.Reason = v1alpha1.ReasonMetadataLeftOut
		parts = append(parts, fmt.Sprintf("left off the Service: %s", strings.Join(service.Fields(f.leftOut), ", ")))
	}
	if len(f.tolerated) > 0 {
		if cond.Reason == "" {
			cond.Reason = v1alpha1.ReasonMetadataNotAllowed
		}
		parts = append(parts, fmt.Sprintf("copied only because the class is in spec.tenantMetadata.mode: Warn: %s", strings.Join(service.Fields(f.tolerated), ", ")))
	}
	cond.Message = v1alpha1.TruncateMessage(fmt.Sprintf(
		"ListenerClass %s does not let tenants put these keys on the Service (%s); fix: use unprefixed or workload keys (docs/webhooks.md), or have an administrator allow them in the class's spec.tenantMetadata",
		class.Name, strings.Join(parts, "; ")))
	return cond
}

// recordFindings tells, whenever the Service is created or changed, what
// of the tenant's input it was made without.
func (r *listenerReconciler) recordFindings(l *v1alpha1.Listener, svc *corev1.Service, class *v1alpha1.ListenerClass, f serviceFindings) {
	if len(f.refused) > 0 {
		r.recorder.Eventf(l, svc, corev1.EventTypeWarning, EventOverridesDropped, "Apply",
			"%s", v1alpha1.TruncateMessage(fmt.Sprintf("Service %s was made without these objectOverrides, which ListenerClass %q does not allow: %s", svc.Name, class.Name, strings.Join(service.Fields(f.refused), ", "))))
	}
	if cond := tenantMetadataCondition(l, class, f); cond != nil {
		// On the Service, which is what lacks the keys; kubectl describe
		// of the Listener shows the condition.
		r.recorder.Eventf(svc, l, corev1.EventTypeWarning, EventMetadataLeftOut, "Apply", "%s", cond.Message)
	}
}
