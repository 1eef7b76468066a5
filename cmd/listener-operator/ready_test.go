package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestCacheSyncedChecker: /readyz's cache check fails while the informers
// have not synced (here: the cache has not even started) and passes once
// they have, against a real API server.
func TestCacheSyncedChecker(t *testing.T) {
	e := testenv.Require(t, env)
	c, err := cache.New(e.Config, cache.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	check := cacheSyncedChecker(c)
	req := httptest.NewRequest("GET", "/readyz", nil)
	if err := check(req); err == nil || !strings.Contains(err.Error(), "not synced") {
		t.Fatalf("before the cache started: got %v, want a not-synced error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := c.GetInformer(ctx, &corev1.Namespace{}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	testenv.Eventually(t, 30*time.Second, "the cache check passes once synced", func() error {
		return check(req)
	})
}
