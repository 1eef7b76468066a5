package webhooks

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestListenerNamesAndStatefulSetPod: through the API server, a Listener (or
// a claim's own Listener) named exactly like another's shortened Service
// name is refused, and so is the statefulset-pod annotation on a Listener
// the operator did not make — at creation and on an update that only adds
// it (issue 20).
func TestListenerNamesAndStatefulSetPod(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := t.Context()
	ns := namespace(t, nil)
	c := e.Client
	long := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web.shop"}, Spec: v1alpha1.ListenerSpec{ClassName: ptr("cluster-internal")}}
	if err := c.Create(ctx, long); err != nil {
		t.Fatal(err)
	}
	derived := names.ServiceName(long.Name)
	eventually(t, "Listener web.shop in the webhooks' cache", func() error {
		return testLookup.cache.Get(ctx, client.ObjectKeyFromObject(long), &v1alpha1.Listener{})
	})

	twin := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: derived}, Spec: v1alpha1.ListenerSpec{ClassName: ptr("cluster-internal")}}
	mustDeny(t, c.Create(ctx, twin), `metadata.name: Invalid value: "`+derived+`": Listener "web.shop" already has the Service name "`+derived+`", which this name would get too; choose another name`)
	claim := listenerClaim(ns, derived, map[string]string{v1alpha1.AnnotationListenerClass: "cluster-internal"}, ptr(v1alpha1.StorageClassName))
	mustDeny(t, c.Create(ctx, claim), `Listener "web.shop" already has the Service name`)

	// A tenant's Listener selecting a pod by name.
	byName := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "by-name", Annotations: map[string]string{v1alpha1.AnnotationStatefulSetPod: "db-0"}},
		Spec: v1alpha1.ListenerSpec{ClassName: ptr("cluster-internal")}}
	mustDeny(t, c.Create(ctx, byName), `metadata.annotations[listeners.stackable.tech/statefulset-pod]: Forbidden: only the operator sets this annotation`)
	byName.Annotations = nil
	if err := c.Create(ctx, byName); err != nil {
		t.Fatal(err)
	}
	byName.Annotations = map[string]string{v1alpha1.AnnotationStatefulSetPod: "db-0"}
	mustDeny(t, c.Update(ctx, byName), `only the operator sets this annotation`)
}

func mustDeny(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want it to contain %q", err, want)
	}
}

// TestClassInUseByTheServiceMadeFromIt: a Listener whose spec names
// another (missing) class still uses the class its Service was made from
// (status.className): deleting that class is refused, since the Service
// stays as it made it (issue 20, case 3, "class not found").
func TestClassInUseByTheServiceMadeFromIt(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := t.Context()
	ns := namespace(t, nil)
	lc := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "made-from-" + ns}, Spec: v1alpha1.ListenerClassSpec{ServiceType: "ClusterIP"}}
	if err := e.Client.Create(ctx, lc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.WithoutCancel(ctx), lc) })
	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "moved"}, Spec: v1alpha1.ListenerSpec{ClassName: ptr("cluster-internal")}}
	if err := e.Client.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	l.Status.ClassName = lc.Name
	if err := e.Client.Status().Update(ctx, l); err != nil {
		t.Fatal(err)
	}
	eventually(t, "deletion of the class the Service was made from refused", func() error {
		err := e.Client.Delete(ctx, lc, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "Forbidden") {
			return errorf("got %v", err)
		}
		return nil
	})
}
