//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestOperatorRolloutKeepsAdmitting: a rolling restart of the operator
// (what `helm upgrade` and `kubectl rollout restart` do) never makes the
// API server fail a call to the fail-closed webhooks. A replica that is
// told to stop keeps serving until every node's kube-proxy has stopped
// sending it new connections; before it did, the API server dialled the
// address of a pod that was already gone for a second or more after each
// replica stopped, and `kubectl apply` failed with "failed calling
// webhook ... context deadline exceeded".
func TestOperatorRolloutKeepsAdmitting(t *testing.T) {
	ctx := t.Context()
	webhooksAnswer(t, ctx)
	t.Cleanup(func() { webhooksAnswer(t, context.WithoutCancel(ctx)) })

	// Several clients, so that the API server keeps several connections to
	// the webhook Service and dials new ones as replicas go away.
	const clients = 4
	probe := listenerClass("e2e-rollout-probe", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	admissions := startAdmissionProbe(ctx, clients, 50*time.Millisecond, func(int, int) client.Object { return probe.DeepCopy() })
	defer admissions.Stop()

	old := map[string]bool{}
	for _, pod := range operatorPods(t, ctx) {
		old[pod.Name] = true
	}
	start := time.Now()
	k8s.kubectlOK(t, ctx, "", "rollout", "restart", "-n", operatorNamespace, "deployment/listener-operator")
	k8s.kubectlOK(t, ctx, "", "rollout", "status", "-n", operatorNamespace, "deployment/listener-operator", "--timeout=3m")
	// The last old replica stops once the rollout is complete: keep asking
	// until every old replica is gone, and then for a few hundred more
	// answers while the nodes' rules catch up.
	eventually(t, ctx, 3*time.Minute, "every replica of before the rollout gone", func(context.Context) (bool, string) {
		for _, pod := range operatorPods(t, ctx) {
			if old[pod.Name] {
				return false, pod.Name + " " + podState(&pod)
			}
		}
		return true, ""
	})
	const after = 200
	admissions.waitAnswers(t, ctx, after, "after the old replicas are gone")
	admissions.Stop()

	_, admitted, failed := admissions.counts()
	t.Logf("%d admissions during the rollout and until %d answers after its old replicas were gone (%s), %d failed",
		admitted, after, time.Since(start).Round(time.Second), len(failed))
	if len(failed) > 0 {
		t.Errorf("the API server failed %d admissions while the operator rolled out; first: %s", len(failed), failed[0])
		seen := map[string]bool{}
		for _, f := range failed {
			if msg := f[strings.LastIndex(f, ": ")+2:]; !seen[msg] {
				seen[msg] = true
				t.Logf("failure: %s", f)
			}
		}
	}
	if admitted == 0 {
		t.Errorf("no admission succeeded during the rollout")
	}
}
