package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// TestDrain: once the process is told to stop, the replica fails /readyz at
// once, keeps answering webhooks (each answer closing its connection) for
// the shutdown delay, and only then lets the manager stop.
func TestDrain(t *testing.T) {
	d := &drain{delay: 2 * time.Second}
	srv := httptest.NewServer(d.closeConnections(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("admitted"))
	})))
	defer srv.Close()
	get := func() *http.Response {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL)
		if err != nil {
			t.Fatalf("webhook request: %v", err)
		}
		resp.Body.Close()
		return resp
	}

	parent, stop := context.WithCancel(t.Context())
	ctx := d.context(parent, logr.Discard())
	if err := d.readyCheck(nil); err != nil {
		t.Errorf("ready check before the stop: %v", err)
	}
	if resp := get(); resp.StatusCode != http.StatusOK || resp.Close {
		t.Errorf("answer before the stop: %d, close=%v; want 200 on a kept-alive connection", resp.StatusCode, resp.Close)
	}

	stop()
	stoppedAt := time.Now()
	deadline := time.Now().Add(time.Second)
	for d.readyCheck(nil) == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := d.readyCheck(nil); err == nil {
		t.Error("ready check still passes after the stop")
	}
	if resp := get(); resp.StatusCode != http.StatusOK || !resp.Close {
		t.Errorf("answer while draining: %d, close=%v; want 200 and Connection: close", resp.StatusCode, resp.Close)
	}
	if ctx.Err() != nil && time.Since(stoppedAt) < d.delay {
		t.Fatalf("the manager's context ended %s after the stop, before the %s delay", time.Since(stoppedAt), d.delay)
	}
	select {
	case <-ctx.Done():
		if waited := time.Since(stoppedAt); waited < d.delay {
			t.Errorf("the manager's context ended %s after the stop, want %s", waited, d.delay)
		}
	case <-time.After(time.Minute):
		t.Fatal("the manager's context never ended")
	}
}

// TestDrainWithoutDelay: --shutdown-delay=0 stops at once.
func TestDrainWithoutDelay(t *testing.T) {
	d := &drain{}
	parent, stop := context.WithCancel(t.Context())
	ctx := d.context(parent, logr.Discard())
	stop()
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("the manager's context never ended")
	}
}
