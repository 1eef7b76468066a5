package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden patches in testdata/patches")

// statefulSetPodJSON is a pod as the StatefulSet controller creates it from
// an opted-in StatefulSet (mounts already in place), with a field this build
// does not know.
const statefulSetPodJSON = `{
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {
    "name": "web-0", "namespace": "NS",
    "labels": {"app": "web", "apps.kubernetes.io/pod-index": "0", "controller-revision-hash": "web-5d8f7c9b6", "statefulset.kubernetes.io/pod-name": "web-0", "listeners.stackable.tech/enabled": "true", "listeners.stackable.tech/listener-volume": "true"},
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "3a1b2c3d-0000-4000-8000-000000000001", "controller": true, "blockOwnerDeletion": true}]
  },
  "spec": {
    "hostname": "web-0", "subdomain": "web",
    "containers": [
      {"name": "app", "image": "registry.example.com/web:1.2.3", "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
       "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
       "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
       "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5},
       "volumeMounts": [{"name": "listener", "mountPath": "/stackable/listener", "readOnly": true}, {"name": "data", "mountPath": "/data"}],
       "futureContainerField": {"keep": true}},
      {"name": "metrics", "image": "registry.example.com/exporter:0.9", "ports": [{"containerPort": 9100}],
       "volumeMounts": [{"name": "listener", "mountPath": "/stackable/listener", "readOnly": true}]}
    ],
    "volumes": [
      {"name": "listener", "persistentVolumeClaim": {"claimName": "listener-web-0"}},
      {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}},
      {"name": "config", "configMap": {"name": "web-config"}}
    ],
    "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
    "serviceAccountName": "default", "schedulerName": "default-scheduler",
    "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
    "futurePodField": ["keep"]
  }
}`

// replicaJSON is statefulSetPodJSON as replica i of the StatefulSet: its
// own name and listener claim, the same data claim (which exists).
func replicaJSON(i int) string {
	r := strings.NewReplacer(`"web-0"`, fmt.Sprintf(`"web-%d"`, i), "listener-web-0", fmt.Sprintf("listener-web-%d", i))
	return r.Replace(statefulSetPodJSON)
}

// handlerCase is an object handed to a mutating handler.
type handlerCase struct {
	name    string
	handler admission.Handler
	kind    metav1.GroupVersionKind
	op      admissionv1.Operation
	object  string
	old     string
}

