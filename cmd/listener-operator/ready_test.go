package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/listener-operator/listener-operator/caches"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestSyncedCheckers: each of /readyz's sync checks fails while what it
// waits for has not synced (here: not even started) and passes once it
// has, against a real API server: the webhooks' informers and the
// namespaces' default classes.
func TestSyncedCheckers(t *testing.T) {
	e := testenv.Require(t, env)
	for _, tc := range []struct {
		name string
		// newWait returns what the check waits on and what starts it.
		newWait func(t *testing.T) (wait func(context.Context) bool, start func(context.Context))
	}{
		{"informer caches", func(t *testing.T) (func(context.Context) bool, func(context.Context)) {
			c, err := cache.New(e.Config, cache.Options{Scheme: e.Scheme})
			if err != nil {
				t.Fatal(err)
			}
			return c.WaitForCacheSync, func(ctx context.Context) {
				if _, err := c.GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
					t.Error(err)
				}
				go func() { _ = c.Start(ctx) }()
			}
		}},
		{"namespaces", func(t *testing.T) (func(context.Context) bool, func(context.Context)) {
			d, err := caches.NewNamespaceDefaults(e.Config, nil)
			if err != nil {
				t.Fatal(err)
			}
			return d.WaitForSync, func(ctx context.Context) { go func() { _ = d.Start(ctx) }() }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wait, start := tc.newWait(t)
			check := syncedChecker(tc.name, wait)
			req := httptest.NewRequest("GET", "/readyz", nil)
			if err := check(req); err == nil || !strings.Contains(err.Error(), "not synced") {
				t.Fatalf("before it started: got %v, want a not-synced error", err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			start(ctx)
			testenv.Eventually(t, 30*time.Second, "the check passes once synced", func() error {
				return check(req)
			})
		})
	}
}
