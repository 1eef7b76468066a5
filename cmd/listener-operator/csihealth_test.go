package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/listener-operator/listener-operator/csi"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestCSIHealthzProbesTheDriver serves the real CSI driver on a socket and
// the CSI subcommand's health server with its /healthz, and reads /healthz
// as the kubelet's liveness probe does: "ok" once the driver answers CSI
// Probe over its socket. (The subcommand itself runs in
// TestCSICommandServesNodeService.)
func TestCSIHealthzProbesTheDriver(t *testing.T) {
	e := testenv.Require(t, env)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	socket := filepath.Join(t.TempDir(), "csi.sock")
	srv, err := csi.NewServer(csi.Options{Controller: true, Reader: e.Client, Live: e.Client, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := csi.Listen("unix://" + socket)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lis) }()
	defer func() { cancel(); <-served }()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	health := newCSIHealth("unix://" + socket)
	hs := newHealthServer(addr, health)
	go func() { _ = hs.serve(ctx) }()

	get := func() (int, string) {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	var code int
	var body string
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		code, body = get()
		return code != 0, nil
	})
	if err != nil || code != http.StatusOK || !strings.HasPrefix(body, "starting") {
		t.Fatalf("before the driver is marked serving: %d %q, want 200 starting", code, body)
	}
	health.Serving()
	if code, body = get(); code != http.StatusOK || body != "ok" {
		t.Errorf("/healthz with the driver serving: %d %q, want 200 ok", code, body)
	}
}

// TestCSIHealthzFailsWithoutADriver: a socket nobody answers on fails the
// probe with a message naming it; before the driver serves, it is starting.
func TestCSIHealthzFailsWithoutADriver(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "csi.sock")
	h := newCSIHealth("unix://" + socket)
	h.timeout = 500 * time.Millisecond

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "starting") {
		t.Errorf("before serving: %d %q, want 200 starting", rec.Code, rec.Body.String())
	}

	// A stale socket file with no server behind it.
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	h.Serving()
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), socket) {
		t.Errorf("no driver: %d %q, want 503 naming %s", rec.Code, rec.Body.String(), socket)
	}
}
