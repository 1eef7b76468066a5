package telemetry

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/rest"
)

// WrapConfig makes the clients built from cfg trace their API calls: a
// span for each request made within a traced admission, reconcile or CSI
// call (informers' lists and watches, leader election and other calls
// outside one make none), with a traceparent header for an API server that
// traces. Off (t nil), cfg is left as it is.
func (t *Tracing) WrapConfig(cfg *rest.Config) {
	if t == nil {
		return
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return otelhttp.NewTransport(rt,
			otelhttp.WithTracerProvider(t.provider),
			otelhttp.WithPropagators(t.propagator),
			otelhttp.WithFilter(func(r *http.Request) bool {
				return trace.SpanContextFromContext(r.Context()).IsValid()
			}),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
				return r.Method + " " + r.URL.Path
			}),
		)
	})
}
