package webhooks

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

func listenerClaim(ns, name string, annotations map[string]string, storageClass *string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: storageClass,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}},
		},
	}
}

// TestClaimDefaulting creates claims through the API server and checks what
// got stored.
func TestClaimDefaulting(t *testing.T) {
	e := testenv.Require(t, env)
	ns := namespace(t, nil)
	nsWithDefault := namespace(t, map[string]string{v1alpha1.AnnotationDefaultClass: "external-unstable"})
	// The cache keeps only the operator's annotations of a namespace
	// (caches.TrimNamespace): among others' the default still counts.
	nsBusy := namespace(t, map[string]string{v1alpha1.AnnotationDefaultClass: "external-stable",
		"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"Namespace"}`, "team.example.com/contact": "a@example.com"})
	sc := ptr(v1alpha1.StorageClassName)
	for _, tc := range []struct {
		name      string
		claim     *corev1.PersistentVolumeClaim
		wantAnn   map[string]string
		wantClass string
	}{
		{"class defaulted from the cluster default", listenerClaim(ns, "a", nil, sc),
			map[string]string{v1alpha1.AnnotationListenerClass: "cluster-internal"}, v1alpha1.StorageClassName},
		{"class defaulted from the namespace", listenerClaim(nsWithDefault, "b", map[string]string{"team": "x"}, sc),
			map[string]string{"team": "x", v1alpha1.AnnotationListenerClass: "external-unstable"}, v1alpha1.StorageClassName},
		{"class defaulted from a namespace other tools annotate too", listenerClaim(nsBusy, "f", nil, sc),
			map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"}, v1alpha1.StorageClassName},
		{"storage class filled in", listenerClaim(ns, "c", map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"}, nil),
			map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"}, v1alpha1.StorageClassName},
		{"explicit class kept", listenerClaim(ns, "d", map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"}, sc),
			map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"}, v1alpha1.StorageClassName},
		{"other claims untouched", listenerClaim(ns, "e", nil, ptr("standard")), nil, "standard"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.Client.Create(t.Context(), tc.claim); err != nil {
				t.Fatalf("create: %v", err)
			}
			var got corev1.PersistentVolumeClaim
			if err := e.Client.Get(t.Context(), client.ObjectKeyFromObject(tc.claim), &got); err != nil {
				t.Fatal(err)
			}
			if !equalMaps(got.Annotations, tc.wantAnn) {
				t.Errorf("annotations = %v, want %v", got.Annotations, tc.wantAnn)
			}
			if got.Spec.StorageClassName == nil || *got.Spec.StorageClassName != tc.wantClass {
				t.Errorf("storageClassName = %v, want %s", got.Spec.StorageClassName, tc.wantClass)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// TestClaimDenials creates bad claims through the API server and checks the
// message a user sees.
func TestClaimDenials(t *testing.T) {
	e := testenv.Require(t, env)
	ns := namespace(t, nil)
	nsBadDefault := namespace(t, map[string]string{v1alpha1.AnnotationDefaultClass: "nope"})
	sc := ptr(v1alpha1.StorageClassName)
	big := listenerClaim(ns, "big", map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"}, sc)
	big.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("5Gi")
	for _, tc := range []struct {
		name  string
		claim *corev1.PersistentVolumeClaim
		want  string
	}{
		{"unknown class", listenerClaim(ns, "a", map[string]string{v1alpha1.AnnotationListenerClass: "foo"}, sc),
			`admission webhook "claims.validate.listeners.stackable.tech" denied the request: PersistentVolumeClaim "a" is invalid: metadata.annotations[listeners.stackable.tech/listener-class]: Invalid value: "foo": ListenerClass "foo" not found; available: cluster-internal, external-stable, external-unstable`},
		{"namespace default that does not exist", listenerClaim(nsBadDefault, "b", nil, sc),
			`PersistentVolumeClaim "b" is invalid: metadata.annotations[listeners.stackable.tech/listener-class]: Invalid value: "nope": ListenerClass "nope" not found; available: cluster-internal, external-stable, external-unstable`},
		{"both annotations", listenerClaim(ns, "d", map[string]string{v1alpha1.AnnotationListenerName: "web", v1alpha1.AnnotationListenerClass: "external-stable"}, sc),
			`metadata.annotations[listeners.stackable.tech/listener-name]: Invalid value: "web": set only one of listeners.stackable.tech/listener-class (a Listener for this claim) and listeners.stackable.tech/listener-name (an existing Listener shared by several claims)`},
		{"wrong storage class", listenerClaim(ns, "f", map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"}, ptr("standard")),
			`spec.storageClassName: Invalid value: "standard": listener claims use storageClassName "listeners.stackable.tech"; set it, or remove the listeners.stackable.tech/listener-class and listeners.stackable.tech/listener-name annotations`},
		{"too big", big,
			`spec.resources.requests.storage: Invalid value: "5Gi": a listener volume holds a few small files; request at most 1Gi ("1" is customary)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := e.Client.Create(t.Context(), tc.claim)
			if err == nil {
				t.Fatalf("created, want denial %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n got: %v\nwant: %s", err, tc.want)
			}
		})
	}
}

// TestClaimNoDefaultClass removes the cluster's default class for a moment:
// a claim that names nothing is then refused with what to add.
func TestClaimNoDefaultClass(t *testing.T) {
	e := testenv.Require(t, env)
	ns := namespace(t, nil)
	var lc v1alpha1.ListenerClass
	if err := e.Client.Get(t.Context(), client.ObjectKey{Name: "cluster-internal"}, &lc); err != nil {
		t.Fatal(err)
	}
	setDefault := func(v string) {
		t.Helper()
		patch := client.MergeFrom(lc.DeepCopy())
		lc.Annotations = map[string]string{v1alpha1.AnnotationDefaultClass: v}
		if err := e.Client.Patch(t.Context(), &lc, patch); err != nil {
			t.Fatal(err)
		}
		// Wait for the webhook's cache to see it.
		eventually(t, "cache sees the default class change", func() error {
			var got v1alpha1.ListenerClass
			if err := testLookup.cache.Get(t.Context(), client.ObjectKey{Name: lc.Name}, &got); err != nil {
				return err
			}
			if got.Annotations[v1alpha1.AnnotationDefaultClass] != v {
				return errorf("annotation is %q", got.Annotations[v1alpha1.AnnotationDefaultClass])
			}
			return nil
		})
	}
	setDefault("false")
	defer setDefault("true")
	for _, tc := range []struct {
		name string
		obj  client.Object
		want string
	}{
		{"claim", listenerClaim(ns, "a", nil, ptr(v1alpha1.StorageClassName)),
			`PersistentVolumeClaim "a" is invalid: metadata.annotations[listeners.stackable.tech/listener-class]: Required value: a listener claim needs listeners.stackable.tech/listener-class (one of: cluster-internal, external-stable, external-unstable) or listeners.stackable.tech/listener-name (an existing Listener), and no default ListenerClass is set (annotate one with listeners.stackable.tech/is-default-class: "true")`},
		{"opted-in StatefulSet", statefulSet(ns, "web", optIn, nil),
			`admission webhook "statefulsets.mutate.listeners.stackable.tech" denied the request: StatefulSet.apps "web" is invalid: metadata.annotations[listeners.stackable.tech/listener-class]: Required value: no default ListenerClass is set, so name one (available: cluster-internal, external-stable, external-unstable`},
		{"opted-in bare pod", pod(ns, "bare", optIn),
			`admission webhook "opted-in-pods.mutate.listeners.stackable.tech" denied the request: Pod "bare" is invalid: metadata.annotations[listeners.stackable.tech/listener-class]: Required value: no default ListenerClass is set, so name one (available: cluster-internal, external-stable, external-unstable`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := e.Client.Create(t.Context(), tc.obj)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n got: %v\nwant: %s", err, tc.want)
			}
		})
	}
}

// TestClaimClusterDefaultStorageClass: Kubernetes' DefaultStorageClass
// admission plugin writes the cluster's default StorageClass into a claim
// without one before webhooks run; a listener claim gets ours instead.
func TestClaimClusterDefaultStorageClass(t *testing.T) {
	e := testenv.Require(t, env)
	ns := namespace(t, nil)
	sc := &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: "standard", Annotations: map[string]string{defaultStorageClassAnn: "true"}},
		Provisioner: "example.com/disks",
	}
	if err := e.Client.Create(t.Context(), sc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.WithoutCancel(t.Context()), sc) })
	plain := listenerClaim(ns, "plain", nil, nil)
	if err := e.Client.Create(t.Context(), plain); err != nil {
		t.Fatal(err)
	}
	if plain.Spec.StorageClassName == nil || *plain.Spec.StorageClassName != "standard" {
		t.Fatalf("the API server did not default the storage class of a plain claim: %v", plain.Spec.StorageClassName)
	}
	c := listenerClaim(ns, "addr", map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"}, nil)
	if err := e.Client.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if c.Spec.StorageClassName == nil || *c.Spec.StorageClassName != v1alpha1.StorageClassName {
		t.Errorf("storageClassName = %v, want %s", c.Spec.StorageClassName, v1alpha1.StorageClassName)
	}
}

// TestClaimDryRun is what a user sees from `kubectl apply --dry-run=server`.
func TestClaimDryRun(t *testing.T) {
	e := testenv.Require(t, env)
	ns := namespace(t, nil)
	manifest := `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: web
  namespace: ` + ns + `
  annotations:
    listeners.stackable.tech/listener-class: foo
spec:
  storageClassName: listeners.stackable.tech
  accessModes: [ReadWriteMany]
  resources: {requests: {storage: "1"}}
`
	out, err := e.Kubectl(t.Context(), []byte(manifest), "apply", "--dry-run=server", "-f", "-")
	if err == nil {
		t.Fatalf("kubectl apply succeeded: %s", out)
	}
	want := `The PersistentVolumeClaim "web" is invalid: metadata.annotations[listeners.stackable.tech/listener-class]: Invalid value: "foo": ListenerClass "foo" not found; available: cluster-internal, external-stable, external-unstable`
	if !strings.Contains(out, want) {
		t.Errorf("kubectl output:\n%s\nwant it to contain:\n%s", out, want)
	}
	// A good claim passes the dry run with its class defaulted, and nothing
	// is stored.
	good := strings.Replace(manifest, "    listeners.stackable.tech/listener-class: foo\n", "    team: x\n", 1)
	out, err = e.Kubectl(t.Context(), []byte(good), "apply", "--dry-run=server", "-o", "jsonpath={.metadata.annotations}", "-f", "-")
	if err != nil || !strings.Contains(out, `"listeners.stackable.tech/listener-class":"cluster-internal"`) {
		t.Errorf("dry run of a good claim: %v: %s", err, out)
	}
	var list corev1.PersistentVolumeClaimList
	if err := e.Client.List(t.Context(), &list, client.InNamespace(ns)); err != nil || len(list.Items) != 0 {
		t.Errorf("dry run stored claims: %v %v", err, len(list.Items))
	}
}

// TestClaimMark: a listener claim gets the listener-volume label (the mark
// the operator's caches select claims by) when it is created, keeps it
// through an update that writes the whole object back without it or
// changes it, and a claim of another storage class never gets it.
func TestClaimMark(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := t.Context()
	ns := namespace(t, nil)
	sc := ptr(v1alpha1.StorageClassName)
	marked := func(name string) string {
		var got corev1.PersistentVolumeClaim
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
			t.Fatal(err)
		}
		v, ok := got.Labels[v1alpha1.LabelListenerVolume]
		if !ok {
			return "unmarked"
		}
		return v
	}
	withLabels := listenerClaim(ns, "with-labels", map[string]string{v1alpha1.AnnotationListenerClass: "cluster-internal"}, sc)
	withLabels.Labels = map[string]string{"app": "x"}
	for _, c := range []*corev1.PersistentVolumeClaim{
		listenerClaim(ns, "listener", map[string]string{v1alpha1.AnnotationListenerClass: "cluster-internal"}, sc),
		listenerClaim(ns, "by-annotation", map[string]string{v1alpha1.AnnotationListenerClass: "cluster-internal"}, nil),
		withLabels,
		listenerClaim(ns, "data", nil, ptr("standard")),
	} {
		if err := e.Client.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{"listener": "true", "by-annotation": "true", "with-labels": "true", "data": "unmarked"} {
		if got := marked(name); got != want {
			t.Errorf("created claim %s: mark %s, want %s", name, got, want)
		}
	}
	// kubectl replace of the manifest as written: no labels at all.
	var stored corev1.PersistentVolumeClaim
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "listener"}, &stored); err != nil {
		t.Fatal(err)
	}
	stored.Labels = nil
	stored.Annotations["team"] = "a"
	if err := e.Client.Update(ctx, &stored); err != nil {
		t.Fatalf("update without the mark: %v", err)
	}
	if got := marked("listener"); got != "true" {
		t.Errorf("after an update without it: mark %s, want true", got)
	}
	for _, p := range []string{
		`{"metadata":{"labels":{"listeners.stackable.tech/listener-volume":"false"}}}`,
		`{"metadata":{"labels":{"listeners.stackable.tech/listener-volume":null,"app":"y"}}}`,
	} {
		if err := e.Client.Patch(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "with-labels"}}, client.RawPatch("application/merge-patch+json", []byte(p))); err != nil {
			t.Fatalf("patch %s: %v", p, err)
		}
		if got := marked("with-labels"); got != "true" {
			t.Errorf("after %s: mark %s, want true", p, got)
		}
	}
}
