package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
)

// BenchmarkPodWebhookServingInMemory is BenchmarkPodWebhookServing without
// a control plane (it runs under -short): the same review, the same three
// handlers, ours reading from an in-memory store that copies as the
// cache's reader does (the listener claim as the cache holds it, trimmed;
// the data claim remembered as ordinary).
func BenchmarkPodWebhookServingInMemory(b *testing.B) {
	if testing.Short() {
		// As startManager does, which does not run under -short.
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(zapLevel())))
	}
	const ns = "default"
	claim := listenerClaim(ns, "listener-web-0", map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"}, ptr(v1alpha1.StorageClassName))
	claim.Labels = map[string]string{v1alpha1.LabelListenerVolume: "true"}
	trimmed, err := caches.TrimClaim(claim)
	if err != nil {
		b.Fatal(err)
	}
	store := memStore{{reflect.TypeFor[*corev1.PersistentVolumeClaim](), types.NamespacedName{Namespace: ns, Name: claim.Name}}: trimmed.(client.Object)}
	l := newLookup(store, store, nil)
	l.ordinary.add(types.NamespacedName{Namespace: ns, Name: "data-web-0"})
	ours := &podMutator{lookup: l, validator: &workloadValidator{lookup: l}}
	podJSON := strings.ReplaceAll(statefulSetPodJSON, "NS", ns)
	body := reviewSeed("", "v1", "Pod", "pods", admissionv1.Create, ns, podJSON, "")
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		b.Fatal(err)
	}
	resp := ours.Handle(b.Context(), admission.Request{AdmissionRequest: *review.Request})
	patch := patchJSON(b, resp)
	if !resp.Allowed || len(patch) == 0 {
		b.Fatalf("ours: allowed %v, patch %s", resp.Allowed, patch)
	}
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
			cpu0 := processCPU(b, os.Getpid())
			for b.Loop() {
				if err := serveOnce(b.Context(), wh, body); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((processCPU(b, os.Getpid())-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// serveOnce has wh answer the review body.
func serveOnce(ctx context.Context, wh *admission.Webhook, body []byte) error {
	rec := httptest.NewRecorder()
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	wh.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		return errors.New(rec.Body.String())
	}
	return nil
}

// memKey is an object of a store by its Go type and name.
type memKey struct {
	t   reflect.Type
	key types.NamespacedName
}

// memStore is a client.Reader of objects in memory that hands out deep
// copies, as the cache's reader does.
type memStore map[memKey]client.Object

func (m memStore) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	o, ok := m[memKey{reflect.TypeOf(obj), key}]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: reflect.TypeOf(obj).Elem().Name()}, key.Name)
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(o.DeepCopyObject()).Elem())
	return nil
}

func (m memStore) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("memStore lists nothing")
}
