//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// hostAddress is the host on the cluster bridge, which every node's pods
// reach (HOST_IP in hack/cluster/settings.sh).
const hostAddress = "10.88.0.1"

// span is what the receiver keeps of an exported span.
type span struct {
	service, host    string
	name             string
	traceID, spanID  string
	parentID, status string
	attrs            map[string]string
}

// otlpReceiver is an OTLP/HTTP (protobuf) trace endpoint: it keeps every
// span it is sent.
type otlpReceiver struct {
	mu       sync.Mutex
	spans    []span
	requests map[string]string // remote address: last outcome
}

func (r *otlpReceiver) note(req *http.Request, outcome string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.requests == nil {
		r.requests = map[string]string{}
	}
	host, _, _ := net.SplitHostPort(req.RemoteAddr)
	r.requests[host] = outcome
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = http.MaxBytesReader(w, req.Body, 32<<20)
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(body)
		if err != nil {
			r.note(req, err.Error())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	data, err := io.ReadAll(body)
	if err != nil {
		r.note(req, err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var export coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &export); err != nil {
		r.note(req, err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []span
	for _, rs := range export.GetResourceSpans() {
		res := attrMap(rs.GetResource().GetAttributes())
		service, host := res["service.name"], res["host.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				got = append(got, span{
					service: service, host: host, name: s.GetName(),
					traceID: hex.EncodeToString(s.GetTraceId()), spanID: hex.EncodeToString(s.GetSpanId()),
					parentID: hex.EncodeToString(s.GetParentSpanId()), status: s.GetStatus().GetCode().String(),
					attrs: attrMap(s.GetAttributes()),
				})
			}
		}
	}
	r.note(req, fmt.Sprintf("ok, %d spans", len(got)))
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.mu.Unlock()
	resp, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch {
		case v.GetStringValue() != "":
			m[kv.GetKey()] = v.GetStringValue()
		default:
			m[kv.GetKey()] = strings.Trim(fmt.Sprint(v.GetValue()), "&{}")
		}
	}
	return m
}