func handlerCases(t testing.TB, ns string) []handlerCase {
	podKind := metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}
	stsKind := metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	claimKind := metav1.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"}
	l := testLookup
	sts := `{"apiVersion": "apps/v1", "kind": "StatefulSet",
  "metadata": {"name": "web", "labels": {"listeners.stackable.tech/enabled": "true"}, "annotations": {"listeners.stackable.tech/listener-class": "external-stable"}},
  "spec": {"serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
    "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
      "containers": [{"name": "app", "image": "web", "volumeMounts": [{"name": "data", "mountPath": "/data"}], "futureField": 1}, {"name": "metrics", "image": "exporter"}]}},
    "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}],
    "futureField": "keep"}}`
	stsUpdated := strings.Replace(sts, `{"metadata": {"name": "data"}`, `{"metadata": {"name": "listener"}, "spec": {"storageClassName": "listeners.stackable.tech"}}, {"metadata": {"name": "data"}`, 1)
	return []handlerCase{
		{"statefulset-create", &statefulSetMutator{lookup: l}, stsKind, admissionv1.Create, sts, ""},
		{"statefulset-update", &statefulSetMutator{lookup: l}, stsKind, admissionv1.Update, stsUpdated, stsUpdated},
		// A pod of a StatefulSet created by an earlier version (its claim
		// template does not name itself): its Listener selects it by the
		// operator's label.
		{"pod-of-statefulset", &podMutator{lookup: l, validator: &workloadValidator{lookup: l}}, podKind, admissionv1.Create, strings.ReplaceAll(statefulSetPodJSON, "NS", ns), ""},
		// A pod of a StatefulSet created by this version: nothing to patch.
		{"pod-of-new-statefulset", &podMutator{lookup: l, validator: &workloadValidator{lookup: l}}, podKind, admissionv1.Create,
			strings.ReplaceAll(replicaJSON(1), "NS", ns), ""},
		// Its claim says "by name", its Listener selects by label: labelled.
		{"pod-of-new-statefulset-listener-by-label", &podMutator{lookup: l, validator: &workloadValidator{lookup: l}}, podKind, admissionv1.Create,
			strings.ReplaceAll(replicaJSON(2), "NS", ns), ""},
		// A pod of a StatefulSet created before its template carried the
		// listener-volume label.
		{"pod-of-older-statefulset", &podMutator{lookup: l, validator: &workloadValidator{lookup: l}}, podKind, admissionv1.Create,
			strings.ReplaceAll(strings.Replace(statefulSetPodJSON, `, "listeners.stackable.tech/listener-volume": "true"`, "", 1), "NS", ns), ""},
		{"pod-bare-opted-in", &podMutator{lookup: l, validator: &workloadValidator{lookup: l}}, podKind, admissionv1.Create,
			`{"metadata": {"name": "bare", "labels": {"listeners.stackable.tech/enabled": "true"}}, "spec": {"containers": [{"name": "app", "image": "x", "ports": [{"containerPort": 8080}], "futureField": true}]}}`, ""},
		// A replica of a class with podReadiness Gate gets the gate.
		{"pod-of-gated-class", &podMutator{lookup: l, validator: &workloadValidator{lookup: l}}, podKind, admissionv1.Create,
			`{"metadata": {"name": "gated-0", "labels": {"listeners.stackable.tech/listener-volume": "true", "` + names.PodSelectorLabel("listener-gated-0") + `": "true"}}, "spec": {"containers": [{"name": "app", "image": "x", "futureContainerField": 1}], "volumes": [{"name": "listener", "persistentVolumeClaim": {"claimName": "listener-gated-0"}}], "futurePodField": 1}}`, ""},
		{"pod-unrelated", &podMutator{lookup: l, validator: &workloadValidator{lookup: l}}, podKind, admissionv1.Create,
			`{"metadata": {"name": "plain"}, "spec": {"containers": [{"name": "app", "image": "x"}], "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data-web-0"}}]}}`, ""},
		{"claim-default-class", &claimMutator{lookup: l}, claimKind, admissionv1.Create,
			`{"metadata": {"name": "c"}, "spec": {"storageClassName": "listeners.stackable.tech", "accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1"}}, "futureField": 1}}`, ""},
		{"claim-storage-class", &claimMutator{lookup: l}, claimKind, admissionv1.Create,
			`{"metadata": {"name": "c", "annotations": {"listeners.stackable.tech/listener-name": "x"}}, "spec": {"accessModes": ["ReadWriteMany"]}}`, ""},
	}
}

func request(ns string, c handlerCase, object []byte) admission.Request {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Kind: c.kind, Operation: c.op, Namespace: ns,
		Object: runtime.RawExtension{Raw: object},
	}}
	if c.old != "" {
		req.OldObject = runtime.RawExtension{Raw: []byte(c.old)}
	}
	return req
}

// statefulSetPodClaims creates the claims the StatefulSet pod mounts.
func statefulSetPodClaims(t testing.TB, ns string) {
	e := testenv.Require(t, env)
	createGatedClass(t) // podgate_test.go
	// The StatefulSet whose claim template makes listener-web-1 and -2:
	// no replicas, and a selector no test pod matches, so that its
	// controller makes and adopts nothing.
	web := statefulSet(ns, "web", optIn, map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"})
	web.Spec.Replicas = ptr(int32(0))
	web.Spec.Selector.MatchLabels = map[string]string{"made-by": "statefulSetPodClaims"}
	web.Spec.Template.Labels = web.Spec.Selector.MatchLabels
	if err := e.Client.Create(t.Context(), web); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		sc   *string
		ann  map[string]string
	}{
		{"listener-web-0", ptr(v1alpha1.StorageClassName), map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"}},
		{"data-web-0", ptr("standard"), nil},
		{"listener-gated-0", ptr(v1alpha1.StorageClassName), map[string]string{v1alpha1.AnnotationListenerClass: gatedClass}},
		// Made from the claim template of a StatefulSet created by this
		// version: its Listener selects web-1 by its pod-name label.
		{"listener-web-1", ptr(v1alpha1.StorageClassName), map[string]string{v1alpha1.AnnotationListenerClass: "external-stable", v1alpha1.AnnotationStatefulSetClaimTemplate: v1alpha1.VolumeName}},
		// The same, but its Listener exists and selects by the operator's
		// label (made before the claim was annotated): that decides.
		{"listener-web-2", ptr(v1alpha1.StorageClassName), map[string]string{v1alpha1.AnnotationListenerClass: "external-stable", v1alpha1.AnnotationStatefulSetClaimTemplate: v1alpha1.VolumeName}},
	} {
		if err := e.Client.Create(t.Context(), listenerClaim(ns, c.name, c.ann, c.sc)); err != nil {
			t.Fatal(err)
		}
	}
	byLabel := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "listener-web-2"}, Spec: v1alpha1.ListenerSpec{ClassName: ptr("external-stable")}}
	if err := e.Client.Create(t.Context(), byLabel); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Listener listener-web-2 in the webhooks' cache", func() error {
		return testLookup.cache.Get(t.Context(), client.ObjectKeyFromObject(byLabel), &v1alpha1.Listener{})
	})
}

