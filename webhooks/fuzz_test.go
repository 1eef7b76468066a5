package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// fuzzObjects is what the fuzz targets' lookups find: the test classes plus
// "lb" (which a Listener and a claim use, so deleting or changing it is
// checked against them), a namespace with its own default class, Listeners
// "web" and "shared", the StatefulSet pod's claims (listener-web-0 is
// pinned to node-1, as after a first mount), a listener claim bound to an
// unpinned volume and a default StorageClass.
func fuzzObjects() []client.Object {
	listenerSC := ptr(v1alpha1.StorageClassName)
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Annotations: map[string]string{v1alpha1.AnnotationDefaultClass: "external-unstable"}}},
		&v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "lb"},
			Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer}},
		&v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec: v1alpha1.ListenerSpec{ClassName: ptr("external-stable")}},
		&v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "shared"},
			Spec: v1alpha1.ListenerSpec{ClassName: ptr("lb")}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard", Annotations: map[string]string{defaultStorageClassAnn: "true"}}, Provisioner: "example.com/disk"},
		listenerClaim("default", "listener-web-0", map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"}, listenerSC),
		listenerClaim("default", "data-web-0", nil, ptr("standard")),
		listenerClaim("default", "some-claim", map[string]string{v1alpha1.AnnotationListenerName: "shared"}, listenerSC),
		listenerClaim("team", "by-class", map[string]string{v1alpha1.AnnotationListenerClass: "lb"}, listenerSC),
		fuzzVolume("pv-listener-web-0", "node-1"),
		fuzzVolume("pv-some-claim", ""),
	}
	for i := range fixtureClasses {
		objs = append(objs, fixtureClasses[i].DeepCopy())
	}
	for _, o := range objs {
		if c, ok := o.(*corev1.PersistentVolumeClaim); ok && c.Name != "data-web-0" && c.Name != "by-class" {
			c.Spec.VolumeName = "pv-" + c.Name
		}
	}
	return objs
}

// fuzzVolume is a listener volume, pinned to node unless node is "".
func fuzzVolume(name, node string) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName:       v1alpha1.StorageClassName,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: v1alpha1.DriverName, VolumeHandle: name}},
		},
	}
	if node != "" {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1alpha1.TopologyKeyHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}}}
	}
	return pv
}

// fuzzLookup is a lookup that reads fuzzObjects from memory, as both its
// cache and its live reader.
func fuzzLookup() *lookup {
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(fuzzObjects()...).Build()
	return &lookup{cache: c, live: c}
}

// The fuzz targets feed each admission handler raw AdmissionReview bytes,
// as the webhook server receives them, through controller-runtime's
// webhook (which decodes the review) with panic recovery off. Whatever the
// bytes, the server must answer with an AdmissionReview, must not panic,
// and a patch it returns must apply to the object it was computed for.
// Lookups read fuzzObjects from memory, never an API server: each fuzz
// worker is a fresh process, and one control plane per worker would stall
// the fuzzer (see TestMain). The fixture holds present and absent classes,
// Listeners and claims, a pinned volume and a default storage class, so
// every branch of the handlers is reached. The seeds below run in every
// `go test`; `go test -run '^$' -fuzz '^FuzzPods$' ./webhooks` fuzzes.

// reviewSeed is an AdmissionReview request for object (and old, on UPDATE).
func reviewSeed(group, version, kind, resource string, op admissionv1.Operation, ns, object, old string) []byte {
	r := map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"request": map[string]any{
			"uid":       "00000000-0000-4000-8000-000000000001",
			"kind":      map[string]string{"group": group, "version": version, "kind": kind},
			"resource":  map[string]string{"group": group, "version": version, "resource": resource},
			"operation": op, "namespace": ns, "name": "x",
			"userInfo": map[string]any{"username": "fuzz"},
		},
	}
	req := r["request"].(map[string]any)
	if object != "" {
		req["object"] = json.RawMessage(object)
	}
	if old != "" {
		req["oldObject"] = json.RawMessage(old)
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return b
}

var reviewDecoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	if err := admissionv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(s).UniversalDeserializer()
}()

