package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Reconcile span attributes.
const (
	AttrController = attribute.Key("listener_operator.controller")
	AttrRequeue    = attribute.Key("listener_operator.requeue_after")
)

// Reconciler wraps r, the reconciler of the named controller, in a span
// per reconcile, carried in its context. Off (t nil), it returns r.
func (t *Tracing) Reconciler(controller string, r reconcile.Reconciler) reconcile.Reconciler {
	if t == nil {
		return r
	}
	return tracedReconciler{r: r, t: t, controller: controller}
}

type tracedReconciler struct {
	r          reconcile.Reconciler
	t          *Tracing
	controller string
}

func (tr tracedReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx, span := tr.t.tracer.Start(ctx, "reconcile "+tr.controller, trace.WithAttributes(
		AttrController.String(tr.controller),
		AttrNamespace.String(req.Namespace),
		AttrName.String(req.Name),
	))
	defer span.End()
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("traceID", span.SpanContext().TraceID().String()))
	res, err := tr.r.Reconcile(ctx, req)
	if res.RequeueAfter > 0 {
		span.SetAttributes(AttrRequeue.String(res.RequeueAfter.String()))
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	return res, err
}