// TestPatches checks each mutation's patch against a golden file, that it
// keeps fields this build does not know, and that mutating the result again
// changes nothing.
func TestPatches(t *testing.T) {
	testenv.Require(t, env)
	ns := namespace(t, nil)
	statefulSetPodClaims(t, ns)
	for _, c := range handlerCases(t, ns) {
		t.Run(c.name, func(t *testing.T) {
			resp := c.handler.Handle(t.Context(), request(ns, c, []byte(c.object)))
			if !resp.Allowed {
				t.Fatalf("denied: %v", resp.Result)
			}
			patch := patchJSON(t, resp)
			got := []byte("null")
			if patch != nil {
				var b bytes.Buffer
				if err := json.Indent(&b, patch, "", "  "); err != nil {
					t.Fatal(err)
				}
				got = b.Bytes()
			}
			golden := filepath.Join("testdata", "patches", c.name+".json")
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(bytes.TrimSpace(want), got) {
				t.Errorf("patch differs from %s (run with -update after checking):\n got: %s\nwant: %s", golden, got, want)
			}
			if patch == nil {
				return
			}
			p, err := jsonpatch.DecodePatch(patch)
			if err != nil {
				t.Fatal(err)
			}
			patched, err := p.Apply([]byte(c.object))
			if err != nil {
				t.Fatalf("apply patch: %v", err)
			}
			for _, f := range []string{"futureField", "futurePodField", "futureContainerField"} {
				if strings.Count(c.object, f) != strings.Count(string(patched), f) {
					t.Errorf("the patch lost %s", f)
				}
			}
			again := c.handler.Handle(t.Context(), request(ns, c, patched))
			if patch := patchJSON(t, again); !again.Allowed || patch != nil {
				t.Errorf("not idempotent: second pass gives %s", patch)
			}
		})
	}
}