// fuzzHandler fuzzes h with AdmissionReview bodies, starting from seeds.
func fuzzHandler(f *testing.F, h admission.Handler, seeds ...[]byte) {
	for _, s := range seeds {
		f.Add(s)
	}
	// The API server sends objects it has decoded and re-encoded; the
	// webhook server reads at most 7 MiB (controller-runtime's limit).
	wh := &admission.Webhook{Handler: h, RecoverPanic: ptr(false)}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		wh.ServeHTTP(rec, r)
		var out admissionv1.AdmissionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
			t.Fatalf("answer is not an AdmissionReview (%v): %s", err, rec.Body.Bytes())
		}
		resp := out.Response
		if len(resp.Patch) == 0 {
			return
		}
		if !resp.Allowed {
			t.Fatalf("a denial with a patch: %s", resp.Patch)
		}
		var in admissionv1.AdmissionReview
		if _, _, err := reviewDecoder.Decode(body, nil, &in); err != nil || in.Request == nil {
			// controller-runtime tolerates a review without (or with an
			// unknown) apiVersion; read it as it does.
			in = admissionv1.AdmissionReview{}
			if err := json.Unmarshal(body, &in); err != nil || in.Request == nil {
				t.Fatalf("patched a request that does not decode (%v)", err)
			}
		}
		// The API server always sends metadata and spec objects for the
		// kinds these handlers patch; a patch for anything less proves
		// nothing.
		var shape struct {
			Metadata map[string]json.RawMessage `json:"metadata"`
			Spec     map[string]json.RawMessage `json:"spec"`
		}
		if viewDecoder.Unmarshal(in.Request.Object.Raw, &shape) != nil || shape.Metadata == nil || shape.Spec == nil {
			return
		}
		p, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			t.Fatalf("patch does not decode: %v: %s", err, resp.Patch)
		}
		patched, err := p.Apply(in.Request.Object.Raw)
		if err != nil {
			t.Fatalf("patch does not apply to its own object: %v\nobject: %s\npatch: %s", err, in.Request.Object.Raw, resp.Patch)
		}
		if !json.Valid(patched) {
			t.Fatalf("patched object is not JSON: %s", patched)
		}
	})
}

