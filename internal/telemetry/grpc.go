package telemetry

import (
	"context"
	"path"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// CSI span attributes.
const (
	AttrRPCMethod = attribute.Key("rpc.method")
	AttrRPCCode   = attribute.Key("rpc.grpc.status_code")
	AttrVolumeID  = attribute.Key("csi.volume.id")
	AttrVolume    = attribute.Key("csi.volume.name")
)

// UnaryServerInterceptor traces every CSI call: one span per call (a child
// of the caller's when it sends a traceparent, as a kubelet with tracing
// does), carried in the handler's context. A NodePublishVolume span names
// the pod (namespace, name, UID) from the volume context. Off (t nil), it
// returns nil: add it only when it is not nil.
func (t *Tracing) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	if t == nil {
		return nil
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if md, ok := metadata.FromIncomingContext(ctx); ok {
			ctx = t.propagator.Extract(ctx, metadataCarrier(md))
		}
		method := path.Base(info.FullMethod)
		attrs := []attribute.KeyValue{AttrRPCMethod.String(method), attribute.String("rpc.system", "grpc"), attribute.String("rpc.service", path.Dir(info.FullMethod)[1:])}
		if v, ok := req.(interface{ GetVolumeId() string }); ok && v.GetVolumeId() != "" {
			attrs = append(attrs, AttrVolumeID.String(v.GetVolumeId()))
		}
		if v, ok := req.(interface{ GetName() string }); ok && v.GetName() != "" {
			attrs = append(attrs, AttrVolume.String(v.GetName()))
		}
		if v, ok := req.(interface{ GetVolumeContext() map[string]string }); ok {
			vc := v.GetVolumeContext()
			for key, attr := range map[string]attribute.Key{
				v1alpha1.ContextPodNamespace: AttrNamespace,
				v1alpha1.ContextPodName:      AttrPodName,
				v1alpha1.ContextPodUID:       AttrPodUID,
			} {
				if s := vc[key]; s != "" {
					attrs = append(attrs, attr.String(s))
				}
			}
		}
		ctx, span := t.tracer.Start(ctx, "csi "+method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		defer span.End()
		resp, err := handler(ctx, req)
		st := status.Convert(err)
		span.SetAttributes(AttrRPCCode.Int(int(st.Code())))
		if err != nil {
			span.SetStatus(codes.Error, st.Message())
		}
		return resp, err
	}
}

// metadataCarrier reads a trace context from gRPC metadata.
type metadataCarrier metadata.MD

func (c metadataCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c metadataCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c metadataCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
