package caches

import (
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestRepeatedStringsAreHeldOnce: two objects decoded apart hold the same
// namespace, label key and owner kind in one copy after their transforms,
// and nothing they say changes.
func TestRepeatedStringsAreHeldOnce(t *testing.T) {
	mk := func(name string) *v1alpha1.Listener {
		// Fresh copies of every string, as a decoder makes them.
		s := func(v string) string { return string([]byte(v)) }
		return &v1alpha1.Listener{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s("team-a"),
				Labels:          map[string]string{s("app.kubernetes.io/name"): s("kafka"), s("flag"): s("true")},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: s("v1"), Kind: s("PersistentVolumeClaim"), Name: name}}},
			Status: v1alpha1.ListenerStatus{Conditions: []metav1.Condition{{Type: s("Ready"), Status: metav1.ConditionStatus(s("True")), Reason: s("Ready"), Message: "m"}}},
		}
	}
	one, two := mk("a"), mk("b")
	for _, o := range []*v1alpha1.Listener{one, two} {
		if _, err := Compact(o); err != nil {
			t.Fatal(err)
		}
	}
	same := func(what, x, y string) {
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q are two copies", what, x, y)
		}
	}
	same("namespace", one.Namespace, two.Namespace)
	same("owner kind", one.OwnerReferences[0].Kind, two.OwnerReferences[0].Kind)
	same("condition type", one.Status.Conditions[0].Type, two.Status.Conditions[0].Type)
	same("common label value", one.Labels["flag"], two.Labels["flag"])
	for k := range one.Labels {
		for k2 := range two.Labels {
			if k == k2 {
				same("label key", k, k2)
			}
		}
	}
	if one.Labels["app.kubernetes.io/name"] != "kafka" || one.Namespace != "team-a" || one.Name != "a" || two.Name != "b" {
		t.Errorf("a transform changed what an object says: %+v", one.ObjectMeta)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Labels: map[string]string{v1alpha1.LabelListenerVolume: "true"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}}}
	out, err := TrimPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	again, err := TrimPod(out)
	if err != nil || again.(*corev1.Pod).Spec.NodeName != "node-1" || again.(*corev1.Pod).Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "c" {
		t.Errorf("trimming a trimmed pod again: %+v, %v", again, err)
	}
}
