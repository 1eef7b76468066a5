package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// readyCacheWait bounds how long one /readyz request waits for the caches.
const readyCacheWait = time.Second

// addReadyChecks makes /readyz answer ready only once the webhook server
// serves and the informers the webhooks read have synced: before that an
// admission would be answered from an empty cache (or not at all), so the
// Service must not send this replica any. It fails again once the replica
// drains to stop.
func addReadyChecks(mgr ctrl.Manager, d *drain) error {
	if err := mgr.AddReadyzCheck("webhook-server", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return fmt.Errorf("add webhook server ready check: %w", err)
	}
	if err := mgr.AddReadyzCheck("caches-synced", cacheSyncedChecker(mgr.GetCache())); err != nil {
		return fmt.Errorf("add cache ready check: %w", err)
	}
	if err := mgr.AddReadyzCheck("shutdown", d.readyCheck); err != nil {
		return fmt.Errorf("add shutdown ready check: %w", err)
	}
	return nil
}

// cacheSyncedChecker fails until every informer started in c has synced.
func cacheSyncedChecker(c cache.Cache) func(*http.Request) error {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), readyCacheWait)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("informer caches have not synced yet")
		}
		return nil
	}
}
