package main

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	csiapi "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// csiHealth answers /healthz of the CSI subcommand the way kubernetes-csi's
// livenessprobe sidecar would, without another image: once the driver
// serves its socket, every check calls the CSI Probe over that socket, so a
// hung gRPC server fails the kubelet's liveness probe and restarts the
// container. Before that (caches still syncing, bounded by
// --cache-sync-timeout) it reports that it is starting.
type csiHealth struct {
	endpoint string // the --csi-endpoint the driver serves
	timeout  time.Duration
	serving  atomic.Bool
}

func newCSIHealth(endpoint string) *csiHealth {
	return &csiHealth{endpoint: endpoint, timeout: 3 * time.Second}
}

// Serving records that the driver's socket is open.
func (h *csiHealth) Serving() { h.serving.Store(true) }

// check calls Probe over the socket and reports why it failed.
func (h *csiHealth) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	conn, err := grpc.NewClient(h.endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", h.endpoint, err)
	}
	defer conn.Close()
	resp, err := csiapi.NewIdentityClient(conn).Probe(ctx, &csiapi.ProbeRequest{})
	if err != nil {
		return fmt.Errorf("CSI Probe over %s: %w", h.endpoint, err)
	}
	if r := resp.GetReady(); r != nil && !r.GetValue() {
		return fmt.Errorf("CSI Probe over %s: driver not ready", h.endpoint)
	}
	return nil
}

func (h *csiHealth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.serving.Load() {
		fmt.Fprintln(w, "starting: the CSI socket opens once the caches have synced")
		return
	}
	if err := h.check(r.Context()); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}
