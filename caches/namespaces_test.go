package caches

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/ordinary"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestNamespaceDefaults: against a real API server, the default class of
// a namespace that names one (among other tools' annotations and kubectl's
// copy), none for one that does not, and "not seen" for a name no
// namespace has; annotations added and removed later are followed by the
// watch.
func TestNamespaceDefaults(t *testing.T) {
	e := testenv.Require(t, env)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	suffix := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
	named := ordinary.Namespace(1)
	named.Name = "defaults-named-" + suffix
	named.Annotations[v1alpha1.AnnotationDefaultClass] = "external-stable"
	plain := ordinary.Namespace(2)
	plain.Name = "defaults-plain-" + suffix
	for _, ns := range []*corev1.Namespace{named, plain} {
		if err := e.Client.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	d, err := NewNamespaceDefaults(e.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = d.Start(ctx) }()
	expect := func(ns, wantClass string, wantSeen bool) func() error {
		return func() error {
			class, seen, err := d.DefaultClass(ctx, ns)
			if err != nil || class != wantClass || seen != wantSeen {
				return fmt.Errorf("DefaultClass(%s) = %q, seen %v, %v; want %q, seen %v", ns, class, seen, err, wantClass, wantSeen)
			}
			return nil
		}
	}
	for _, check := range []func() error{
		expect(named.Name, "external-stable", true),
		expect(plain.Name, "", true),
		expect("no-such-namespace-"+suffix, "", false),
	} {
		if err := check(); err != nil {
			t.Error(err)
		}
	}

	annotate := func(ns *corev1.Namespace, class string) {
		t.Helper()
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationDefaultClass, class)
		if class == "" {
			patch = fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, v1alpha1.AnnotationDefaultClass)
		}
		if err := e.Client.Patch(ctx, ns, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
			t.Fatal(err)
		}
	}
	annotate(plain, "external-unstable")
	annotate(named, "")
	testenv.Eventually(t, 30*time.Second, "a default class added is seen", expect(plain.Name, "external-unstable", true))
	testenv.Eventually(t, 30*time.Second, "a default class removed is forgotten", expect(named.Name, "", true))
	created := ordinary.Namespace(3)
	created.Name = "defaults-created-" + suffix
	created.Annotations[v1alpha1.AnnotationDefaultClass] = "cluster-internal"
	if err := e.Client.Create(ctx, created); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "a namespace created later is seen", expect(created.Name, "cluster-internal", true))
}

// TestNamespaceDefaultsBeforeTheList: until the first list is held, a
// question waits and, its context ending, is answered with an error, not
// with "no default".
func TestNamespaceDefaultsBeforeTheList(t *testing.T) {
	d := newNamespaceDefaults(nil)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := d.DefaultClass(ctx, "ns"); err == nil {
		t.Fatal("answered before the namespaces were listed")
	}
}

// TestNamespaceStore: what the reflector writes. A deleted namespace (also
// when the watch missed the deletion and a relist drops it, or when it
// comes as a tombstone) is forgotten; a relist replaces everything held.
func TestNamespaceStore(t *testing.T) {
	ns := func(name, class string) *metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if class != "" {
			m.Annotations = map[string]string{v1alpha1.AnnotationDefaultClass: class, annotationLastApplied: "{}"}
		}
		return m
	}
	d := newNamespaceDefaults(nil)
	s := namespaceStore{d}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Replace([]any{ns("a", "c1"), ns("b", ""), ns("c", "c3")}, "1"))
	must(s.Add(ns("d", "c4")))
	must(s.Update(ns("a", "")))
	must(s.Delete(ns("c", "c3")))
	must(s.Delete(cache.DeletedFinalStateUnknown{Key: "d", Obj: ns("d", "c4")}))
	for _, tc := range []struct {
		ns    string
		class string
		seen  bool
	}{{"a", "", true}, {"b", "", true}, {"c", "", false}, {"d", "", false}, {"e", "", false}} {
		class, seen, err := d.DefaultClass(t.Context(), tc.ns)
		if err != nil || class != tc.class || seen != tc.seen {
			t.Errorf("after the events, DefaultClass(%s) = %q, seen %v, %v; want %q, seen %v", tc.ns, class, seen, err, tc.class, tc.seen)
		}
	}
	must(s.Replace([]any{ns("e", "c5")}, "2"))
	for _, tc := range []struct {
		ns    string
		class string
		seen  bool
	}{{"a", "", false}, {"b", "", false}, {"e", "c5", true}} {
		class, seen, err := d.DefaultClass(t.Context(), tc.ns)
		if err != nil || class != tc.class || seen != tc.seen {
			t.Errorf("after a relist, DefaultClass(%s) = %q, seen %v, %v; want %q, seen %v", tc.ns, class, seen, err, tc.class, tc.seen)
		}
	}
	if err := s.Add("not an object"); err == nil {
		t.Error("a watch event that is not an object was accepted")
	}
	if len(d.classes) != 1 || len(d.seen) != 1 {
		t.Errorf("holds %d classes and %d names after the relist, want 1 and 1", len(d.classes), len(d.seen))
	}
}
