package listener

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"
)

// TestRefusedServiceRechecks: a Listener whose Service a ResourceQuota
// refuses tries again at most once every ServiceRefusedRecheck, not with
// controller-runtime's backoff (issue 49: on main, a refused write was an
// error, retried at once and then ever later up to 1,000 s), and the
// quota's change wakes it at once: Ready well before its next recheck
// (the second refusal puts that 30 s away; it used to come every 15 s,
// so that a lifted quota waited for it, and 1,000 refused Listeners made
// ~66 refused writes a second). Its message says when it tries again.
func TestRefusedServiceRechecks(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	quota := noServicesQuota(t, c, ns)
	mark := reconciletest.MarkAudit(t)
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "held", class.Name, reconciletest.Port("http", 80)))
	l := reconciletest.WaitReason(t, ctx, c, ns, "held", v1alpha1.ReasonServiceRefused)
	if msg := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady).Message; !strings.Contains(msg, "tries again when a ResourceQuota of the namespace changes, and at least every 5m0s") {
		t.Errorf("Ready message %q does not say when the operator tries again", msg)
	}
	refused := func() []string {
		var out []string
		for _, w := range reconciletest.OperatorWrites(t, mark, ns) {
			if strings.HasPrefix(w, "create services held (403)") {
				out = append(out, w)
			}
		}
		return out
	}

	// controller-runtime's backoff (5 ms, doubling) makes about eleven
	// refused creates in 8 s; one a period is one (two if a status
	// write's conflict retried the reconcile once).
	time.Sleep(8 * time.Second)
	if n := len(refused()); n > 2 {
		t.Errorf("%d refused creates of Service held in 8 s, want one each %s: %v", n, ServiceRefusedRecheck, refused())
	}
	// The second refusal, at the first recheck: the next is 30 s away.
	testenv.Converges(t, "a second refused create", func() error {
		if n := len(refused()); n < 2 {
			return fmt.Errorf("%d refused creates", n)
		}
		return nil
	})

	// Raised (spec and the status the quota controller would write):
	// Ready long before the next recheck, woken by the quota's events.
	lifted := time.Now()
	testenv.Converges(t, "quota raised", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(quota), quota); err != nil {
			return err
		}
		quota.Spec.Hard = corev1.ResourceList{corev1.ResourceServices: resource.MustParse("10")}
		if err := c.Update(ctx, quota); err != nil {
			return err
		}
		quota.Status.Hard = quota.Spec.Hard
		return c.Status().Update(ctx, quota)
	})
	for {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held"}, l); err != nil {
			t.Fatal(err)
		}
		if reason, _ := reconciletest.ReadyReason(l); reason == v1alpha1.ReasonReady {
			break
		}
		if time.Since(lifted) > ServiceRefusedRecheck/2 {
			t.Fatalf("the quota was raised %s ago and Listener held is still not Ready (its next recheck is 30 s after its second refusal): %+v", time.Since(lifted), l.Status.Conditions)
		}
		time.Sleep(200 * time.Millisecond)
	}
	reconciletest.GetService(t, ctx, c, ns, "held", nil)
}

// noServicesQuota creates a ResourceQuota allowing no Services in ns, with
// the status kube-controller-manager's quota controller (which does not run
// here) would write: the admission plugin checks against it.
func noServicesQuota(t *testing.T, c client.Client, ns string) *corev1.ResourceQuota {
	t.Helper()
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-services", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("0")}}}
	testenv.Create(t, t.Context(), c, quota)
	quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("0")}}
	if err := c.Status().Update(t.Context(), quota); err != nil {
		t.Fatal(err)
	}
	return quota
}
