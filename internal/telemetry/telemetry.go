package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/listener-operator/listener-operator/internal/version"
)

// ServiceName is the default service.name of every span (OTEL_SERVICE_NAME
// overrides it); the component attribute tells the parts apart.
const ServiceName = "listener-operator"

// instrumentation is the name of the tracer the operator's spans come from.
const instrumentation = "github.com/listener-operator/listener-operator"

// Protocols of the OTLP exporter.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Config is what the environment asks for.
type Config struct {
	// Enabled exports traces.
	Enabled bool
	// Protocol is ProtocolHTTP or ProtocolGRPC.
	Protocol string
}

// ConfigFromEnv reads the standard OpenTelemetry variables through getenv
// (os.Getenv). Tracing is on with OTEL_TRACES_EXPORTER=otlp, or when that
// is unset and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT is set; OTEL_TRACES_EXPORTER=none and
// OTEL_SDK_DISABLED=true turn it off. The exporter itself reads the rest
// (endpoint, headers, certificates, timeout, compression), the SDK the
// sampler (OTEL_TRACES_SAMPLER) and the batch settings (OTEL_BSP_*).
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return Config{}, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return Config{}, nil
	case "":
		if getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
			return Config{}, nil
		}
	case "otlp":
	default:
		return Config{}, fmt.Errorf("OTEL_TRACES_EXPORTER=%q is not supported: set otlp (with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or none", exp)
	}
	cfg := Config{Enabled: true, Protocol: ProtocolHTTP}
	name := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	p := strings.TrimSpace(getenv(name))
	if p == "" {
		name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		p = strings.TrimSpace(getenv(name))
	}
	switch p {
	case "", ProtocolHTTP:
	case ProtocolGRPC:
		cfg.Protocol = ProtocolGRPC
	default:
		return Config{}, fmt.Errorf("%s=%q is not supported: set %s or %s", name, p, ProtocolHTTP, ProtocolGRPC)
	}
	return cfg, nil
}

// Tracing is the operator's tracer and its exporter. A nil *Tracing is
// tracing switched off: every method then does nothing and every wrapper
// returns what it was given.
type Tracing struct {
	provider   *sdktrace.TracerProvider
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
}

// New builds the tracer cfg asks for, nil when cfg is not Enabled.
// component ("controller", "csi-node", …) becomes the
// listener_operator.component resource attribute. Export errors go to log.
func New(ctx context.Context, cfg Config, component string, log logr.Logger) (*Tracing, error) {
	if !cfg.Enabled {
		return nil, nil
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	if cfg.Protocol == ProtocolGRPC {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("create the OTLP trace exporter (check OTEL_EXPORTER_OTLP_TRACES_ENDPOINT): %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(
			attribute.String("service.name", ServiceName),
			attribute.String("service.version", version.Version),
			attribute.String("listener_operator.component", component),
		),
		resource.WithTelemetrySDK(),
		resource.WithHost(), // the pod's name
		// Last, so that OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
		resource.WithFromEnv(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("trace resource (check OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Error(err, "OpenTelemetry") }))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return newTracing(tp), nil
}

// newTracing wraps a provider (tests give one that records in memory).
func newTracing(tp *sdktrace.TracerProvider) *Tracing {
	return &Tracing{
		provider:   tp,
		tracer:     tp.Tracer(instrumentation, trace.WithInstrumentationVersion(version.Version)),
		propagator: propagation.TraceContext{},
	}
}

// FromEnv is ConfigFromEnv then New.
func FromEnv(ctx context.Context, getenv func(string) string, component string, log logr.Logger) (*Tracing, error) {
	cfg, err := ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	return New(ctx, cfg, component, log)
}

// Enabled reports whether spans are exported.
func (t *Tracing) Enabled() bool { return t != nil }

// Shutdown exports the spans still buffered and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	if err := t.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("flush traces: %w", err)
	}
	return nil
}
