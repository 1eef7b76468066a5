package service

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/digest"
)

// TestDesired: the Service the reconciler applies is Service's, with the
// hostname it is given, and the hash of that; StampHash, called again when
// the Listener controller leaves a foreign selector out, hashes what is
// left without the old hash.
func TestDesired(t *testing.T) {
	class := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "lb"}, Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeLoadBalancer}}
	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-web"},
		Spec: v1alpha1.ListenerSpec{ClassName: ptr.To("lb"), Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 80}}}}
	hashOf := func(u *unstructured.Unstructured) string {
		c := u.DeepCopy()
		ann := c.GetAnnotations()
		delete(ann, v1alpha1.AnnotationServiceHash)
		c.SetAnnotations(ann)
		sum, err := digest.JSON(c.Object)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	for _, host := range []string{"", "web.shop.example.com"} {
		u, res, err := Desired(l, class, host, Carried{})
		if err != nil || len(res.Refused) > 0 {
			t.Fatalf("Desired(%q): %v, refused %v", host, err, res.Refused)
		}
		ann := u.GetAnnotations()
		if got, ok := ann[v1alpha1.AnnotationExternalDNSHostname]; got != host || ok != (host != "") {
			t.Errorf("Desired(%q): hostname annotation %q (set: %v)", host, got, ok)
		}
		plain, err := Service(l, class, Carried{})
		if err != nil {
			t.Fatal(err)
		}
		AddHostnameAnnotation(plain.Service, host)
		want, err := digest.JSON(plain.Service.Object)
		if err != nil {
			t.Fatal(err)
		}
		before := ann[v1alpha1.AnnotationServiceHash]
		if before != want {
			t.Errorf("Desired(%q): hash %q, want %q", host, before, want)
		}
		unstructured.RemoveNestedField(u.Object, "spec", "selector")
		if err := StampHash(u); err != nil || u.GetAnnotations()[v1alpha1.AnnotationServiceHash] != hashOf(u) || hashOf(u) == before {
			t.Errorf("StampHash after the selector went: %v, hash %q, want the new %q", err, u.GetAnnotations()[v1alpha1.AnnotationServiceHash], hashOf(u))
		}
	}
}
