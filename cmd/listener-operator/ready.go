package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/listener-operator/listener-operator/caches"
)

// readyCacheWait bounds how long one /readyz request waits for the caches.
const readyCacheWait = time.Second

// addReadyChecks makes /readyz answer ready only once the webhook server
// serves and the informers the webhooks read (and the namespaces' default
// classes) have synced: before that an admission would be answered from an
// empty cache (or not at all), so the Service must not send this replica
// any. It fails again once the replica drains to stop.
func addReadyChecks(mgr ctrl.Manager, d *drain, namespaces *caches.NamespaceDefaults) error {
	if err := mgr.AddReadyzCheck("webhook-server", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return fmt.Errorf("add webhook server ready check: %w", err)
	}
	if err := mgr.AddReadyzCheck("caches-synced", syncedChecker("informer caches", mgr.GetCache().WaitForCacheSync)); err != nil {
		return fmt.Errorf("add cache ready check: %w", err)
	}
	if err := mgr.AddReadyzCheck("namespaces-listed", syncedChecker("the namespaces' default classes", namespaces.WaitForSync)); err != nil {
		return fmt.Errorf("add namespace ready check: %w", err)
	}
	if err := mgr.AddReadyzCheck("shutdown", d.readyCheck); err != nil {
		return fmt.Errorf("add shutdown ready check: %w", err)
	}
	return nil
}

// syncedChecker fails until wait reports that what is named has synced.
func syncedChecker(what string, wait func(context.Context) bool) func(*http.Request) error {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), readyCacheWait)
		defer cancel()
		if !wait(ctx) {
			return fmt.Errorf("%s have not synced yet", what)
		}
		return nil
	}
}
