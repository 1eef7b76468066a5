package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func TestConfigFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    Config
		wantErr string
	}{
		{name: "nothing set: off", env: nil, want: Config{}},
		{name: "endpoint only", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, want: Config{Enabled: true, Protocol: ProtocolHTTP}},
		{name: "traces endpoint only", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, want: Config{Enabled: true, Protocol: ProtocolHTTP}},
		{name: "otlp exporter without endpoint (the exporter's default)", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, want: Config{Enabled: true, Protocol: ProtocolHTTP}},
		{name: "none wins over an endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, want: Config{}},
		{name: "SDK disabled", env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, want: Config{}},
		{name: "grpc", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, want: Config{Enabled: true, Protocol: ProtocolGRPC}},
		{name: "traces protocol wins", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, want: Config{Enabled: true, Protocol: ProtocolHTTP}},
		{name: "unsupported exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: `OTEL_TRACES_EXPORTER="zipkin" is not supported: set otlp`},
		{name: "unsupported protocol", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, wantErr: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="http/json" is not supported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ConfigFromEnv(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// recording is tracing that keeps the ended spans in memory.
func recording() (*Tracing, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	return newTracing(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))), rec
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value.Emit()
	}
	return m
}

func TestOffChangesNothing(t *testing.T) {
	var off *Tracing
	if off.Enabled() {
		t.Error("nil Tracing says it is enabled")
	}
	srv := webhook.NewServer(webhook.Options{})
	if got := off.WebhookServer(srv); got != srv {
		t.Errorf("WebhookServer wrapped the server: %T", got)
	}
	var h admission.Handler = admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })
	if got := off.AdmissionHandler("/p", h); got == nil {
		t.Error("AdmissionHandler returned nil")
	} else if _, wrapped := got.(tracedHandler); wrapped {
		t.Error("AdmissionHandler wrapped the handler")
	}
	r := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil })
	if _, wrapped := off.Reconciler("c", r).(tracedReconciler); wrapped {
		t.Error("Reconciler wrapped the reconciler")
	}
	if off.UnaryServerInterceptor() != nil {
		t.Error("UnaryServerInterceptor is not nil")
	}
	cfg := &rest.Config{}
	off.WrapConfig(cfg)
	if cfg.WrapTransport != nil {
		t.Error("WrapConfig wrapped the transport")
	}
	if err := off.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
	if tr, err := FromEnv(context.Background(), func(string) string { return "" }, "controller", logr.Discard()); tr != nil || err != nil {
		t.Errorf("FromEnv with no environment = %v, %v; want nil, nil", tr, err)
	}
}

// podReview is an AdmissionReview of a pod's CREATE.
func podReview(t testing.TB) []byte {
	pod := corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "apps"}}
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "req-1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: "apps", Name: "web-0", Operation: admissionv1.Create,
			Object: runtime.RawExtension{Raw: raw},
		},
	}
	b, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func serveReview(t testing.TB, mux http.Handler, path string, body []byte, header http.Header) admissionv1.AdmissionReview {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, req)
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatalf("answer %q: %v", w.Body.String(), err)
	}
	return out
}

