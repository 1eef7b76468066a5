package csi

import (
	"context"
	"fmt"
	"path"
	"runtime/debug"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Metrics are the driver's per-call Prometheus metrics.
type Metrics struct {
	duration *prometheus.HistogramVec
	requests *prometheus.CounterVec
	panics   *prometheus.CounterVec
}

// NewMetrics registers the driver's metrics on reg (controller-runtime's
// metrics.Registry in the binary; a fresh registry in tests).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "listener_operator_csi_request_duration_seconds",
			Help:    "Duration of CSI calls by method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"method"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "listener_operator_csi_requests_total",
			Help: "CSI calls by method and gRPC result code (OK, or the error's code).",
		}, []string{"method", "code"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "listener_operator_csi_panics_total",
			Help: "CSI calls that panicked (answered with Internal; the driver keeps serving).",
		}, []string{"method"}),
	}
	for _, c := range []prometheus.Collector{m.duration, m.requests, m.panics} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register CSI metrics: %w", err)
		}
	}
	return m, nil
}

// quiet says whether a method is one that sidecars and kubelet call over
// and over; their successes log only at V(1) (NodePublishVolume logs a
// line of its own when it changes a tree).
func quiet(method string) bool {
	switch method {
	case "Probe", "GetPluginInfo", "GetPluginCapabilities", "ControllerGetCapabilities", "NodeGetCapabilities", "NodeGetInfo", "NodePublishVolume":
		return true
	}
	return false
}

// interceptor logs every call (method, volume id, duration, code; never the
// request, which may carry secrets) and records it in m.
func interceptor(log logr.Logger, m *Metrics) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		method := path.Base(info.FullMethod)
		l := log.WithValues("method", method)
		if v, ok := req.(interface{ GetVolumeId() string }); ok && v.GetVolumeId() != "" {
			l = l.WithValues("volumeID", v.GetVolumeId())
		}
		resp, err := recovered(logr.NewContext(ctx, l), req, handler, func() {
			if m != nil {
				m.panics.WithLabelValues(method).Inc()
			}
		})
		took := time.Since(start)
		code := status.Code(err)
		if m != nil {
			m.duration.WithLabelValues(method).Observe(took.Seconds())
			m.requests.WithLabelValues(method, code.String()).Inc()
		}
		switch {
		case err != nil:
			l.Info("CSI call failed", "duration", took, "code", code.String(), "error", status.Convert(err).Message())
		case quiet(method):
			l.V(1).Info("CSI call", "duration", took, "code", codes.OK.String())
		default:
			l.Info("CSI call", "duration", took, "code", codes.OK.String())
		}
		return resp, err
	}
}

// recovered calls handler and turns a panic into Internal: one bad call
// (a bug meeting odd input) must not take down the node plugin and every
// pod publish on the node with it. The stack goes to the log.
func recovered(ctx context.Context, req any, handler grpc.UnaryHandler, onPanic func()) (resp any, err error) {
	defer func() {
		if p := recover(); p != nil {
			onPanic()
			logr.FromContextOrDiscard(ctx).Error(fmt.Errorf("panic: %v", p), "CSI call panicked", "stack", string(debug.Stack()))
			resp, err = nil, status.Errorf(codes.Internal, "internal error in the listener CSI driver (panic: %v); see its log", p)
		}
	}()
	return handler(ctx, req)
}
