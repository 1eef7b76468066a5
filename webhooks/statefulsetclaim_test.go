package webhooks

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestClaimAsksForAPodByName (issue 37, case 2): through the API server, a
// claim whose statefulset-claim-template annotation asks that its Listener
// select pod "<statefulset>-<ordinal>" by name is admitted only when that
// StatefulSet has the listener claim template the annotation names (its
// pod mounts the claim); a plain claim "x-db-0" is refused with what is
// wrong and the fix. The operator's Listener for an admitted claim is
// admitted; the same Listener of a claim no StatefulSet makes is not.
func TestClaimAsksForAPodByName(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := t.Context()
	ns := namespace(t, nil)
	c := e.Client
	db := statefulSet(ns, "db", optIn, map[string]string{v1alpha1.AnnotationListenerClass: "cluster-internal"})
	db.Spec.Replicas = ptr(int32(0))
	if err := c.Create(ctx, db); err != nil {
		t.Fatal(err)
	}
	sc := ptr(v1alpha1.StorageClassName)
	asks := func(tmpl string) map[string]string {
		return map[string]string{v1alpha1.AnnotationListenerClass: "cluster-internal", v1alpha1.AnnotationStatefulSetClaimTemplate: tmpl}
	}
	for _, tc := range []struct {
		name, claim, tmpl, want string
	}{
		{"no StatefulSet makes it", "x-web-0", "x", `metadata.annotations[listeners.stackable.tech/statefulset-claim-template]: Invalid value: "x": asks that the claim's own Listener select pod "web-0" by its statefulset.kubernetes.io/pod-name label, ` +
			`which only a claim that a StatefulSet makes from its listener claim template may ask (that pod mounts it); but StatefulSet "web" does not exist in this namespace, so pod "web-0" does not mount claim x-web-0. ` +
			`Remove the annotation (kubectl annotate pvc x-web-0 listeners.stackable.tech/statefulset-claim-template-): the Listener then selects the pods that mount the claim`},
		{"its StatefulSet has no such template", "x-db-0", "x", `but StatefulSet "db" has no listener claim template "x" annotated listeners.stackable.tech/statefulset-claim-template: x`},
		{"not a StatefulSet pod's name", "listener-db", "listener", `"db" is not the name of a StatefulSet's pod`},
		{"made from the template", "listener-db-0", "listener", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Create(ctx, listenerClaim(ns, tc.claim, asks(tc.tmpl), sc))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			mustDeny(t, err, tc.want)
		})
	}

	// The Listener the claim reconciler makes for the admitted claim.
	claim := &corev1.PersistentVolumeClaim{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "listener-db-0"}, claim); err != nil {
		t.Fatal(err)
	}
	own := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claim.Name,
		Annotations:     map[string]string{v1alpha1.AnnotationStatefulSetPod: "db-0"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: claim.Name, UID: claim.UID, Controller: ptr(true)}}},
		Spec: v1alpha1.ListenerSpec{ClassName: ptr("cluster-internal")}}
	eventually(t, "the operator's Listener admitted once the claim is in the webhooks' cache", func() error {
		return c.Create(ctx, own.DeepCopy(), client.DryRunAll)
	})
	// Once the StatefulSet is gone, nothing makes pod db-0 mount it.
	if err := c.Delete(ctx, db); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the same Listener refused without its StatefulSet", func() error {
		err := c.Create(ctx, own.DeepCopy(), client.DryRunAll)
		want := `only the operator sets this annotation, on the Listener it makes for a claim that a StatefulSet made from its listener claim template; it would select pod "db-0" by name whether or not it mounts a listener volume (its claim listener-db-0 asks for that pod, but StatefulSet "db" does not exist in this namespace)`
		if err == nil || !strings.Contains(err.Error(), want) {
			return errorf("got %v, want %s", err, want)
		}
		return nil
	})
}
