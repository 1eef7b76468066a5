package main

import (
	"context"
	"os"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"github.com/listener-operator/listener-operator/internal/telemetry"
)

// startTracing sets up tracing from the OTEL_* environment (nil when it
// asks for none) and makes the clients built from cfg trace their calls.
// stop flushes the spans still buffered; call it on exit.
func startTracing(ctx context.Context, cfg *rest.Config, component string, log logr.Logger) (tr *telemetry.Tracing, stop func(), err error) {
	tr, err = telemetry.FromEnv(ctx, os.Getenv, component, log.WithName("telemetry"))
	if err != nil {
		return nil, nil, err
	}
	tr.WrapConfig(cfg)
	if tr.Enabled() {
		log.Info("exporting traces over OTLP", "component", component)
	}
	return tr, func() {
		// The run's context has ended by now: flush within a bound of
		// our own.
		flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tr.Shutdown(flushCtx); err != nil {
			log.Error(err, "flush traces")
		}
	}, nil
}