// patchJSON is the JSON patch of a handler's answer as the webhook server
// sends it, nil when it has none. The handlers write the patch's bytes
// (respond); an answer that also has operations for the server to encode,
// or bytes of another patch type, fails the test.
func patchJSON(t testing.TB, resp admission.Response) []byte {
	t.Helper()
	if len(resp.Patches) > 0 {
		t.Fatalf("the answer has operations for the webhook server to encode: %v", resp.Patches)
	}
	if resp.Patch != nil && (resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch) {
		t.Fatalf("patch type %v, want %s", resp.PatchType, admissionv1.PatchTypeJSONPatch)
	}
	return resp.Patch
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEntry(t *testing.T) {
	for in, want := range map[string]string{"app": "/m/app", "a/b": "/m/a~1b", "a~b/c": "/m/a~0b~1c", "~/": "/m/~0~1", "": "/m/"} {
		if got := entry("/m", in); got != want {
			t.Errorf("entry(/m, %q) = %q, want %q", in, got, want)
		}
	}
}

// TestMalformed hands every handler input that does not decode into what
// it reads: each answers with an error, none panics. (Fields a handler does
// not read are not its business: the API server validated them.)
func TestMalformed(t *testing.T) {
	testenv.Require(t, env)
	l := testLookup
	for name, h := range map[string]admission.Handler{
		"pod": &podMutator{lookup: l, validator: &workloadValidator{lookup: l}}, "statefulset": &statefulSetMutator{lookup: l},
		"claim mutate": &claimMutator{lookup: l}, "claim validate": &claimValidator{lookup: l},
		"class": &classValidator{lookup: l}, "listener": &listenerValidator{lookup: l}, "workload": &workloadValidator{lookup: l},
	} {
		bad := []string{``, `[`, `"x"`, `{"spec": 5}`}
		if name != "workload" { // the only one that reads no metadata
			bad = append(bad, `{"metadata": 5}`)
		}
		switch name {
		case "pod":
			bad = append(bad, `{"metadata": {"labels": []}}`, `{"spec": {"volumes": [{"name": 1}]}}`, `{"spec": {"containers": [{"volumeMounts": {}}]}}`)
		case "workload":
			bad = append(bad, `{"spec": {"template": {"spec": {"volumes": [{"csi": 1}]}}}}`)
		}
		for _, raw := range bad {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: "1", Kind: metav1.GroupVersionKind{Kind: "X"}, Operation: admissionv1.Create, Namespace: "default",
				Object: runtime.RawExtension{Raw: []byte(raw)},
			}}
			resp := h.Handle(t.Context(), req)
			if resp.Allowed || resp.Result == nil || resp.Result.Code != 400 {
				t.Errorf("%s(%q): allowed=%v result=%+v, want a 400 error", name, raw, resp.Allowed, resp.Result)
			}
		}
	}
}

// failingReader stands for a cache and an API server that cannot answer.
type failingReader struct{ client.Reader }

func (failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("connection refused")
}

func (failingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("connection refused")
}

// TestPodFailOpen: when lookups fail, the pod webhook (failurePolicy
// Ignore) admits the pod with what needed no lookup and counts it, rather
// than returning an error (which would deny the pod even under Ignore).
// Webhooks that fail closed answer with an error the client can retry.
func TestPodFailOpen(t *testing.T) {
	broken := &lookup{cache: failingReader{}, live: failingReader{}}
	h := &podMutator{lookup: broken, validator: &workloadValidator{lookup: broken}}
	before := testutil.ToFloat64(failOpen.WithLabelValues("pods.mutate"))
	raw := `{"metadata": {"name": "web-0", "labels": {"listeners.stackable.tech/enabled": "true"}},
	  "spec": {"containers": [{"name": "app", "image": "x"}], "volumes": [{"name": "listener", "persistentVolumeClaim": {"claimName": "listener-web-0"}}]}}`
	resp := h.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Operation: admissionv1.Create, Namespace: "ns",
		Object: runtime.RawExtension{Raw: []byte(raw)},
	}})
	if !resp.Allowed {
		t.Fatalf("denied: %+v", resp.Result)
	}
	// The mount needs no lookup; the selector label (the claim's Listener)
	// does. The listener-volume label puts the pod in the controller's
	// cache, which labels it once the claim can be read.
	if got := string(patchJSON(t, resp)); got != `[{"op":"add","path":"/spec/containers/0/volumeMounts","value":[{"name":"listener","readOnly":true,"mountPath":"/stackable/listener"}]},{"op":"add","path":"/metadata/labels/listeners.stackable.tech~1listener-volume","value":"true"}]` {
		t.Errorf("patch: %s", got)
	}
	if d := testutil.ToFloat64(failOpen.WithLabelValues("pods.mutate")) - before; d != 1 {
		t.Errorf("fail-open counter went up by %v, want 1", d)
	}
	claimResp := (&claimMutator{lookup: broken}).Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "2", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"}, Operation: admissionv1.Create, Namespace: "ns",
		Object: runtime.RawExtension{Raw: []byte(`{"metadata": {"name": "c"}, "spec": {"storageClassName": "listeners.stackable.tech"}}`)},
	}})
	if claimResp.Allowed || claimResp.Result.Code != http.StatusServiceUnavailable || !strings.Contains(claimResp.Result.Message, "connection refused") {
		t.Errorf("claim webhook with failing lookups: %+v", claimResp.Result)
	}
}