// An admission is a span that continues the API server's trace, names the
// pod, and has the API calls its handler makes as children.
func TestAdmissionSpan(t *testing.T) {
	tr, rec := recording()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"apps"}}`))
	}))
	defer api.Close()
	cfg := &rest.Config{Host: api.URL}
	tr.WrapConfig(cfg)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A client call outside any traced request makes no span.
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "apps", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name        string
		allow       bool
		wantStatus  codes.Code
		wantAllowed string
	}{
		{name: "allowed", allow: true, wantStatus: codes.Unset, wantAllowed: "true"},
		{name: "denied", allow: false, wantStatus: codes.Error, wantAllowed: "false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec.Reset()
			srv := tr.WebhookServer(webhook.NewServer(webhook.Options{}))
			srv.Register("/mutate-v1-pod", &admission.Webhook{Handler: admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
				if _, err := cs.CoreV1().Namespaces().Get(ctx, req.Namespace, metav1.GetOptions{}); err != nil {
					return admission.Errored(http.StatusInternalServerError, err)
				}
				if !tc.allow {
					return admission.Denied("no listener class named nope")
				}
				return admission.Allowed("")
			})})
			const parentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
			resp := serveReview(t, srv.WebhookMux(), "/mutate-v1-pod", podReview(t), http.Header{"Traceparent": {"00-" + parentTrace + "-00f067aa0ba902b7-01"}})
			if resp.Response == nil || resp.Response.Allowed != tc.allow {
				t.Fatalf("answer %+v, want allowed=%v", resp.Response, tc.allow)
			}
			spans := rec.Ended()
			if len(spans) != 2 {
				names := []string{}
				for _, s := range spans {
					names = append(names, s.Name())
				}
				t.Fatalf("spans %q, want the API call and the admission", names)
			}
			call, adm := spans[0], spans[1]
			if adm.Name() != "admit /mutate-v1-pod" {
				t.Errorf("admission span %q", adm.Name())
			}
			if got := adm.SpanContext().TraceID().String(); got != parentTrace {
				t.Errorf("admission trace %s, want the API server's %s", got, parentTrace)
			}
			if call.Name() != "GET /api/v1/namespaces/apps" || call.Parent().SpanID() != adm.SpanContext().SpanID() {
				t.Errorf("API call span %q (parent %s), want GET /api/v1/namespaces/apps under the admission (%s)", call.Name(), call.Parent().SpanID(), adm.SpanContext().SpanID())
			}
			a := attrs(adm)
			for k, want := range map[attribute.Key]string{
				AttrNamespace: "apps", AttrPodName: "web-0", AttrOperation: "CREATE", AttrKind: "Pod",
				AttrRequestUID: "req-1", AttrAllowed: tc.wantAllowed, AttrWebhook: "/mutate-v1-pod",
			} {
				if a[k] != want {
					t.Errorf("attribute %s = %q, want %q", k, a[k], want)
				}
			}
			if adm.Status().Code != tc.wantStatus {
				t.Errorf("status %v, want %v", adm.Status(), tc.wantStatus)
			}
			if !tc.allow && adm.Status().Description != "no listener class named nope" {
				t.Errorf("status description %q, want the denial", adm.Status().Description)
			}
		})
	}
}

func TestReconcilerSpan(t *testing.T) {
	tr, rec := recording()
	r := tr.Reconciler("listener", reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{}, errors.New("create Service apps/web: forbidden")
	}))
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "apps", Name: "web"}}); err == nil {
		t.Fatal("the wrapper swallowed the error")
	}
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	a := attrs(s)
	if s.Name() != "reconcile listener" || a[AttrNamespace] != "apps" || a[AttrName] != "web" || a[AttrController] != "listener" {
		t.Errorf("span %q %v", s.Name(), a)
	}
	if s.Status().Code != codes.Error || s.Status().Description != "create Service apps/web: forbidden" {
		t.Errorf("status %+v, want the error", s.Status())
	}
}

func TestCSISpan(t *testing.T) {
	tr, rec := recording()
	ic := tr.UnaryServerInterceptor()
	const parentTrace = "0af7651916cd43dd8448eb211c80319c"
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("traceparent", "00-"+parentTrace+"-b7ad6b7169203331-01"))
	req := &csi.NodePublishVolumeRequest{VolumeId: "pvc-1", VolumeContext: map[string]string{
		"csi.storage.k8s.io/pod.uid": "6f1c", "csi.storage.k8s.io/pod.name": "web-0", "csi.storage.k8s.io/pod.namespace": "apps",
	}}
	info := &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Node/NodePublishVolume"}
	_, err := ic(ctx, req, info, func(context.Context, any) (any, error) {
		return nil, status.Error(grpccodes.FailedPrecondition, "pod has no node yet")
	})
	if status.Code(err) != grpccodes.FailedPrecondition {
		t.Fatalf("error %v, want the handler's", err)
	}
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	a := attrs(s)
	for k, want := range map[attribute.Key]string{
		AttrRPCMethod: "NodePublishVolume", AttrVolumeID: "pvc-1", AttrPodUID: "6f1c", AttrPodName: "web-0", AttrNamespace: "apps",
		AttrRPCCode: "9", "rpc.service": "csi.v1.Node",
	} {
		if a[k] != want {
			t.Errorf("attribute %s = %q, want %q", k, a[k], want)
		}
	}
	if s.Name() != "csi NodePublishVolume" || s.SpanContext().TraceID().String() != parentTrace {
		t.Errorf("span %q in trace %s, want csi NodePublishVolume in %s", s.Name(), s.SpanContext().TraceID(), parentTrace)
	}
	if s.Status().Code != codes.Error || s.Status().Description != "pod has no node yet" {
		t.Errorf("status %+v", s.Status())
	}
}
