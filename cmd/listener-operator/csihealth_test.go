package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestCSIHealthzProbesTheDriver runs `listener-operator csi --mode=node`
// and reads /healthz on its metrics port as the kubelet's liveness probe
// does: "ok" once the driver answers CSI Probe over its socket.
func TestCSIHealthzProbesTheDriver(t *testing.T) {
	e := testenv.Require(t, env)
	t.Setenv("KUBECONFIG", e.Kubeconfig)
	dir := t.TempDir()
	socket := filepath.Join(dir, "csi.sock")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	ctx, cancel := context.WithCancel(t.Context())
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"csi", "--mode=node", "--node-name=worker-1", "--csi-endpoint=unix://" + socket, "--metrics-bind-address=" + addr}, &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("csi command exited with %d: %s", code, stderr.String())
		}
	})
	var body string
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK && strings.TrimSpace(body) == "ok", nil
	})
	if err != nil {
		t.Fatalf("/healthz never said ok (last: %q; stderr: %s)", body, stderr.String())
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
