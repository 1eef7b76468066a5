package claim

import (
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// refusedPortMessage is what the stand-in for the Listener webhook says
// when it refuses a Listener port named "metrics".
const refusedPortMessage = `the port "metrics" cannot be routed: name each port after a section, or remove the port`

// refuseMetricsPort makes the API server refuse every write of a Listener
// in namespace ns with a port named "metrics", as the Listener webhook
// refuses a port no section of a gateway class routes (this package's API
// server runs no webhook: a ValidatingAdmissionPolicy refuses the same
// way, by an Invalid status carrying its message). It returns once the
// policy is in force.
func refuseMetricsPort(t *testing.T, c client.Client, ns string) {
	t.Helper()
	ctx := t.Context()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-no-metrics"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{v1alpha1.GroupVersion.Group}, APIVersions: []string{"*"}, Resources: []string{"listeners"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: `!has(object.spec.ports) || object.spec.ports.all(p, p.name != "metrics")`,
				Message:    refusedPortMessage,
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
			}},
		},
	}
	testenv.Create(t, ctx, c, policy, binding)
	t.Cleanup(func() {
		_ = c.Delete(t.Context(), binding)
		_ = c.Delete(t.Context(), policy)
	})
	probe := reconciletest.Listener(ns, "probe", "none", reconciletest.Port("metrics", 9404))
	testenv.Converges(t, "the policy in force", func() error {
		err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), refusedPortMessage) {
			return fmt.Errorf("a Listener with port metrics: %v", err)
		}
		return nil
	})
}

// TestRefusedListenerWriteIsTold: when the API server refuses the claim
// controller's write of a claim's own Listener (an admission webhook or
// policy denies the port a pod adds), the claim gets a Warning event with
// the refusal's message, and the Listener, when it exists, the condition
// ClaimApplied=False (reason WriteRefused) with the same message, until a
// write is accepted again. Without it the refusal was only logged.
func TestRefusedListenerWriteIsTold(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	refuseMetricsPort(t, c, ns)
	ann := map[string]string{v1alpha1.AnnotationListenerClass: class.Name}

	// The update: a second pod adds a port the policy refuses.
	claim := reconciletest.ListenerClaim(ns, "broker", ann)
	testenv.Create(t, ctx, c, claim, reconciletest.PodWithPorts(ns, "broker-a", claim.Name, corev1.ContainerPort{Name: "tls", ContainerPort: 9093}))
	reconciletest.WaitStatus(t, ctx, c, ns, claim.Name, func(l *v1alpha1.Listener) error {
		if len(l.Spec.Ports) != 1 {
			return fmt.Errorf("ports %+v", l.Spec.Ports)
		}
		return nil
	})
	second := reconciletest.PodWithPorts(ns, "broker-b", claim.Name, corev1.ContainerPort{Name: "metrics", ContainerPort: 9404})
	testenv.Create(t, ctx, c, second)
	ev := reconciletest.WaitEvent(t, ctx, c, ns, claim.Name, EventListenerRefused)
	if ev.Type != corev1.EventTypeWarning || ev.Regarding.Kind != "PersistentVolumeClaim" || !strings.Contains(ev.Note, refusedPortMessage) || !strings.Contains(ev.Note, "Listener broker") {
		t.Errorf("event %s %s about %s: %q; want a Warning about the claim naming Listener broker with the refusal's message", ev.Type, ev.Reason, ev.Regarding.Kind, ev.Note)
	}
	reconciletest.WaitStatus(t, ctx, c, ns, claim.Name, func(l *v1alpha1.Listener) error {
		cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionClaimApplied)
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.ReasonWriteRefused || !strings.Contains(cond.Message, refusedPortMessage) {
			return fmt.Errorf("condition %s: %+v", v1alpha1.ConditionClaimApplied, cond)
		}
		return nil
	})

	// The pod goes: nothing is refused any more, and the condition goes.
	if err := c.Delete(ctx, second, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	reconciletest.WaitStatus(t, ctx, c, ns, claim.Name, func(l *v1alpha1.Listener) error {
		if cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionClaimApplied); cond != nil {
			return fmt.Errorf("condition %s still there: %+v", v1alpha1.ConditionClaimApplied, cond)
		}
		return nil
	})

	// The create: the claim's first pod declares the refused port, so
	// there is no Listener to carry a condition; the claim is told.
	first := reconciletest.ListenerClaim(ns, "exporter", ann)
	testenv.Create(t, ctx, c, reconciletest.PodWithPorts(ns, "exporter", first.Name, corev1.ContainerPort{Name: "metrics", ContainerPort: 9404}), first)
	ev = reconciletest.WaitEvent(t, ctx, c, ns, first.Name, EventListenerRefused)
	if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Note, refusedPortMessage) || !strings.Contains(ev.Note, "Listener exporter") {
		t.Errorf("event %s %s: %q; want a Warning naming Listener exporter with the refusal's message", ev.Type, ev.Reason, ev.Note)
	}
}