const (
	fuzzOptedInSts      = `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"web","labels":{"listeners.stackable.tech/enabled":"true"},"annotations":{"listeners.stackable.tech/listener-class":"external-stable"}},"spec":{"serviceName":"web","selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"},"annotations":{"listeners.stackable.tech/mount-init-containers":"*"}},"spec":{"initContainers":[{"name":"init","image":"x"}],"containers":[{"name":"app","image":"web","ports":[{"containerPort":8080}],"volumeMounts":[{"name":"data","mountPath":"/data"}]},{"name":"metrics","image":"exporter"}]}},"volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]}}`
	fuzzStsWithListener = `{"metadata":{"name":"web","labels":{"listeners.stackable.tech/enabled":"true"}},"spec":{"template":{"spec":{"containers":[{"name":"app","image":"web","volumeMounts":[{"name":"listener","mountPath":"/stackable/listener"}]}]}},"volumeClaimTemplates":[{"metadata":{"name":"listener","annotations":{"listeners.stackable.tech/listener-name":"shared"}},"spec":{"storageClassName":"listeners.stackable.tech","accessModes":["ReadWriteMany"],"resources":{"requests":{"storage":"1"}}}}]}}`
	fuzzEphemeralPod    = `{"metadata":{"name":"p","labels":{"app":"p"}},"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}},"containers":[{"name":"app","image":"x","ports":[{"containerPort":8080}],"volumeMounts":[{"name":"l","mountPath":"/stackable/listener"}]},{"name":"side","image":"y"}],"volumes":[{"name":"l","ephemeral":{"volumeClaimTemplate":{"metadata":{"annotations":{"listeners.stackable.tech/listener-class":"external-unstable"}},"spec":{"storageClassName":"listeners.stackable.tech","accessModes":["ReadWriteMany"],"resources":{"requests":{"storage":"1"}}}}}},{"name":"c","persistentVolumeClaim":{"claimName":"some-claim"}},{"name":"i","csi":{"driver":"listeners.stackable.tech"}}]}}`
	fuzzBarePod         = `{"metadata":{"name":"bare","labels":{"listeners.stackable.tech/enabled":"true"},"annotations":{"listeners.stackable.tech/listener-class":"cluster-internal"}},"spec":{"containers":[{"name":"app","image":"x","ports":[{"containerPort":8080}]}]}}`
	fuzzDeployment      = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"metadata":{"labels":{"listeners.stackable.tech/enabled":"true"}},"spec":{"containers":[{"name":"app","image":"x","ports":[{"containerPort":80}]}],"volumes":[{"name":"listener","ephemeral":{"volumeClaimTemplate":{"metadata":{"annotations":{"listeners.stackable.tech/listener-name":"shared"}},"spec":{"storageClassName":"listeners.stackable.tech","accessModes":["ReadWriteMany"]}}}}]}}}}`
	fuzzClaim           = `{"metadata":{"name":"c","annotations":{"listeners.stackable.tech/listener-class":"external-stable"}},"spec":{"storageClassName":"listeners.stackable.tech","accessModes":["ReadWriteMany"],"resources":{"requests":{"storage":"1"}}}}`
	fuzzClaimNoClass    = `{"metadata":{"name":"c"},"spec":{"storageClassName":"listeners.stackable.tech","accessModes":["ReadWriteMany"],"resources":{"requests":{"storage":"1"}}}}`
	fuzzClaimByName     = `{"metadata":{"name":"c","annotations":{"listeners.stackable.tech/listener-name":"web"}},"spec":{"storageClassName":"standard","accessModes":["ReadWriteMany"]}}`
	fuzzListener        = `{"apiVersion":"listeners.stackable.tech/v1alpha1","kind":"Listener","metadata":{"name":"web"},"spec":{"className":"cluster-internal","ports":[{"name":"http","port":8080,"protocol":"TCP"}],"extraPodSelectorLabels":{"app":"web"},"objectOverrides":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"type":"LoadBalancer"}}]}}`
	fuzzClass           = `{"apiVersion":"listeners.stackable.tech/v1alpha1","kind":"ListenerClass","metadata":{"name":"lb"},"spec":{"serviceType":"LoadBalancer","loadBalancerClass":"example.com/lb","serviceAnnotations":{"a":"b"},"serviceOverrides":{"spec":{"type":"NodePort","selector":{"a":"b"}}}}}`
)

func FuzzPods(f *testing.F) {
	l := fuzzLookup()
	fuzzHandler(f, &podMutator{lookup: l, validator: &workloadValidator{lookup: l}},
		reviewSeed("", "v1", "Pod", "pods", admissionv1.Create, "default", fuzzEphemeralPod, ""),
		reviewSeed("", "v1", "Pod", "pods", admissionv1.Create, "default", fuzzBarePod, ""),
		reviewSeed("", "v1", "Pod", "pods", admissionv1.Create, "default", statefulSetPodJSON, ""),
		reviewSeed("", "v1", "Pod", "pods", admissionv1.Create, "default", `{"metadata":{"generateName":"g-","labels":{"listeners.stackable.tech/enabled":"true"}},"spec":{"containers":[{"name":"a"}],"volumes":[{"name":"listener","configMap":{"name":"c"}}]}}`, ""),
		reviewSeed("", "v1", "Pod", "pods", admissionv1.Create, "default", `null`, ""),
	)
}

func FuzzStatefulSets(f *testing.F) {
	fuzzHandler(f, &statefulSetMutator{lookup: fuzzLookup()},
		reviewSeed("apps", "v1", "StatefulSet", "statefulsets", admissionv1.Create, "default", fuzzOptedInSts, ""),
		reviewSeed("apps", "v1", "StatefulSet", "statefulsets", admissionv1.Update, "default", fuzzStsWithListener, fuzzOptedInSts),
		reviewSeed("apps", "v1", "StatefulSet", "statefulsets", admissionv1.Update, "default", fuzzOptedInSts, fuzzOptedInSts),
		reviewSeed("apps", "v1", "StatefulSet", "statefulsets", admissionv1.Create, "default", `{"metadata":{"annotations":{"listeners.stackable.tech/listener-name":"web"}},"spec":{"template":{"spec":{"volumes":[{"name":"listener","emptyDir":{}}]}}}}`, ""),
	)
}

func FuzzClaims(f *testing.F) {
	l := fuzzLookup()
	seeds := [][]byte{
		reviewSeed("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", admissionv1.Create, "default", fuzzClaim, ""),
		reviewSeed("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", admissionv1.Create, "default", fuzzClaimNoClass, ""),
		reviewSeed("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", admissionv1.Create, "default", fuzzClaimByName, ""),
		reviewSeed("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", admissionv1.Update, "default", fuzzClaimByName, fuzzClaim),
	}
	// One target, both handlers, on the same request (the API server would
	// show the validator the mutated claim; the fuzzer does not need to):
	// a corpus entry that reaches one reaches the other.
	fuzzHandler(f, handlerPair{&claimMutator{lookup: l}, &claimValidator{lookup: l}}, seeds...)
}

// handlerPair runs the mutator, then the validator on the same request, and
// answers with the validator's denial or the mutator's answer.
type handlerPair struct{ mutate, validate admission.Handler }

func (h handlerPair) Handle(ctx context.Context, req admission.Request) admission.Response {
	m := h.mutate.Handle(ctx, req)
	if !m.Allowed {
		return m
	}
	if v := h.validate.Handle(ctx, req); !v.Allowed {
		return v
	}
	return m
}

func FuzzWorkloads(f *testing.F) {
	fuzzHandler(f, &workloadValidator{lookup: fuzzLookup()},
		reviewSeed("apps", "v1", "Deployment", "deployments", admissionv1.Create, "default", fuzzDeployment, ""),
		reviewSeed("apps", "v1", "StatefulSet", "statefulsets", admissionv1.Create, "default", fuzzStsWithListener, ""),
		reviewSeed("apps", "v1", "StatefulSet", "statefulsets", admissionv1.Update, "default", fuzzStsWithListener, fuzzOptedInSts),
		reviewSeed("apps", "v1", "DaemonSet", "daemonsets", admissionv1.Create, "default", `{"spec":{"template":{"spec":{"volumes":[{"name":"x","csi":{"driver":"listeners.stackable.tech"}}]}}}}`, ""),
	)
}

func FuzzListeners(f *testing.F) {
	fuzzHandler(f, &listenerValidator{lookup: fuzzLookup()},
		reviewSeed("listeners.stackable.tech", "v1alpha1", "Listener", "listeners", admissionv1.Create, "default", fuzzListener, ""),
		reviewSeed("listeners.stackable.tech", "v1alpha1", "Listener", "listeners", admissionv1.Update, "default", `{"metadata":{"name":"Web.1"},"spec":{"ports":[{"name":"a","port":1},{"name":"a","port":1}]}}`, fuzzListener),
	)
}

func FuzzListenerClasses(f *testing.F) {
	fuzzHandler(f, &classValidator{lookup: fuzzLookup()},
		reviewSeed("listeners.stackable.tech", "v1alpha1", "ListenerClass", "listenerclasses", admissionv1.Create, "", fuzzClass, ""),
		reviewSeed("listeners.stackable.tech", "v1alpha1", "ListenerClass", "listenerclasses", admissionv1.Update, "", `{"metadata":{"name":"lb"},"spec":{"serviceType":"ClusterIP","pinnedNodePorts":true,"serviceExternalTrafficPolicy":"Local"}}`, fuzzClass),
		reviewSeed("listeners.stackable.tech", "v1alpha1", "ListenerClass", "listenerclasses", admissionv1.Delete, "", "", fuzzClass),
		fuzzClassInUse,
	)
}

// fuzzClassInUse deletes ListenerClass lb, which a Listener and a claim of
// fuzzObjects use.
var fuzzClassInUse = bytes.Replace(reviewSeed("listeners.stackable.tech", "v1alpha1", "ListenerClass", "listenerclasses", admissionv1.Delete, "", "", fuzzClass),
	[]byte(`"name":"x"`), []byte(`"name":"lb"`), 1)

// TestFuzzFixture checks that the fuzz targets' in-memory lookup answers as
// the control plane would, so that the fuzzer reaches the branches that
// depend on what exists: the StatefulSet pod gets the pinned volume's node
// affinity, a class in use cannot be deleted, a Listener of an unknown
// class is refused and a claim without a class gets the namespace default.
func TestFuzzFixture(t *testing.T) {
	l := fuzzLookup()
	for _, tc := range []struct {
		name    string
		handler admission.Handler
		body    []byte
		allowed bool
		want    string // in the patch, or in the denial
	}{
		{"pinned replica", &podMutator{lookup: l, validator: &workloadValidator{lookup: l}},
			reviewSeed("", "v1", "Pod", "pods", admissionv1.Create, "default", statefulSetPodJSON, ""), true, `"values":["node-1"]`},
		{"class in use", &classValidator{lookup: l}, fuzzClassInUse, false, "1 Listener and 1 PersistentVolumeClaim in 1 namespace"},
		{"unknown class", &listenerValidator{lookup: l},
			reviewSeed("listeners.stackable.tech", "v1alpha1", "Listener", "listeners", admissionv1.Create, "default", strings.Replace(fuzzListener, "cluster-internal", "nope", 1), ""), false, "nope"},
		{"namespace default class", &claimMutator{lookup: l},
			reviewSeed("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", admissionv1.Create, "team", fuzzClaimNoClass, ""), true, "external-unstable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var review admissionv1.AdmissionReview
			if err := json.Unmarshal(tc.body, &review); err != nil {
				t.Fatal(err)
			}
			resp := tc.handler.Handle(t.Context(), admission.Request{AdmissionRequest: *review.Request})
			if resp.Allowed != tc.allowed {
				t.Fatalf("allowed = %v, want %v: %v", resp.Allowed, tc.allowed, resp.Result)
			}
			got := resp.Result.String()
			if tc.allowed {
				got = string(patchJSON(t, resp))
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("answer does not mention %q: %s", tc.want, got)
			}
		})
	}
}
