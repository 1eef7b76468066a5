package caches

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestClaimFields: ClaimFields gives what the pod webhook reads of a held
// claim, and a write to what it gave does not reach the held claim.
func TestClaimFields(t *testing.T) {
	sc := "listeners.stackable.tech"
	held := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u", Labels: map[string]string{"l": "v"}, Annotations: map[string]string{"a": "b"}},
		Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: &sc, VolumeName: "pv", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}},
	}
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	if err := indexer.Add(held); err != nil {
		t.Fatal(err)
	}
	x := &KeyIndex{indexer: indexer}
	var c corev1.PersistentVolumeClaim
	if !x.ClaimFields(types.NamespacedName{Namespace: "ns", Name: "c"}, &c) {
		t.Fatal("the held claim was not found")
	}
	want := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u", Annotations: map[string]string{"a": "b"}},
		Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: &sc, VolumeName: "pv"},
	}
	if c.Name != want.Name || c.Namespace != want.Namespace || c.UID != want.UID || c.Annotations["a"] != "b" || len(c.Annotations) != 1 ||
		*c.Spec.StorageClassName != sc || c.Spec.VolumeName != "pv" || c.Labels != nil || c.Spec.AccessModes != nil {
		t.Errorf("ClaimFields gave %+v, want %+v", c, want)
	}
	c.Annotations["a"] = "changed"
	*c.Spec.StorageClassName = "changed"
	if held.Annotations["a"] != "b" || *held.Spec.StorageClassName != "listeners.stackable.tech" {
		t.Errorf("a write to what ClaimFields gave reached the held claim: %+v", held)
	}
	if x.ClaimFields(types.NamespacedName{Namespace: "ns", Name: "other"}, &c) || x.Holds(types.NamespacedName{Namespace: "other", Name: "c"}) {
		t.Error("a claim the cache does not hold was found")
	}
}
