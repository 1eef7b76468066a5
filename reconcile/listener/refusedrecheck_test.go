package listener

import (
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

// TestRefusedServiceRechecksEveryPeriod: a Listener whose Service a
// ResourceQuota refuses tries again once every ServiceRefusedRecheck, not
// with controller-runtime's backoff (issue 49: on main, a refused write
// was an error, retried at once and then ever later up to 1,000 s, so a
// quota lifted after a while was noticed up to a quarter of an hour late,
// and nothing watches ResourceQuotas). It writes one refused create a
// period, says how often it tries, and is Ready within a period of the
// quota's lifting.
func TestRefusedServiceRechecksEveryPeriod(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	quota := noServicesQuota(t, c, ns)
	mark := reconciletest.MarkAudit(t)
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "held", class.Name, reconciletest.Port("http", 80)))
	l := reconciletest.WaitReason(t, ctx, c, ns, "held", v1alpha1.ReasonServiceRefused)
	if msg := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady).Message; !strings.Contains(msg, "tries again every 15s") {
		t.Errorf("Ready message %q does not say how often the operator tries again", msg)
	}

	// controller-runtime's backoff (5 ms, doubling) makes about eleven
	// refused creates in 8 s; one a period is one (two if a status
	// write's conflict retried the reconcile once).
	time.Sleep(8 * time.Second)
	var refused []string
	for _, w := range reconciletest.OperatorWrites(t, mark, ns) {
		if strings.HasPrefix(w, "create services held (403)") {
			refused = append(refused, w)
		}
	}
	if len(refused) > 2 {
		t.Errorf("%d refused creates of Service held in 8 s, want one each %s: %v", len(refused), ServiceRefusedRecheck, refused)
	}

	// Lifted: Ready well before controller-runtime's cap of 1,000 s, and
	// well after one period (the poll is no claim of speed).
	if err := c.Delete(ctx, quota); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(4 * ServiceRefusedRecheck)
	for {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held"}, l); err != nil {
			t.Fatal(err)
		}
		if reason, _ := reconciletest.ReadyReason(l); reason == v1alpha1.ReasonReady {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the quota was lifted %s ago and Listener held is still not Ready: %+v", 4*ServiceRefusedRecheck, l.Status.Conditions)
		}
		time.Sleep(500 * time.Millisecond)
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
