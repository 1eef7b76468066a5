package webhooks

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// stsManifest is an opted-in StatefulSet as its author applies it: no
// listener claim template, a pod template without the listener-volume
// label.
const stsManifest = `{"apiVersion": "apps/v1", "kind": "StatefulSet",
  "metadata": {"name": "web", "labels": {"listeners.stackable.tech/enabled": "true"}, "annotations": {"listeners.stackable.tech/listener-class": "external-stable"}},
  "spec": {"serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
    "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
      "containers": [{"name": "app", "image": "web", "ports": [{"containerPort": 8080}], "volumeMounts": [{"name": "data", "mountPath": "/data"}]}, {"name": "metrics", "image": "exporter"}]}},
    "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}`

// stsStored is stsManifest as stored after the webhook injected its claim
// template.
var stsStored = strings.Replace(stsManifest, `"storage": "1Gi"}}}}]`,
	`"storage": "1Gi"}}}}, {"metadata": {"name": "listener", "annotations": {"listeners.stackable.tech/listener-class": "external-stable", "listeners.stackable.tech/statefulset-claim-template": "listener"}}, "spec": {"storageClassName": "listeners.stackable.tech", "accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1"}}}}]`, 1)

// BenchmarkAdmissionByKind is each kind's handler on the admission that
// reads most of its object: a pod with an ephemeral listener volume (which
// the pod handler also validates), and the UPDATE of an opted-in
// StatefulSet by a server-side apply of its manifest (the injected claim
// template comes back from the old object, the template's labels are
// completed). allocs/op counts, among others, how often each object is
// decoded. The handlers run with the lookup the webhooks run with
// (newLookup), in steady state: before timing, one admission makes no
// live read, and none does while timed.
func BenchmarkAdmissionByKind(b *testing.B) {
	e := testenv.Require(b, env)
	ns := namespace(b, nil)
	shared := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}, Spec: v1alpha1.ListenerSpec{ClassName: ptr("cluster-internal")}}
	if err := e.Client.Create(b.Context(), shared); err != nil {
		b.Fatal(err)
	}
	l, live := countedLookup()
	podKind := metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}
	stsKind := metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	ephemeralPod := `{"metadata": {"name": "p", "labels": {"app": "p"}}, "spec": {
  "containers": [{"name": "app", "image": "x", "ports": [{"containerPort": 8080}], "volumeMounts": [{"name": "listener", "mountPath": "/stackable/listener"}]}, {"name": "sidecar", "image": "y"}],
  "volumes": [{"name": "listener", "ephemeral": {"volumeClaimTemplate": {"metadata": {"annotations": {"listeners.stackable.tech/listener-name": "shared"}},
    "spec": {"storageClassName": "listeners.stackable.tech", "accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1"}}}}}},
    {"name": "config", "configMap": {"name": "c"}}]}}`
	for _, bc := range []struct {
		name     string
		handler  admission.Handler
		kind     metav1.GroupVersionKind
		op       admissionv1.Operation
		obj, old string
	}{
		{"pod with ephemeral listener volume", &podMutator{lookup: l, validator: &workloadValidator{lookup: l}}, podKind, admissionv1.Create, ephemeralPod, ""},
		{"StatefulSet create", &statefulSetMutator{lookup: l}, stsKind, admissionv1.Create, stsManifest, ""},
		{"StatefulSet update by its manifest", &statefulSetMutator{lookup: l}, stsKind, admissionv1.Update, stsManifest, stsStored},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: "1", Kind: bc.kind, Operation: bc.op, Namespace: ns, Name: "web",
				Object: runtime.RawExtension{Raw: []byte(bc.obj)},
			}}
			if bc.old != "" {
				req.OldObject = runtime.RawExtension{Raw: []byte(bc.old)}
			}
			eventually(b, "a patch without live reads", func() error {
				before := live.reads.Load()
				if resp := bc.handler.Handle(b.Context(), req); !resp.Allowed || len(patchJSON(b, resp)) == 0 {
					return errorf("not patched yet: %+v", resp.Result)
				}
				if n := live.reads.Load() - before; n != 0 {
					return errorf("%d live reads per admission, want none", n)
				}
				return nil
			})
			b.ReportAllocs()
			reads0 := live.reads.Load()
			for b.Loop() {
				if resp := bc.handler.Handle(b.Context(), req); !resp.Allowed || len(patchJSON(b, resp)) == 0 {
					b.Fatal("no patch")
				}
			}
			if n := live.reads.Load() - reads0; n != 0 {
				b.Fatalf("%d live reads while timed, want none", n)
			}
		})
	}
}
