//go:build e2e

package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	stop := make(chan struct{})
	var (
		mu       sync.Mutex
		admitted int
		failed   []string
		wg       sync.WaitGroup
	)
	for range clients {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				err := k8s.client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
				mu.Lock()
				switch {
				case err == nil || apierrors.IsAlreadyExists(err):
					admitted++
				case ctx.Err() == nil:
					failed = append(failed, err.Error())
				}
				mu.Unlock()
			}
		})
	}

	start := time.Now()
	k8s.kubectlOK(t, ctx, "", "rollout", "restart", "-n", operatorNamespace, "deployment/listener-operator")
	k8s.kubectlOK(t, ctx, "", "rollout", "status", "-n", operatorNamespace, "deployment/listener-operator", "--timeout=3m")
	// The last old replica stops once the rollout is complete: keep asking
	// while it goes and the nodes' rules catch up.
	time.Sleep(15 * time.Second)
	close(stop)
	wg.Wait()

	t.Logf("%d admissions during the rollout (%s) and the 15 s after it, %d failed", admitted, time.Since(start).Round(time.Second), len(failed))
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
