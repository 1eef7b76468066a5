// Package telemetry sets up OpenTelemetry tracing from the standard
// OTEL_* environment and wraps the operator's entry points in spans:
// admission requests (a webhook.Server wrapper), reconciles (a
// reconcile.Reconciler wrapper), CSI calls (a gRPC interceptor) and the
// Kubernetes API calls they make (a rest.Config transport wrapper).
//
// Tracing is off unless OTEL_TRACES_EXPORTER=otlp or an OTLP endpoint is
// set (ConfigFromEnv). Off, New returns a nil *Tracing whose wrappers return
// what they are given unchanged, so an unconfigured operator runs exactly
// the code it runs without this package.
//
// A pod's admission and its volume's publish are separate traces (carrying
// a trace context on the pod would need a patch on every pod); they share
// the attributes k8s.namespace.name and k8s.pod.name, and k8s.pod.uid where
// the request carries it (the API server assigns a pod's UID only after
// mutating admission, so a CREATE admission has none).
package telemetry
