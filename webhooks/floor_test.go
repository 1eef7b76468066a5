package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// The admission floor: what any webhook costs a pod create, and what any
// mutation costs, so that ours is measured against what cannot be avoided
// rather than against no webhook at all. A floor handler is served by the
// same webhook server as ours and is registered under our configurations
// (same rules, match conditions, object selectors and failure policy):
// only the URL path of the pod webhooks changes.

// floorHandler answers pod admissions without looking anything up: allowed,
// with patch if it is not nil. It counts its calls, so that a benchmark can
// tell when the API server uses the configuration that points at it.
type floorHandler struct {
	patch []byte
	calls atomic.Int64
}

func (h *floorHandler) Handle(_ context.Context, _ admission.Request) admission.Response {
	h.calls.Add(1)
	if h.patch == nil {
		return admission.Allowed("")
	}
	pt := admissionv1.PatchTypeJSONPatch
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: true, Patch: h.patch, PatchType: &pt}}
}

// admissionMode is one way the API server admits the benchmark's pods.
type admissionMode struct {
	name string
	// floor is the handler the pod webhooks call instead of ours; nil
	// keeps ours.
	floor *floorHandler
	// off removes the configurations altogether.
	off bool
	// path is where floor is served.
	path string
}

// ourPatch is the patch our pod handler returns for pod, as the bytes the
// webhook server sends.
func ourPatch(tb testing.TB, ns string, pod *corev1.Pod) []byte {
	tb.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		tb.Fatal(err)
	}
	h := &podMutator{lookup: testLookup, validator: &workloadValidator{lookup: testLookup}}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Operation: admissionv1.Create,
		Namespace: ns, Name: pod.Name, Object: runtime.RawExtension{Raw: raw},
	}}
	resp := h.Handle(tb.Context(), req)
	if !resp.Allowed {
		tb.Fatalf("our handler denies the pod: %v", resp.Result)
	}
	return patchJSON(tb, resp)
}

// floorModes registers a no-op and a constant-patch handler (returning
// patch) on the test webhook server, under paths unique to tag, and returns
// the four modes: no webhook, no-op, constant patch, ours.
func floorModes(tag string, patch []byte) []admissionMode {
	noop, constant := &floorHandler{}, &floorHandler{patch: patch}
	modes := []admissionMode{
		{name: "no webhook", off: true},
		{name: "no-op", floor: noop, path: "/floor-noop-" + tag},
		{name: "constant patch", floor: constant, path: "/floor-constant-" + tag},
		{name: "ours"},
	}
	for _, m := range modes {
		if m.floor != nil {
			webhookServer.Register(m.path, &webhook.Admission{Handler: m.floor})
		}
	}
	return modes
}

// webhookConfigurations reads the configurations the API server has now,
// as templates for every mode.
func webhookConfigurations(tb testing.TB, c client.Client) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	tb.Helper()
	var mut admissionregistrationv1.MutatingWebhookConfiguration
	var val admissionregistrationv1.ValidatingWebhookConfiguration
	if err := c.Get(tb.Context(), client.ObjectKey{Name: MutatingConfigurationName}, &mut); err != nil {
		tb.Fatal(err)
	}
	if err := c.Get(tb.Context(), client.ObjectKey{Name: ValidatingConfigurationName}, &val); err != nil {
		tb.Fatal(err)
	}
	for _, o := range []client.Object{&mut, &val} {
		o.SetResourceVersion("")
		o.SetUID("")
		o.SetManagedFields(nil)
		o.SetCreationTimestamp(metav1.Time{})
		o.SetGeneration(0)
	}
	return &mut, &val
}

// configure makes the API server admit pods as m does: it replaces the
// configurations by copies of mut and val whose pod webhooks call m's
// floor handler, or by nothing.
func configure(ctx context.Context, c client.Client, m admissionMode, mut *admissionregistrationv1.MutatingWebhookConfiguration, val *admissionregistrationv1.ValidatingWebhookConfiguration) error {
	for _, o := range []client.Object{mut.DeepCopy(), val.DeepCopy()} {
		if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s: %w", o.GetName(), err)
		}
	}
	if m.off {
		return nil
	}
	mc := mut.DeepCopy()
	if m.floor != nil {
		for i := range mc.Webhooks {
			if err := repoint(&mc.Webhooks[i].ClientConfig, PathMutatePod, m.path); err != nil {
				return err
			}
		}
	}
	for _, o := range []client.Object{mc, val.DeepCopy()} {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("create %s: %w", o.GetName(), err)
		}
	}
	return nil
}

// repoint changes a webhook that calls path from to call path to instead.
func repoint(cc *admissionregistrationv1.WebhookClientConfig, from, to string) error {
	switch {
	case cc.Service != nil && cc.Service.Path != nil && *cc.Service.Path == from:
		cc.Service.Path = &to
	case cc.URL != nil:
		u, err := url.Parse(*cc.URL)
		if err != nil {
			return fmt.Errorf("webhook URL %q: %w", *cc.URL, err)
		}
		// envtest writes the service path after a "/" of its own.
		if strings.TrimLeft(u.Path, "/") == strings.TrimLeft(from, "/") {
			u.Path = to
			cc.URL = ptr(u.String())
		}
	}
	return nil
}

