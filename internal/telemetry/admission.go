package telemetry

import (
	"context"
	"net/http"

	jsoniter "github.com/json-iterator/go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Span attributes shared by admission, reconcile and CSI spans; a pod's
// admission and its volume's publish are found together by these.
const (
	AttrNamespace = attribute.Key("k8s.namespace.name")
	AttrPodName   = attribute.Key("k8s.pod.name")
	AttrPodUID    = attribute.Key("k8s.pod.uid")
)

// Admission span attributes.
const (
	AttrWebhook      = attribute.Key("listener_operator.webhook")
	AttrRequestUID   = attribute.Key("k8s.admission.uid")
	AttrOperation    = attribute.Key("k8s.admission.operation")
	AttrKind         = attribute.Key("k8s.admission.kind")
	AttrName         = attribute.Key("k8s.object.name")
	AttrGenerateName = attribute.Key("k8s.object.generate_name")
	AttrAllowed      = attribute.Key("k8s.admission.allowed")
	AttrPatched      = attribute.Key("k8s.admission.patched")
)

// WebhookServer returns s with every admission webhook registered on it
// traced: one span per request (a child of the API server's span when it
// sends a traceparent header), carried in the handler's context, so the
// API calls made through a client from WrapConfig are its children. Off
// (t nil), it returns s itself.
func (t *Tracing) WebhookServer(s webhook.Server) webhook.Server {
	if t == nil {
		return s
	}
	return tracedServer{Server: s, t: t}
}

type tracedServer struct {
	webhook.Server
	t *Tracing
}

// Register wraps an *admission.Webhook's handler in a span; other handlers
// are registered as they are.
func (s tracedServer) Register(path string, hook http.Handler) {
	if wh, ok := hook.(*admission.Webhook); ok && wh.Handler != nil {
		wh.Handler = s.t.AdmissionHandler(path, wh.Handler)
		inner := wh.WithContextFunc
		wh.WithContextFunc = func(ctx context.Context, r *http.Request) context.Context {
			if inner != nil {
				ctx = inner(ctx, r)
			}
			return s.t.propagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
		}
	}
	s.Server.Register(path, hook)
}

// AdmissionHandler wraps h, served on path, in a span per request. Off (t
// nil), it returns h.
func (t *Tracing) AdmissionHandler(path string, h admission.Handler) admission.Handler {
	if t == nil {
		return h
	}
	return tracedHandler{h: h, t: t, path: path}
}

type tracedHandler struct {
	h    admission.Handler
	t    *Tracing
	path string
}

// objectMeta is what a span names of the admitted object.
type objectMeta struct {
	Metadata struct {
		Name         string `json:"name"`
		GenerateName string `json:"generateName"`
		UID          string `json:"uid"`
	} `json:"metadata"`
}

var metaDecoder = jsoniter.ConfigCompatibleWithStandardLibrary

func (th tracedHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	attrs := []attribute.KeyValue{
		AttrWebhook.String(th.path),
		AttrRequestUID.String(string(req.UID)),
		AttrOperation.String(string(req.Operation)),
		AttrKind.String(req.Kind.Kind),
		AttrNamespace.String(req.Namespace),
	}
	raw := req.Object.Raw
	if len(raw) == 0 {
		raw = req.OldObject.Raw
	}
	var m objectMeta
	if len(raw) > 0 && metaDecoder.Unmarshal(raw, &m) == nil {
		name := m.Metadata.Name
		if name == "" {
			name = req.Name
		}
		attrs = append(attrs, AttrName.String(name))
		if m.Metadata.GenerateName != "" {
			attrs = append(attrs, AttrGenerateName.String(m.Metadata.GenerateName))
		}
		if req.Kind.Kind == "Pod" && req.Kind.Group == "" {
			attrs = append(attrs, AttrPodName.String(name))
			if m.Metadata.UID != "" {
				attrs = append(attrs, AttrPodUID.String(m.Metadata.UID))
			}
		}
	}
	ctx, span := th.t.tracer.Start(ctx, "admit "+th.path, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	defer span.End()
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("traceID", span.SpanContext().TraceID().String()))

	resp := th.h.Handle(ctx, req)

	span.SetAttributes(AttrAllowed.Bool(resp.Allowed), AttrPatched.Bool(len(resp.Patches) > 0 || len(resp.Patch) > 0))
	if !resp.Allowed {
		msg := "denied"
		if resp.Result != nil && resp.Result.Message != "" {
			msg = resp.Result.Message
		}
		span.SetStatus(codes.Error, msg)
	}
	return resp
}
