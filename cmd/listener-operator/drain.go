package main

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// drain keeps a replica answering admissions for a while after it is told
// to stop. Endpoints change asynchronously: when a pod is deleted, every
// node's kube-proxy (the API server's node too) goes on sending new
// connections to it until it has rewritten its rules, a second or more on
// a busy node, and the API server goes on sending requests over the
// connections it holds. A replica that stopped at once made those
// admissions fail ("failed calling webhook ... context deadline exceeded",
// "broken pipe") right after `helm upgrade --wait` or a rolling restart.
//
// While draining, /readyz fails and every webhook response closes its
// connection, so that the API server dials again and reaches a replica that
// stays; once the delay is over, the manager stops as before.
type drain struct {
	delay    time.Duration
	draining atomic.Bool
}

// context returns a context that is cancelled d.delay after parent is (at
// once when the delay is zero); draining starts when parent is cancelled.
func (d *drain) context(parent context.Context, log logr.Logger) context.Context {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	go func() {
		<-parent.Done()
		d.draining.Store(true)
		if d.delay > 0 {
			log.Info("stopping: serving webhooks while the Service's endpoints catch up", "shutdownDelay", d.delay)
			time.Sleep(d.delay)
		}
		cancel()
	}()
	return ctx
}

// readyCheck fails while draining: the replica must get no new traffic.
func (d *drain) readyCheck(*http.Request) error {
	if d.draining.Load() {
		return errors.New("shutting down")
	}
	return nil
}

// closeConnections has HTTP/1 responses close their connection while
// draining. (An HTTP/2 connection is told to go away when the server
// stops.)
func (d *drain) closeConnections(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 1 && d.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// drainingServer is a webhook server whose handlers close their
// connections while d drains.
type drainingServer struct {
	webhook.Server
	d *drain
}

// Register registers hook, wrapped, on the server.
func (s drainingServer) Register(path string, hook http.Handler) {
	s.Server.Register(path, s.d.closeConnections(hook))
}