// activeMode says which of modes the API server used to admit a dry-run
// create of pod: a floor handler that was called, else ours when the pod
// came out with ourLabel, else no webhook.
func activeMode(tb testing.TB, c client.Client, modes []admissionMode, pod *corev1.Pod, ourLabel string) string {
	tb.Helper()
	before := make([]int64, len(modes))
	for i, m := range modes {
		if m.floor != nil {
			before[i] = m.floor.calls.Load()
		}
	}
	p := pod.DeepCopy()
	p.Name = "probe"
	if err := c.Create(tb.Context(), p, client.DryRunAll); err != nil {
		tb.Fatal(err)
	}
	for i, m := range modes {
		if m.floor != nil && m.floor.calls.Load() > before[i] {
			return m.name
		}
	}
	if p.Labels[ourLabel] == "true" {
		return "ours"
	}
	return "no webhook"
}

// switchMode configures m and waits until the API server uses it.
func switchMode(tb testing.TB, c client.Client, modes []admissionMode, m admissionMode, mut *admissionregistrationv1.MutatingWebhookConfiguration, val *admissionregistrationv1.ValidatingWebhookConfiguration, pod *corev1.Pod, ourLabel string) {
	tb.Helper()
	if err := configure(tb.Context(), c, m, mut, val); err != nil {
		tb.Fatal(err)
	}
	eventually(tb, "API server admits pods as "+m.name, func() error {
		if got := activeMode(tb, c, modes, pod, ourLabel); got != m.name {
			return errorf("admitted as %s", got)
		}
		return nil
	})
}

// restoreConfigurations puts the configurations back as they were.
func restoreConfigurations(tb testing.TB, c client.Client, mut *admissionregistrationv1.MutatingWebhookConfiguration, val *admissionregistrationv1.ValidatingWebhookConfiguration) {
	ctx := context.WithoutCancel(tb.Context())
	for _, o := range []client.Object{mut.DeepCopy(), val.DeepCopy()} {
		if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			tb.Errorf("restore %s: %v", o.GetName(), err)
		}
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			tb.Errorf("restore %s: %v", o.GetName(), err)
		}
	}
}

// pathTag turns a namespace name into a URL path element.
func pathTag(ns string) string { return strings.ReplaceAll(ns, ".", "-") }

// BenchmarkPodWebhookServing is what the webhook server does per pod
// admission in each floor mode, without the network: read the
// AdmissionReview of a StatefulSet replica, answer, write the response.
// The difference between "ours" and "constant patch" is all that our
// handler adds over the cheapest webhook returning the same patch; the API
// server's side is the same for both (same patch bytes).
func BenchmarkPodWebhookServing(b *testing.B) {
	testenv.Require(b, env)
	ns := namespace(b, nil)
	statefulSetPodClaims(b, ns)
	var pod corev1.Pod
	if err := json.Unmarshal([]byte(strings.ReplaceAll(statefulSetPodJSON, "NS", ns)), &pod); err != nil {
		b.Fatal(err)
	}
	var patch []byte
	eventually(b, "claims in cache", func() error {
		if patch = ourPatch(b, ns, &pod); patch == nil {
			return errorf("no patch yet")
		}
		return nil
	})
	body := reviewSeed("", "v1", "Pod", "pods", admissionv1.Create, ns, strings.ReplaceAll(statefulSetPodJSON, "NS", ns), "")
	// Ours with the lookup the webhooks run with, in steady state: the
	// listener claim marked and cached, the data claim remembered as
	// ordinary; checked before timing, and its live reads counted.
	l, live := countedLookup()
	ours := &podMutator{lookup: l, validator: &workloadValidator{lookup: l}}
	eventually(b, "ours in steady state", func() error {
		return onPath(b, ours, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID: "1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Operation: admissionv1.Create,
			Namespace: ns, Name: "web-0", Object: runtime.RawExtension{Raw: []byte(strings.ReplaceAll(statefulSetPodJSON, "NS", ns))},
		}}, live, false, 0)
	})
	for _, bc := range []struct {
		name    string
		handler admission.Handler
	}{
		{"no-op", &floorHandler{}},
		{"constant patch", &floorHandler{patch: patch}},
		{"ours", ours},
	} {
		b.Run(bc.name, func(b *testing.B) {
			wh := &admission.Webhook{Handler: bc.handler}
			b.ReportAllocs()
			reads0 := live.reads.Load()
			cpu0 := processCPU(b, os.Getpid())
			for b.Loop() {
				rec := httptest.NewRecorder()
				r := httptest.NewRequestWithContext(b.Context(), http.MethodPost, "/", bytes.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				wh.ServeHTTP(rec, r)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body.Bytes())
				}
			}
			b.ReportMetric(float64((processCPU(b, os.Getpid())-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			if n := live.reads.Load() - reads0; n != 0 {
				b.Fatalf("%d live reads while timed, want none: ours left its steady state", n)
			}
		})
	}
}