// find returns the spans named name whose attributes include want.
func (r *otlpReceiver) find(name string, want map[string]string) []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []span
next:
	for _, s := range r.spans {
		if s.name != name {
			continue
		}
		for k, v := range want {
			if s.attrs[k] != v {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

func (r *otlpReceiver) names() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]int{}
	for _, s := range r.spans {
		seen[s.host+": "+s.name]++
	}
	return fmt.Sprintf("%v; requests by address: %v", seen, r.requests)
}

// With the standard OTEL_* environment set, the operator exports a span
// for a pod's admission and the CSI node plugin one for its volume's
// publish; both name the pod, the publish also by its UID.
func TestTracing(t *testing.T) {
	ctx := t.Context()
	recv := &otlpReceiver{}
	lis, err := net.Listen("tcp", hostAddress+":0")
	if err != nil {
		t.Fatalf("listen on the cluster bridge: %v", err)
	}
	srv := &http.Server{Handler: recv, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("OTLP receiver: %v", err)
		}
	}()
	t.Cleanup(func() { _ = srv.Close() })
	endpoint := "http://" + lis.Addr().String() + "/v1/traces"

	workloads := []struct{ kind, name, component, container string }{
		{"deployment", "listener-operator", "controller", "manager"},
		{"daemonset", "listener-operator-csi-node", "csi-node", "csi"},
	}
	// rolledOut waits until every pod of the workloads runs with (or
	// without) the endpoint: `rollout status` returns while replaced pods
	// still drain, and those answer webhooks and hold the leader lease for
	// a few seconds more.
	rolledOut := func(ctx context.Context, traced bool) {
		for _, w := range workloads {
			k8s.kubectlOK(t, ctx, "", "-n", operatorNamespace, "rollout", "status", w.kind+"/"+w.name, "--timeout=3m")
		}
		eventually(t, ctx, 2*time.Minute, "only pods of the new templates, one of them the leader", func(ctx context.Context) (bool, string) {
			names := map[string]bool{}
			for _, w := range workloads {
				var pods corev1.PodList
				if err := k8s.client.List(ctx, &pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"app.kubernetes.io/component": w.component}); err != nil {
					return false, err.Error()
				}
				for _, p := range pods.Items {
					if p.DeletionTimestamp != nil || hasEnv(&p, w.container, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint) != traced {
						return false, fmt.Sprintf("pod %s is not rolled out yet", p.Name)
					}
					names[p.Name] = true
				}
			}
			holder, err := leader(ctx)
			if err != nil || !names[holder] {
				return false, fmt.Sprintf("leader %q (%v)", holder, err)
			}
			return true, ""
		})
		webhooksAnswer(t, ctx)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		for _, w := range workloads {
			k8s.kubectlOK(t, ctx, "", "-n", operatorNamespace, "set", "env", w.kind+"/"+w.name, "-c", w.container,
				"OTEL_TRACES_EXPORTER-", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT-", "OTEL_BSP_SCHEDULE_DELAY-")
		}
		rolledOut(ctx, false)
	})
	for _, w := range workloads {
		k8s.kubectlOK(t, ctx, "", "-n", operatorNamespace, "set", "env", w.kind+"/"+w.name, "-c", w.container,
			"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+endpoint, "OTEL_BSP_SCHEDULE_DELAY=200")
	}
	rolledOut(ctx, true)

	ensureClass(t, ctx, listenerClass("cluster-internal", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}))
	ns := namespace(t, ctx, "e2e-trace")
	if err := k8s.client.Create(ctx, demoStatefulSet(ns, "traced", "cluster-internal", 1)); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	podsReady(t, ctx, ns, "traced", 1, podTimeout)
	var pod corev1.Pod
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "traced-0"}, &pod); err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.WithoutCancel(ctx)
		out, errOut, err := k8s.run(ctx, "", "-n", operatorNamespace, "get", "pods", "-o", "wide")
		t.Logf("operator pods (%v):\n%s%s", err, out, errOut)
		out, errOut, err = k8s.run(ctx, "", "-n", operatorNamespace, "logs", "-l", "app.kubernetes.io/component=controller", "--tail=-1", "--prefix", "--max-log-requests=10")
		var keep []string
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "OpenTelemetry") || strings.Contains(line, "traces") || strings.Contains(line, "leader") || strings.Contains(line, "starting manager") {
				keep = append(keep, line)
			}
		}
		t.Logf("controller log lines about tracing and leadership (%v):\n%s%s", err, strings.Join(keep, "\n"), errOut)
	})
	var admit, publish span
	eventually(t, ctx, time.Minute, "spans for the pod's admission and its volume's publish", func(context.Context) (bool, string) {
		a := recv.find("admit /mutate-v1-pod", map[string]string{"k8s.namespace.name": ns, "k8s.pod.name": "traced-0", "k8s.admission.operation": "CREATE"})
		p := recv.find("csi NodePublishVolume", map[string]string{"k8s.namespace.name": ns, "k8s.pod.name": "traced-0", "k8s.pod.uid": string(pod.UID)})
		if len(a) == 0 || len(p) == 0 {
			return false, fmt.Sprintf("%d admission and %d publish spans of %s/traced-0; received %s", len(a), len(p), ns, recv.names())
		}
		admit, publish = a[0], p[0]
		return true, ""
	})
	if admit.service != "listener-operator" || admit.attrs["k8s.admission.allowed"] != "true" {
		t.Errorf("admission span %+v", admit)
	}
	if publish.service != "listener-operator" || publish.status == "STATUS_CODE_ERROR" {
		t.Errorf("publish span %+v", publish)
	}
	if admit.traceID == publish.traceID {
		t.Errorf("admission and publish share trace %s: expected separate traces linked by the pod", admit.traceID)
	}
	// The Listener of the pod's claim was reconciled under a span too.
	eventually(t, ctx, 30*time.Second, "a span for the reconcile of the pod's Listener", func(context.Context) (bool, string) {
		got := recv.find("reconcile listener", map[string]string{"k8s.namespace.name": ns})
		return len(got) > 0, fmt.Sprintf("none in %s; received %s", ns, recv.names())
	})
	var buf bytes.Buffer
	for _, s := range []span{admit, publish} {
		fmt.Fprintf(&buf, "\n  %s trace=%s attrs=%v", s.name, s.traceID, s.attrs)
	}
	t.Logf("spans:%s", buf.String())
}

// hasEnv reports whether container of pod sets key to value.
func hasEnv(pod *corev1.Pod, container, key, value string) bool {
	for _, c := range pod.Spec.Containers {
		if c.Name != container {
			continue
		}
		for _, e := range c.Env {
			if e.Name == key && e.Value == value {
				return true
			}
		}
	}
	return false
}
