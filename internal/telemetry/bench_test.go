package telemetry

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// BenchmarkAdmission serves a pod's AdmissionReview through a webhook
// server as cmd/ builds it: without this package (before), with tracing
// off (a nil *Tracing: what an unconfigured operator runs), and with
// tracing on (spans batched to an exporter that drops them). docs/benchmarks.md
// has the figures.
func BenchmarkAdmission(b *testing.B) {
	on := newTracing(sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter())))
	defer func() { _ = on.Shutdown(context.Background()) }()
	var off *Tracing
	body := podReview(b)
	for _, bc := range []struct {
		name string
		wrap func(webhook.Server) webhook.Server
	}{
		{"before", func(s webhook.Server) webhook.Server { return s }},
		{"off", off.WebhookServer},
		{"on", on.WebhookServer},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv := bc.wrap(webhook.NewServer(webhook.Options{}))
			srv.Register("/mutate-v1-pod", &admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
				return admission.Allowed("")
			})})
			mux := srv.WebhookMux()
			b.ReportAllocs()
			for b.Loop() {
				if resp := serveReview(b, mux, "/mutate-v1-pod", body, nil); resp.Response == nil || !resp.Response.Allowed {
					b.Fatalf("answer %+v", resp.Response)
				}
			}
		})
	}
}
