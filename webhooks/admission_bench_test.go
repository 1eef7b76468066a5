package webhooks

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// BenchmarkPodAdmission is the pod webhook's handler on the admission of a
// StatefulSet replica (a listener claim and a data claim of another
// class), with the lookup the webhooks run with (newLookup: live reads
// bounded, ordinary claims remembered), on claims and volumes as the
// webhooks and the cluster make them:
//   - steady/unpinned: the listener claim marked by the claim webhook, not
//     bound yet; the data claim, which no cache holds, remembered as
//     ordinary after its first live read;
//   - steady/pinned: the same, the listener claim bound to a volume of a
//     pinned class (marked by the claim reconciler) that pins the pod;
//   - live read: a listener claim without the mark (made while the
//     webhooks were down, or before they marked claims), which the cache
//     does not hold, read live at every admission (the live reads' rate
//     limit off: it would turn most of them into "no claim yet").
//
// Before timing, each case checks that it is on its path: the patch pins
// the pod or not, and one admission makes as many live reads as the path
// does (none, or one); after timing, that every admission did.
func BenchmarkPodAdmission(b *testing.B) {
	testenv.Require(b, env)
	ns := namespace(b, nil)
	statefulSetPodClaims(b, ns)
	boundPinnedClaim(b, ns, "listener-web-0-pinned", "node-1")
	unmarked := unmarkedClaims(b)
	object := strings.ReplaceAll(statefulSetPodJSON, "NS", ns)
	for _, bc := range []struct {
		name      string
		namespace string
		object    string
		pinned    bool
		live      int64 // live reads per admission
		unbounded bool  // no rate limit on live reads
	}{
		{name: "steady/unpinned", namespace: ns, object: object},
		{name: "steady/pinned", namespace: ns, object: strings.Replace(object, `"claimName": "listener-web-0"`, `"claimName": "listener-web-0-pinned"`, 1), pinned: true},
		{name: "live read", namespace: unmarked, object: strings.ReplaceAll(statefulSetPodJSON, "NS", unmarked), live: 1, unbounded: true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l, live := countedLookup()
			if bc.unbounded {
				l.reads = nil
			}
			h := &podMutator{lookup: l, validator: &workloadValidator{lookup: l}}
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: "1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Operation: admissionv1.Create,
				Namespace: bc.namespace, Name: "web-0", Object: runtime.RawExtension{Raw: []byte(bc.object)},
			}}
			// Until the caches hold what the path reads, and the data claim
			// is remembered.
			eventually(b, "on the path", func() error { return onPath(b, h, req, live, bc.pinned, bc.live) })
			b.ReportAllocs()
			reads0 := live.reads.Load()
			cpu0 := processCPU(b, os.Getpid())
			for b.Loop() {
				if resp := h.Handle(b.Context(), req); len(patchJSON(b, resp)) == 0 {
					b.Fatal("no patch")
				}
			}
			b.ReportMetric(float64((processCPU(b, os.Getpid())-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			reads := float64(live.reads.Load()-reads0) / float64(b.N)
			b.ReportMetric(reads, "live-reads/op")
			if reads != float64(bc.live) {
				b.Fatalf("%.2f live reads per admission, want %d: the path changed while timed", reads, bc.live)
			}
		})
	}
}

// onPath admits req once and says how it is not on the path named: pinned
// (the patch requires node-1) or not, with live reads per admission.
func onPath(b *testing.B, h *podMutator, req admission.Request, live *liveCounter, pinned bool, reads int64) error {
	before := live.reads.Load()
	resp := h.Handle(b.Context(), req)
	got := live.reads.Load() - before
	switch patch := string(patchJSON(b, resp)); {
	case !resp.Allowed:
		return errorf("denied: %v", resp.Result)
	case !strings.Contains(patch, `"/metadata/labels`):
		return errorf("the pod is not labelled for its Listener: %s", patch)
	case strings.Contains(patch, "node-1") != pinned:
		return errorf("pinned %t, want %t: %s", !pinned, pinned, patch)
	case got != reads:
		return errorf("%d live reads per admission, want %d", got, reads)
	}
	return nil
}

// countedLookup is the handlers' lookup (testLookup: its cache and every
// index, so that a benchmark takes production's path) with memories and
// bounds of its own, reading live through a counter.
func countedLookup() (*lookup, *liveCounter) {
	live := &liveCounter{Reader: testLookup.live}
	fresh := newLookup(testLookup.cache, live, nil)
	l := *testLookup
	l.live, l.reads, l.ordinary = live, fresh.reads, fresh.ordinary
	return &l, live
}

// liveCounter counts the reads it passes to Reader.
type liveCounter struct {
	client.Reader
	reads atomic.Int64
}

func (c *liveCounter) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.reads.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *liveCounter) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.reads.Add(1)
	return c.Reader.List(ctx, list, opts...)
}

// boundPinnedClaim makes the listener claim name in ns (through the API
// server: the claim webhook marks it) bound to a volume pinned to node, as
// the provisioner and the claim reconciler make it: of this driver, marked,
// labelled with its Listener, its claim reference set. It waits until the
// webhooks' cache holds both.
func boundPinnedClaim(b *testing.B, ns, name, node string) {
	e := testenv.Require(b, env)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name,
			Labels: map[string]string{v1alpha1.LabelListenerVolume: "true", v1alpha1.LabelVolumeListener: name}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName:       v1alpha1.StorageClassName,
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: name},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: v1alpha1.DriverName, VolumeHandle: ns + "/" + name}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1alpha1.TopologyKeyHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}
	if err := e.Client.Create(b.Context(), pv); err != nil {
		b.Fatal(err)
	}
	c := listenerClaim(ns, name, map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"}, ptr(v1alpha1.StorageClassName))
	c.Spec.VolumeName = pv.Name
	if err := e.Client.Create(b.Context(), c); err != nil {
		b.Fatal(err)
	}
	if c.Labels[v1alpha1.LabelListenerVolume] != "true" {
		b.Fatalf("the claim webhook did not mark claim %s: labels %v", name, c.Labels)
	}
	eventually(b, "the claim and its volume in the webhooks' cache", func() error {
		if err := testLookup.cache.Get(b.Context(), client.ObjectKeyFromObject(c), &corev1.PersistentVolumeClaim{}); err != nil {
			return err
		}
		return testLookup.cache.Get(b.Context(), client.ObjectKeyFromObject(pv), &corev1.PersistentVolume{})
	})
}

// unmarkedClaims makes the StatefulSet replica's claims, the listener
// claim without the mark, as a claim made while the webhooks were down is:
// in the operator's own namespace, which the claim webhook is never called
// for (its namespaceSelector), and returns that namespace.
func unmarkedClaims(b *testing.B) string {
	e := testenv.Require(b, env)
	const ns = "listener-operator"
	if err := e.Client.Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	for _, c := range []*corev1.PersistentVolumeClaim{
		listenerClaim(ns, "listener-web-0", map[string]string{v1alpha1.AnnotationListenerClass: "external-stable"}, ptr(v1alpha1.StorageClassName)),
		listenerClaim(ns, "data-web-0", nil, ptr("standard")),
	} {
		err := e.Client.Create(b.Context(), c)
		switch {
		case apierrors.IsAlreadyExists(err):
			continue
		case err != nil:
			b.Fatal(err)
		case c.Labels[v1alpha1.LabelListenerVolume] != "":
			b.Fatalf("claim %s/%s was marked: %v", ns, c.Name, c.Labels)
		}
	}
	return ns
}
